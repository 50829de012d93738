"""The TensorRT-LLM 1.0 line's kernel tables (aiconfigurator 0.8.0's older layout, <gpu>/trtllm/<version>/<op>_perf.txt):
read and checked like the newer ones, fitted as the same kernel classes (extract: tests/data/kernel_tables_1.0)."""
import shutil
from pathlib import Path

import numpy as np
import pytest

from conftest import run_cli

pd = pytest.importorskip("pandas")

from ironlaw.core.errors import IronlawError  # noqa: E402
from ironlaw.measure.calibrate import kernelfit, kerneltable, moefit  # noqa: E402

DATA = Path(__file__).parent / "data" / "kernel_tables_1.0"
FOLDER = DATA / "h100_sxm" / "trtllm" / "1.0.0rc3"


def test_reads_the_older_layout():
    tables = kerneltable.read(DATA, ops=kernelfit.OPS + ("moe",), framework="trtllm", release="1.0")
    assert {t.op for t in tables} == {"gemm", "context_attention", "generation_attention", "moe"}
    for t in tables:
        assert (t.gpu, t.framework, t.version) == ("h100", "trtllm", "1.0.0rc3")
        assert t.path == f"h100_sxm/trtllm/1.0.0rc3/{t.op}_perf.txt"
        assert t.rows.latency_s.tolist() == pytest.approx((t.rows.latency * 1e-3).tolist())     # ms -> s
    attn = [t for t in tables if t.op.endswith("attention")]
    assert all((t.rows.window_size == 0).all() for t in attn)       # no window column: global attention


def test_release_lines():
    assert kerneltable.in_release("1.0.0rc3", "1.0") and kerneltable.in_release("1.0.0rc6", "1.0")
    assert kerneltable.in_release("1.0", "1.0") and kerneltable.in_release("1.0.1", "1.0")
    assert not kerneltable.in_release("1.1.0", "1.0") and not kerneltable.in_release("1.00", "1.0")
    assert not kerneltable.in_release("1.3.0rc20", "1.0") and not kerneltable.in_release("0.20.0", "1.0")
    with pytest.raises(IronlawError, match=r"no kernel table of release 1\.3 \(versions found: 1\.0\.0rc3\)"):
        kerneltable.read(DATA, ops=("gemm",), release="1.3")


def _copy(tmp_path, name, drop=(), **cols):
    """The extract's ``name`` table under tmp_path, ``drop`` columns removed and ``cols`` set."""
    df = pd.read_csv(FOLDER / name).drop(columns=list(drop)).assign(**cols)
    dest = tmp_path / "h100_sxm" / "trtllm" / "1.0.0rc3" / name
    dest.parent.mkdir(parents=True)
    df.to_csv(dest, index=False)
    return dest


@pytest.mark.parametrize("name, drop, cols, message", [
    ("context_attention_perf.txt", ("num_heads",), {}, "missing column num_heads for a context_attention table"),
    ("gemm_perf.txt", ("m", "k"), {}, "missing columns m, k for a gemm table"),
    ("gemm_perf.txt", (), {"latency_unit": "min"}, "unknown latency unit min"),
    ("moe_perf.txt", ("latency",), {}, "expected one latency column"),
])
def test_a_bad_older_table_is_one_line(tmp_path, name, drop, cols, message):
    _copy(tmp_path, name, drop, **cols)
    with pytest.raises(IronlawError, match=message) as e:
        kerneltable.read(tmp_path)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("drop, cols, message", [
    (("n",), {}, "gemm_perf.txt: missing column n for a gemm table"),
    ((), {"latency_unit": "fortnight"}, "unknown latency unit fortnight"),
])
def test_calibrate_refuses_a_bad_older_table_in_one_line(tmp_path, drop, cols, message):
    _copy(tmp_path, "gemm_perf.txt", drop, **cols)
    r = run_cli("calibrate", "--kernels", str(tmp_path), "--gpu", "h100", "--out", str(tmp_path / "h100.toml"))
    assert r.rc == 2, r.err
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in r.err


def test_an_attention_table_without_window_size_reads_as_global_in_either_layout(tmp_path):
    """No window_size column: global attention, window 0, in the older .txt layout and in a .csv alike (as
    aiconfigurator-core 0.12.0's A100 tables of vLLM 0.14.0 and SGLang 0.5.10 carry none)."""
    src = _copy(tmp_path, "generation_attention_perf.txt")
    shutil.move(src, src.with_suffix(".csv"))
    (t,) = kerneltable.read(tmp_path)
    assert set(t.rows["window_size"]) == {0}


