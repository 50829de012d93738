"""AMD Instinct's flat attention η, measured from ROCm/aiter's published FMHA throughputs
(ironlaw.measure.calibrate.attnshare; the catalog values come from benchmarks/amd_attention.py --write)."""
import shutil
import sys
from pathlib import Path

import pytest

from ironlaw.core.errors import IronlawError
from ironlaw.machine import hardware
from ironlaw.measure.calibrate import attnshare, carry
from ironlaw.measure.calibrate.kernelfit import rules
from ironlaw.models.parallel.step import training_graph

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "aiter_kernels" / "attention" / "mha_asm_bf16.csv"
SHAPE = dict(batch="1", q_heads="64", kv_heads="8", seqlen_q="8192", seqlen_kv="8192", head_dim="128", causal="1")


def _row(gpu: str, phase: str, tflops: float, **shape) -> dict:
    return {"device": gpu, "phase": phase, "tflops": str(tflops), **{**SHAPE, **shape}}


@pytest.mark.parametrize("gpu", sorted(rules.ATTENTION_ROWS_OF))
def test_catalog_attention_eta_is_the_published_rows_step_blend(gpu):
    src = rules.ATTENTION_ROWS_OF[gpu]
    s = attnshare.share(attnshare.read(DATA), src, hardware.get(src).peak("bf16"), "backward_a16",
                        carry.ATTENTION_MIN["isl"])
    assert s.shapes == 58                             # of 94: 4,096 to 16,384 tokens
    assert hardware.get(gpu).eta("attention") == round(s.step, 3)
    assert s.backward < s.step < s.forward


def test_the_published_shares_and_their_blend():
    rows = attnshare.read(DATA)
    got = {(g, n): attnshare.share(rows, g, hardware.get(g).peak("bf16"), "backward_a16", n)
           for g in ("mi300x", "mi355x") for n in (0, 4096)}
    three = {k: (round(s.forward, 3), round(s.backward, 3), round(s.step, 3)) for k, s in got.items()}
    assert three == {("mi300x", 4096): (0.420, 0.376, 0.386), ("mi355x", 4096): (0.535, 0.445, 0.466),
                     ("mi300x", 0): (0.404, 0.362, 0.375), ("mi355x", 0): (0.503, 0.421, 0.441)}


def test_a_shape_blends_forward_and_backward_at_the_laws_flops():
    rows = [_row("g", "forward", 500.0), _row("g", "bwd", 250.0), _row("g", "forward", 900.0, causal="0")]
    s = attnshare.share(rows, "g", 1000e12, "bwd")
    assert s.shapes == 1                              # the non-causal shape has no backward row
    assert s.step == pytest.approx(3.5 / (1 / 0.5 + 2.5 / 0.25))
    with pytest.raises(IronlawError, match="no shape with a forward and a bwd_a32 row for 'g'"):
        attnshare.share(rows, "g", 1000e12, "bwd_a32")
    with pytest.raises(IronlawError, match="no shape"):                  # 8,192 keys: under the bound
        attnshare.share(rows, "g", 1000e12, "bwd", min_tokens=16384)


def test_the_blend_weights_the_backward_as_the_training_graph_counts_it():
    hw = hardware.get("mi300x")
    g = training_graph("llama3.1-8b", hw, 4096, "bf16", dict(gpus=1, global_batch=1, micro_batch=1))
    fl = {op.name: op.flops for op in g.ops if op.name in ("attention", "attention.backward")}
    assert fl["attention.backward"] / fl["attention"] == pytest.approx(attnshare.BACKWARD_FLOPS)


def test_a_table_without_the_shape_columns_is_one_clear_error(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("device,phase,tflops\nmi300x,forward,1\n")
    with pytest.raises(IronlawError, match="no column"):
        attnshare.read(p)


def test_write_names_the_rows_and_rewrites_in_place(tmp_path, monkeypatch):
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import amd_attention
    shutil.copy(amd_attention.CATALOG / "mi325x.toml", tmp_path / "mi325x.toml")
    monkeypatch.setattr(amd_attention, "CATALOG", tmp_path)
    out = amd_attention.shares()
    for _ in range(2):
        amd_attention.write("mi325x", out["mi325x"])
    text = (tmp_path / "mi325x.toml").read_text()
    assert text.count(amd_attention.CLAUSE) == 1 and "the mi300x's rows" in text
    assert text == (ROOT / "src/ironlaw/machine/catalog/mi325x.toml").read_text()


def test_extract_reads_aiters_table_by_its_column_groups():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import amd_attention
    text = "\n".join([
        "some text", "| batch | q_nheads | kv_nheads | seqlen_q | seqlen_kv | hdim | causal | FWD(TFLOPS) |  | "
        "BWD-a16(TFLOPS) |  |", "|---|---|---|---|---|---|---|---|---|---|---|",
        "|  |  |  |  |  |  |  | MI300X | MI355X | MI300X | MI355X |",
        "| 1 | 32 | 8 | 1024 | 1024 | 128 | 1 | 130.62 | 233.12 | 177.565 | 211.91 |", "", "after"])
    assert amd_attention.parse(text) == [
        ["mi300x", "forward", "1", "32", "8", "1024", "1024", "128", "1", "130.62"],
        ["mi355x", "forward", "1", "32", "8", "1024", "1024", "128", "1", "233.12"],
        ["mi300x", "backward_a16", "1", "32", "8", "1024", "1024", "128", "1", "177.565"],
        ["mi355x", "backward_a16", "1", "32", "8", "1024", "1024", "128", "1", "211.91"]]
    with pytest.raises(IronlawError, match="no performance table"):
        amd_attention.parse("| a | b |\n")
