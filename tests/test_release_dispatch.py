"""TensorRT-LLM 1.0's decode dispatch as aiconfigurator 0.8.0's 1.0-line tables time it: on H100 and H200 a
grouped-query decode that XQA would launch on fewer than a quarter of the SMs' worth of CTAs runs MMHA (the one-head
class's kernel), on B200 and GB200 24 and 32 query heads per KV head run the over-32 class's kernel
(``kernelfit.rules.DISPATCH``); the main class names that class as its ``variant`` (``variant_blocks_below``,
``variant_m_above``), the law prices those ops on it (``efficiency.runs_variant``), and the fit leaves their rows to
it."""
from dataclasses import replace

import numpy as np
import pytest

pd = pytest.importorskip("pandas")

from ironlaw.core.errors import IronlawError  # noqa: E402
from ironlaw.core.gemmshape import attention_kernel  # noqa: E402
from ironlaw.core.graph import Graph  # noqa: E402
from ironlaw.law import efficiency, law  # noqa: E402
from ironlaw.machine import calibration, hardware  # noqa: E402
from ironlaw.machine.calibration import Calibration  # noqa: E402
from ironlaw.measure.calibrate import kernelfit, kerneltable  # noqa: E402

MAIN, MHA, WIDE = (attention_kernel("decode", "bf16", "fp8", r) for r in ("", "_mha", "_wide"))
SHAPE = {"eta_max": 0.5, "m_half": 1.0, "nk_half": 100.0, "k_half": 1.0, "streamed": 0.8, "latency_s": 5e-6}


def _table(gpu: str, version: str, rows: list[tuple]) -> kerneltable.KernelTable:
    """A TensorRT-LLM decode table, FP8 cache, of ``rows`` (batch, cached tokens, heads, KV heads), head dim 128."""
    frame = pd.DataFrame([dict(batch_size=b, isl=1, num_heads=h, num_key_value_heads=kv, head_dim=128, window_size=0,
                               attn_dtype="bfloat16", kv_cache_dtype="fp8", step=s, kernel_source="torch_flow",
                               latency_s=1e-5) for b, s, h, kv in rows])
    return kerneltable.KernelTable("generation_attention", gpu, "device", "trtllm", version, "x.txt", frame)


def _main(gpu: str, version: str, rows: list[tuple]):
    (g,) = [g for g in kernelfit.groups([_table(gpu, version, rows)]) if g.key[1] == MAIN]
    return g


def test_the_rule_is_the_1_0_lines_and_its_gpus_only():
    rows = [(4, 127, 32, 8), (4, 255, 32, 8)]
    h100 = kernelfit.dispatch.dispatch_rule(_main("h100", "1.0.0rc3", rows), hardware.get("h100"))
    assert h100 == {"variant": MHA, "variant_dtype": "bf16", "variant_blocks_below": hardware.get("h100").sms / 4}
    b200 = kernelfit.dispatch.dispatch_rule(_main("b200", "1.0.0rc6", rows), hardware.get("b200"))
    assert b200 == {"variant": WIDE, "variant_dtype": "bf16", "variant_m_above": 16}
    assert kernelfit.dispatch.dispatch_rule(_main("h100", "1.3.0rc20", rows), hardware.get("h100")) is None
    assert kernelfit.dispatch.dispatch_rule(_main("a100", "1.0.0", rows), hardware.get("a100")) is None
    mha = kernelfit.groups([_table("h100", "1.0.0rc3", [(4, 127, 8, 8)])])[0]
    assert mha.key[1] == MHA and kernelfit.dispatch.dispatch_rule(mha, hardware.get("h100")) is None


def test_which_rows_run_the_other_kernel():
    """H100 (132 SMs: XQA from 33 CTAs): 4 sequences × 8 KV heads with 128 keys (127 cached and the new token) are 32
    CTAs, MMHA; with 256 keys, 64, XQA; 8 sequences at 2 keys, 64, XQA. B200: 32 heads on one KV head run the wide
    kernel, 16 do not."""
    g = _main("h100", "1.0.0rc3", [(4, 127, 32, 8), (4, 255, 32, 8), (8, 1, 32, 8), (1, 4094, 16, 1)])
    rule = kernelfit.dispatch.dispatch_rule(g, hardware.get("h100"))
    got = dict(zip(zip(g.rows.batch_size, g.rows.step), kernelfit.dispatch.dispatched(g, g.rows, rule)))
    assert got == {(4, 127): True, (4, 255): False, (8, 1): False, (1, 4094): True}
    b = _main("b200", "1.0.0rc6", [(1, 1023, 32, 1), (1, 1023, 16, 1), (64, 1023, 24, 1)])
    rule = kernelfit.dispatch.dispatch_rule(b, hardware.get("b200"))
    moved = kernelfit.dispatch.dispatched(b, b.rows, rule)
    assert dict(zip(b.rows.num_heads, moved)) == {32: True, 16: False, 24: True}


