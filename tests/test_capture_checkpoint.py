"""Why capture replaces one private name of torch.utils.checkpoint (``recorder.plain_checkpoints``): what the public
route, a ``TorchDispatchMode`` recorder alone (the way ``torch.utils.flop_counter.FlopCounterMode`` counts), sees of
a checkpointed region, on the torch installed.

- Reentrant: ``checkpoint`` calls ``CheckpointFunction.apply``, looked up at call time; CheckpointFunction is public
  (``torch.utils.checkpoint.__all__``), and replaced. Left alone, a region whose input needs no gradient (a model's
  first layer) runs without autograd and its weights get no gradient: the capture's backward loses its ops.
- Non-reentrant: ``checkpoint`` calls the private ``_checkpoint_without_reentrant_generator`` directly; no public
  name or option of torch reaches it from outside the model's own call (``context_fn`` is the caller's argument, and
  the region's start and end are marked only by a private saved-tensors hook). Left alone, the region recomputes
  during the backward: on fake tensors the recompute runs after ``torch.func.functional_call`` has returned, on the
  module's own parameters, and fails; on real tensors its forward ops are recorded a second time, in the backward.
"""
import contextlib

import pytest

torch = pytest.importorskip("torch")

from ironlaw.models.capture import recorder  # noqa: E402


class Net(torch.nn.Module):
    def __init__(self, how):
        super().__init__()
        self.how, self.a, self.b = how, torch.nn.Linear(64, 64), torch.nn.Linear(64, 64)

    def forward(self, x):
        f = lambda t: torch.relu(self.a(t))                   # noqa: E731
        if self.how is not None:
            from torch.utils.checkpoint import checkpoint
            x = checkpoint(f, x, use_reentrant=self.how)
        else:
            x = f(x)
        return self.b(x)


def _capture(how, real: bool, public: bool, monkeypatch):
    """The records of one training step of ``Net(how)``: through ``plain_checkpoints`` or, with ``public``, the
    recorder alone."""
    if public:
        monkeypatch.setattr(recorder, "plain_checkpoints", lambda rec: contextlib.nullcontext())
    torch.manual_seed(0)
    cap = recorder.capture(Net(how), (torch.randn(2, 8, 64),), real=real, phase="train", device="cpu")
    monkeypatch.undo()
    return cap


def _ops(cap, phase=None, work=False):
    """The op names recorded (in ``phase``; with ``work``, only the ops that run a kernel)."""
    return [r.name for r in cap.records if (phase is None or r.phase == phase) and not (work and r.no_work)]


def test_the_names_replaced_are_one_public_one_private():
    import torch.utils.checkpoint as ck
    assert "CheckpointFunction" in ck.__all__
    assert "_checkpoint_without_reentrant_generator" not in ck.__all__
    assert hasattr(ck, "_checkpoint_without_reentrant_generator")      # what plain_checkpoints replaces, present


@pytest.mark.parametrize("how", [False, True])
def test_replaced_a_region_captures_as_the_plain_forward(how, monkeypatch):
    plain = _capture(None, real=False, public=False, monkeypatch=monkeypatch)
    got = _capture(how, real=False, public=False, monkeypatch=monkeypatch)
    assert _ops(got) == _ops(plain) and got.footprint == plain.footprint
    assert [r.phase for r in got.records] == [r.phase for r in plain.records]


def test_public_route_nonreentrant_on_fake_tensors_recomputes_on_the_module_parameters(monkeypatch):
    from ironlaw.core.errors import IronlawError
    with pytest.raises(IronlawError, match="convert all Tensors to FakeTensors"):
        _capture(False, real=False, public=True, monkeypatch=monkeypatch)


def test_public_route_nonreentrant_on_real_tensors_records_the_recompute_in_the_backward(monkeypatch):
    """The forward's kernels are the plain forward's (its saved-output detach is gone: the region saves nothing);
    the backward runs the region's forward kernels once more, recorded as backward ops, with nothing public to tell
    them from the backward's own."""
    from collections import Counter
    plain = _capture(None, real=True, public=False, monkeypatch=monkeypatch)
    got = _capture(False, real=True, public=True, monkeypatch=monkeypatch)
    assert _ops(got, "forward", work=True) == _ops(plain, "forward", work=True)
    assert _ops(got, "forward") != _ops(plain, "forward")
    extra = Counter(_ops(got, "backward", work=True)) - Counter(_ops(plain, "backward", work=True))
    assert extra == Counter({"aten::addmm": 1, "aten::relu": 1})     # the region's forward, once more


def test_public_route_reentrant_loses_the_region_backward(monkeypatch):
    plain = _capture(None, real=False, public=False, monkeypatch=monkeypatch)
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad"):
        got = _capture(True, real=False, public=True, monkeypatch=monkeypatch)
    assert _ops(got, "backward").count("aten::mm") < _ops(plain, "backward").count("aten::mm")
    assert got.footprint["gradients"] < plain.footprint["gradients"]