def test_float16_rows_stand_for_bf16_and_say_so():
    tables = kerneltable.read(DATA, ops=kernelfit.OPS, release="1.0")
    plain = {g.name for g in kernelfit.groups(tables)}
    assert "gemm fp16" in plain and "generation attention fp16, KV fp8" in plain
    gs = {g.name: g for g in kernelfit.groups(tables, float16_as="bf16")}
    assert {"gemm bf16", "gemm fp8", "context attention fp8, KV fp8", "generation attention bf16, KV fp8"} <= set(gs)
    assert gs["gemm bf16"].timed == "float16 rows, for bf16" and gs["gemm fp8"].timed == ""
    assert gs["generation attention bf16, KV fp8"].key == ("kernel", "attention_generation_bf16_kv_fp8")
    op = kernelfit.observations(gs["generation attention bf16, KV fp8"], gs["generation attention bf16, KV fp8"].rows[:1])[0]
    assert op.op.dtype == "bf16"
    with pytest.raises(IronlawError, match="float16 rows can stand for bf16 only"):
        kernelfit.groups(tables, float16_as="fp8")


def test_power_law_routing_of_the_collector():
    """The measured rank is the most loaded one: at least its share of the routed rows, at most all of them."""
    for tokens, experts, k, ep in ((1, 128, 8, 8), (64, 128, 8, 8), (4096, 256, 8, 32), (512, 8, 2, 1)):
        rows, used = moefit.power_law_local(tokens, experts, k, ep, 1.01)
        assert tokens * k / ep - 1e-9 <= rows <= tokens * k and 1 <= used <= experts // ep
        assert (rows, used) == moefit.power_law_local(tokens, experts, k, ep, 1.01)         # seeded
    bal, skew = moefit.balanced_local(4096, 128, 8, 8), moefit.power_law_local(4096, 128, 8, 8, 1.01)
    assert skew[0] > 1.2 * bal[0]             # the heaviest rank of a power law carries more than the even share
    assert moefit.routing_of("uniform") is None       # aiter's tables' routing (moefit.UNIFORM): not a serving one
    with pytest.raises(IronlawError, match="unknown MoE routing 'zipf'"):
        moefit.terms({"num_tokens": [1], "hidden_size": [1], "inter_size": [1], "topk": [1], "num_experts": [8],
                      "moe_tp_size": [1], "moe_ep_size": [1]}, "fp8", 1e15, 3e12, "zipf")


def test_release_moe_layer_fits_the_extract():
    import sys
    sys.path.insert(0, str(Path(__file__).parents[1] / "benchmarks"))
    import kernel_moe
    fits = kernel_moe.release_fits(DATA, "h100_sxm", "1.0")
    assert [(f.gpu, f.dtype) for f in fits] == [("h100", "fp8")]
    f = fits[0]
    assert f.path == "h100_sxm/trtllm/1.0.0rc3/moe_perf.txt" and f.n_fit > 0 and f.n_held > 0 and f.every is None
    err = f.err
    assert np.median(err) < 0.15                 # the extract's held-out shapes (the full tables: docs/accuracy.md)
    table = kernel_moe.release_table("h100", fits, "1.0")
    prov = table["provenance"]["moe fp8"]
    assert prov["version"] == "aiconfigurator 0.8.0 (NVIDIA, PyPI); trtllm 1.0.0rc3" and prov["license"] == "Apache-2.0"
    stored = kernel_moe.release_stored(DATA, "h100_sxm", "1.0", table)
    assert stored[0][2] == pytest.approx(err, rel=0.02)          # as stored (rounded) ≈ as fitted


def test_benchmark_with_no_table_of_the_release_says_so_and_exits_2(monkeypatch, capsys, tmp_path):
    """benchmarks/kernel_tables.py on a GPU folder that holds only another release's tables (as aiconfigurator
    0.8.0's gb300 does): the reason and exit 2, not a traceback from an empty table."""
    import sys
    root = Path(__file__).parents[1]
    other = tmp_path / "gb300" / "trtllm" / "1.2.0rc6.post3"
    other.mkdir(parents=True)
    (other / "gemm_perf.txt").write_text("")
    monkeypatch.syspath_prepend(str(root / "benchmarks"))
    import kernel_tables
    monkeypatch.setattr(sys, "argv", ["kernel_tables.py", "--data", str(tmp_path),
                                      "--release", "1.0", "--gpu", "gb300", "--op", "mla_bmm", "--stored"])
    assert kernel_tables.main() == 2
    assert "nothing to score" in capsys.readouterr().err