def _times(hw, cal: dict, ops: list) -> np.ndarray:
    hw = replace(hw, calibration=Calibration.of(cal))
    return np.asarray(law.timed(law.place(Graph("t", "decode", "bf16", ops), hw), hw).op_time_s, float).reshape(-1)


def _cal(main: dict, variant: str) -> dict:
    return {"schema": calibration.SCHEMA, "source": "derived: test", "fitted": ["x"],
            "kernel": {MAIN: main, variant: dict(SHAPE, latency_s=5e-4)}}


def test_the_law_prices_the_dispatched_ops_on_the_variant_class():
    """The variant class's 500 µs fixed latency shows where the op runs it: only the rows the rule names."""
    hw = hardware.get("h100")
    g = _main("h100", "1.0.0rc3", [(4, 127, 32, 8), (4, 255, 32, 8)])
    ops = [kernelfit.ops.attention_op(r, g) for r in g.rows.itertuples()]
    linked = _cal({**SHAPE, **kernelfit.dispatch.dispatch_rule(g, hw)}, MHA)
    t, plain = _times(hw, linked, ops), _times(hw, _cal(SHAPE, MHA), ops)
    assert t[0] > 5e-4 > plain[0] and t[1] == pytest.approx(plain[1], rel=1e-12)
    cols, _ = efficiency.with_variants(Calibration.of(linked), Graph("t", "decode", "bf16", ops).columns(), hw)
    assert list(cols.kernels) == [MHA, MAIN]                 # MMHA runs each query head on its own: M = 1
    assert np.ravel(cols.mnk[0, 0])[0] == 1.0 and np.ravel(cols.mnk[1, 0])[0] == 4.0
    b200 = hardware.get("b200")
    w = _main("b200", "1.0.0rc6", [(1, 1023, 32, 1), (1, 1023, 16, 1)])
    ops = [kernelfit.ops.attention_op(r, w) for r in w.rows.itertuples()]
    t = _times(b200, _cal({**SHAPE, **kernelfit.dispatch.dispatch_rule(w, b200)}, WIDE), ops)
    assert dict(zip(w.rows.num_heads, t > 5e-4)) == {32: True, 16: False}


@pytest.mark.parametrize("bad, match", [
    ({"variant": MHA, "variant_dtype": "bf16", "variant_m_above": 16, "variant_blocks_below": 33.0}, "come together"),
    ({"variant": MHA, "variant_dtype": "bf16", "variant_blocks_below": 0.0}, "variant_blocks_below"),
    ({"variant": MHA, "variant_dtype": "bf16", "variant_m_above": 16.5}, "variant_m_above"),
])
def test_a_dispatch_out_of_shape_is_refused(bad, match):
    with pytest.raises(IronlawError, match=match):
        calibration.check(_cal({**SHAPE, **bad}, MHA), "calibration")


def test_serve_on_release_1_0_runs_the_dispatch_its_tables_time():
    """``serve --release 1.0`` prices a decode step with the release file's classes: Llama 3.1 8B (8 KV heads) at one
    sequence of 511 cached tokens is 32 XQA CTAs on H100, so its attention runs the one-head (MMHA) class at M = 1;
    at 8 sequences it stays on its grouped-query class (M = 4)."""
    from ironlaw.machine import engines
    from ironlaw.models.serving import step
    hw, _ = engines.with_engine(hardware.get("h100"), "trtllm", release="1.0")
    main = attention_kernel("decode", "fp8", "fp8", "")        # an FP8 model's decode: the bf16 math's classes
    mha = attention_kernel("decode", "bf16", "fp8", "_mha")    # (``kernelfit.dispatch.derived_generation``)
    for batch, kernel, m in ((1, mha, 1.0), (8, main, 4.0)):
        g = step.build("llama3.1-8b", "decode", batch, 511, "fp8", "fp8", hw)
        (i,) = [i for i, op in enumerate(g.ops) if op.kind == "attention"]
        cols, _ = efficiency.with_variants(hw.calibration, g.columns(), hw)
        assert cols.kernels[i] == kernel and np.ravel(cols.mnk[i, 0])[0] == m
