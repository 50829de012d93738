"""Bad input to the py: spec and to capture: one clear line (IronlawError), exit 2 from the CLI."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from ironlaw import IronlawError  # noqa: E402
from ironlaw.models import workloads


def resolve(spec: str, **kw):
    return workloads.resolve(workloads.Request(spec, **kw))


@pytest.fixture
def pyfile(tmp_path):
    def write(body: str):
        p = tmp_path / "model.py"
        p.write_text("import torch\n" + body)
        return p
    return write


@pytest.mark.parametrize("body,call,words", [
    ("", "nope", "no function 'nope'"),
    ("def mlp():\n    return torch.nn.Linear(2, 2), (torch.randn(1, 2),)\n", "mpl", "did you mean: mlp"),
    ("raise RuntimeError('broken import')\n", "f", "importing .* raised RuntimeError: broken import"),
    ("def f():\n    raise ValueError('no model today')\n", "f", "factory raised ValueError: no model today"),
    ("def f():\n    return torch.nn.Linear(2, 2)\n", "f", r"must return \(module, args\)"),
    ("def f():\n    return 3, (1,)\n", "f", "must be a torch.nn.Module"),
    ("def f():\n    return torch.nn.Linear(2, 2), 5\n", "f", "args must be a tuple"),
    ("def f():\n    return torch.nn.Linear(2, 2), (torch.randn(1, 3),)\n", "f", "forward failed on fake tensors"),
])
def test_bad_py_specs_raise_one_line(pyfile, body, call, words):
    p = pyfile(body)
    with pytest.raises(IronlawError, match=words) as e:
        resolve(f"py:{p}:{call}")
    assert "\n" not in str(e.value)


def test_missing_file_and_missing_factory_name(tmp_path):
    with pytest.raises(IronlawError, match="no such file"):
        resolve(f"py:{tmp_path}/absent.py:f")
    with pytest.raises(IronlawError, match="expected py:path/to/file.py:factory"):
        resolve(f"py:{tmp_path}/absent.py")


def test_data_dependent_forward_fails_clearly_under_fake_tensors(pyfile):
    p = pyfile("class M(torch.nn.Module):\n"
               "    def forward(self, x):\n"
               "        return x * 2 if x.sum().item() > 0 else x\n"
               "def f():\n    return M(), (torch.randn(2),)\n")
    with pytest.raises(IronlawError, match="forward failed on fake tensors"):
        resolve(f"py:{p}:f")


def test_sweeps_and_decode_are_refused_for_captured_models():
    import numpy as np
    with pytest.raises(IronlawError, match="one configuration"):
        resolve("py:examples/mlp.py:mlp", batch=np.array([1, 2]))
    with pytest.raises(IronlawError, match="no phase 'decode'"):
        resolve("py:examples/mlp.py:mlp", phase="decode")


def test_torchvision_and_timm_say_why_they_are_unavailable():
    for name in ("torchvision", "timm"):
        try:
            __import__(name)
        except Exception:
            with pytest.raises(IronlawError, match=f"{name} does not import here"):
                resolve(f"{name}:resnet50")


def test_cli_exit_2_with_one_line(cli, pyfile):
    p = pyfile("def f():\n    raise ValueError('no model today')\n")
    r = cli("analyze", f"py:{p}:f", "--on", "h100")
    assert r.rc == 2
    assert r.err.strip().count("\n") == 0 and "no model today" in r.err
