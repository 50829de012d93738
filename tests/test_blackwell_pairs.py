"""benchmarks/trtllm_blackwell.py's floor on a GB200/B200 pair: the least max |error| any prediction at the
predicted ratio reaches on the two cells."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
import trtllm_blackwell  # noqa: E402


def _errors(scale: float, published: tuple, predicted: tuple) -> tuple:
    return tuple(100.0 * (scale * q / p - 1.0) for p, q in zip(published, predicted))


def test_the_floor_is_the_least_max_error_over_every_common_scale():
    """Published B200 25,828 and GB200 17,481 tok/s (ratio 0.68), predicted equal: scanning the common scale of
    the two predictions, the smallest larger |error| of the pair is the floor, reached where the two errors are
    equal and opposite; a pair published at the predicted ratio has floor 0."""
    published, predicted = (25828.0, 17481.0), (16832.0, 16832.0)
    p, q = published[1] / published[0], predicted[1] / predicted[0]
    f = trtllm_blackwell.floor(p, q)
    scan = min(max(abs(e) for e in _errors(s / 1000.0, published, predicted)) for s in range(500, 3000))
    assert f == pytest.approx(scan, abs=0.1)
    assert f == pytest.approx(19.1, abs=0.2)
    assert trtllm_blackwell.floor(1.07, 1.07) == 0.0


def test_floors_lists_only_the_pairs_past_the_bound():
    rows = [{"model": "m", "isl": 1000, "osl": 1000, "gpu": g, "published": pub, "predicted": pred}
            for g, pub, pred in (("b200", 25828.0, 16832.0), ("gb200", 17481.0, 16832.0))]
    rows += [{"model": "d", "isl": 128, "osl": 128, "gpu": g, "published": pub, "predicted": pred}
             for g, pub, pred in (("b200", 11147.0, 10776.0), ("gb200", 12189.0, 11753.0))]
    out = trtllm_blackwell.floors(rows)
    assert [(m, c) for m, c, *_ in out] == [("m", "1000/1000")]


def _cell(model: str, gpu: str, isl: int, osl: int) -> dict:
    h100 = trtllm_blackwell.h100
    c = next(c for c in h100.cells(trtllm_blackwell.CSV)
             if (c["model"], c["gpu"], c["isl"], c["osl"]) == (model, gpu, isl, osl))
    return {**c, "spec": h100.spec_for(model)}


def test_run_shares_say_where_a_cell_goes():
    """``--tail``'s columns: B200 Qwen3-30B-A3B 1000/1000 carries prompts in every step (eager share 1) and its
    host's launches outlast the device in part of it (host share in (0, 1)); B200 Llama 4 Maverick 128/128 runs
    its 3,750 requests a rank as one wave, whose ramp is every eager step of it (ramp share = eager share) and
    whose decode-only steps are CUDA graphs (eager share below 1)."""
    h100 = trtllm_blackwell.h100
    h100.use_release(h100.CATALOG)
    c = _cell("qwen3-30b-a3b", "b200", 1000, 1000)
    s = trtllm_blackwell.run_shares(h100.predict(c, "b200"))
    assert s["eager_share"] == pytest.approx(1.0)
    assert 0.0 < s["host_share"] < 1.0 and s["ramp_share"] == 0.0
    c = _cell("llama4-maverick", "b200", 128, 128)
    s = trtllm_blackwell.run_shares(h100.predict(c, "b200"))
    assert 0.0 < s["ramp_share"] < 1.0
    assert s["ramp_share"] == pytest.approx(s["eager_share"])
