"""torchvision: and timm: capture one of the library's models on a batch × 3 × size² input (neither library is a
dependency: stand-in modules with the same entry points play them here)."""
from __future__ import annotations

import sys
import types

import pytest

torch = pytest.importorskip("torch")

from ironlaw import IronlawError  # noqa: E402
from ironlaw.models import workloads  # noqa: E402


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8, 10)
        self.default_cfg = {"input_size": (3, 96, 96)}         # timm's models state their own input size

    def forward(self, x):
        return self.fc(torch.relu(self.conv(x)).mean(dim=(2, 3)))


@pytest.fixture
def libraries(monkeypatch):
    tv = types.ModuleType("torchvision")
    tv.models = types.SimpleNamespace(list_models=lambda: ["tiny"], get_model=lambda name, weights=None: Net())
    timm = types.ModuleType("timm")
    timm.list_models, timm.create_model = (lambda: ["tiny"]), (lambda name, pretrained=False: Net())
    monkeypatch.setitem(sys.modules, "torchvision", tv)
    monkeypatch.setitem(sys.modules, "timm", timm)


def resolve(spec: str, **kw):
    return workloads.resolve(workloads.Request(spec, **kw))


def test_image_size_is_the_library_default_unless_given(libraries):
    """torchvision's at 224, timm's at its model's default_cfg input size; --opt image_size over either."""
    assert resolve("torchvision:tiny", batch=2).meta["image_size"] == 224
    assert resolve("timm:tiny", batch=2).meta["image_size"] == 96
    for lib in ("torchvision", "timm"):
        g = resolve(f"{lib}:tiny", batch=2, options={"image_size": "64"})
        assert g.meta["image_size"] == 64 and g.meta["batch"] == 2 and g.meta["spec"] == f"{lib}:tiny"
        conv = next(op for op in g.ops if op.kind == "conv")
        assert conv.flops == pytest.approx(2 * 2 * 64 * 64 * 8 * 3 * 9)      # 2 · batch · H · W · C_out · C_in · k²


def test_an_unknown_model_is_refused_naming_its_library(libraries):
    for lib in ("torchvision", "timm"):
        with pytest.raises(IronlawError, match=f"unknown {lib} model 'nope'; known: tiny"):
            resolve(f"{lib}:nope")


@pytest.mark.parametrize("size", ["abc", "0", "-3", "6.5", True])
def test_an_image_size_that_is_not_a_whole_number_of_pixels_is_refused_in_one_line(libraries, size):
    for lib in ("torchvision", "timm"):
        with pytest.raises(IronlawError, match=f"{lib}:tiny: option image_size must be a whole number of pixels "
                                               f"from 1 up .*got {size!r}"):
            resolve(f"{lib}:tiny", options={"image_size": size})


def test_a_bad_image_size_from_the_command_line_exits_2(libraries):
    from conftest import run_cli
    r = run_cli("analyze", "torchvision:tiny", "--on", "h100", "--opt", "image_size=abc")
    assert r.rc == 2 and "option image_size must be a whole number" in r.err
    assert len(r.err.strip().splitlines()) == 1 and "Traceback" not in r.err
