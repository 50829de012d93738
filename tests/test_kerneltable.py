"""Reading measured kernel tables: columns, units and GPU names checked, every problem one IronlawError line."""
from pathlib import Path

import pytest

from conftest import run_cli

pd = pytest.importorskip("pandas")

from ironlaw.core.errors import IronlawError  # noqa: E402
from ironlaw.measure.calibrate import kerneltable  # noqa: E402

DATA = Path(__file__).parent / "data" / "kernel_tables"
GEMM = {"framework": ["TRTLLM"] * 2, "version": ["1.3.0rc20"] * 2, "device": ["NVIDIA H100 80GB HBM3"] * 2,
        "gemm_dtype": ["bfloat16"] * 2, "m": [16, 4096], "n": [4096, 4096], "k": [4096, 4096]}


def _csv(tmp_path, name="gemm_perf.csv", **cols):
    """A two-row GEMM table (``cols`` replace or, set to None, drop columns); a name but gemm_perf.csv names
    its op in an op_name column."""
    if name != "gemm_perf.csv" and "op_name" not in cols:
        cols["op_name"] = ["gemm", "gemm"]
    df = pd.DataFrame({**GEMM, "latency": [0.0165, 0.174], **cols})
    df = df[[c for c in df.columns if cols.get(c, 0) is not None]]
    p = tmp_path / name
    df.to_csv(p, index=False)
    return p


def test_reads_the_extract_in_the_wheels_layout():
    tables = kerneltable.read(DATA, ops=("gemm", "context_attention", "generation_attention"), framework="trtllm")
    got = {(t.gpu, t.op) for t in tables}
    assert got == {("h100", "gemm"), ("h100", "context_attention"), ("h100", "generation_attention"),
                   ("b200", "gemm")}
    for t in tables:
        assert (t.rows.latency_s > 0).all() and t.framework == "trtllm" and t.version == "1.3.0rc20"
        assert t.rows.latency_s.iloc[0] == pytest.approx(t.rows.latency.iloc[0] * 1e-3)    # ms -> s
    assert {t.gpu for t in kerneltable.read(DATA, gpu="b200-sxm")} == {"b200"}              # aliases resolve
    comm = {(t.gpu, t.op, t.version) for t in kerneltable.read(DATA, ops=("nccl", "moe", "moe_a2a"), gpu="b200")}
    assert comm == {("b200", "nccl", "2.29.2"), ("b200", "moe", "1.3.0rc20"), ("b200", "moe_a2a", "1.3.0rc11")}


def test_units(tmp_path):
    us = kerneltable.read(_csv(tmp_path, latency=None, latency_us=[16.5, 174.0]))[0]
    assert us.rows.latency_s.tolist() == pytest.approx([16.5e-6, 174e-6])
    stated = kerneltable.read(_csv(tmp_path, latency_unit=["s", "s"]))[0]
    assert stated.rows.latency_s.tolist() == pytest.approx([0.0165, 0.174])


@pytest.mark.parametrize("cols, message", [
    ({"k": None}, "missing column k"),
    ({"m": None, "n": None}, "missing columns m, n"),
    ({"latency": None}, "expected one latency column"),
    ({"latency_us": [1.0, 2.0]}, "expected one latency column"),
    ({"latency_unit": ["ns", "ns"]}, "unknown latency unit ns"),
    ({"latency_unit": ["ms", "us"]}, "unknown latency unit ms, us"),
    ({"latency": [0.0165, -1.0]}, "must hold positive numbers"),
    ({"device": ["ACME X1", "ACME X1"]}, "GPU 'ACME X1' matches no catalog GPU"),
    ({"gemm_dtype": ["bfloat16", "bf16"], "op_name": ["gemm", "moe"]}, "cannot tell which kernels"),
])
def test_bad_tables_are_one_line(tmp_path, cols, message):
    name = "table.csv" if "op_name" in cols else "gemm_perf.csv"
    with pytest.raises(IronlawError, match=message) as e:
        kerneltable.read(_csv(tmp_path, name, **cols))
    assert "\n" not in str(e.value)


def test_an_unknown_gpu_is_named_with_gpu(tmp_path):
    t = kerneltable.read(_csv(tmp_path, device=["ACME X1", "ACME X1"]), gpu="h100")[0]
    assert t.gpu == "h100" and t.device == "ACME X1"


def test_a_table_without_a_device_column_is_the_gpu_named(tmp_path):
    """A user's own table need not name its GPU in a column: --gpu names it; without --gpu the refusal says so."""
    t = kerneltable.read(_csv(tmp_path, device=None), gpu="h100")[0]
    assert t.gpu == "h100" and len(t.rows) == 2
    with pytest.raises(IronlawError, match=r"missing column device for a gemm table \(or name the table's GPU "
                                           r"with --gpu NAME\)"):
        kerneltable.read(_csv(tmp_path, device=None))


def test_ironlaws_own_dtype_names_read_as_the_tables(tmp_path):
    """bf16 and fp16, as ironlaw's --dtype spells them, are the tables' bfloat16 and float16."""
    t = kerneltable.read(_csv(tmp_path, gemm_dtype=["bf16", "fp16"]))[0]
    assert t.rows.gemm_dtype.tolist() == ["bfloat16", "float16"]


def test_an_attention_table_may_leave_out_the_column_its_phase_fixes(tmp_path):
    """A user's context table without step (always 0 there) and generation table without isl (always 1) were refused
    as missing a column; they read as those values, and the reading says so."""
    cols = "device,batch_size,{},num_heads,num_key_value_heads,head_dim,attn_dtype,kv_cache_dtype,latency\n"
    row = "NVIDIA H100 80GB HBM3,1,{},32,8,128,bfloat16,bfloat16,0.05\n"
    (tmp_path / "context_attention_perf.csv").write_text(cols.format("isl") + row.format(1024) + row.format(2048))
    (tmp_path / "generation_attention_perf.csv").write_text(cols.format("step") + row.format(1023) + row.format(2047))
    tables = {t.op: t for t in kerneltable.read(tmp_path, ops=("context_attention", "generation_attention"))}
    assert tables["context_attention"].rows.step.tolist() == [0, 0]
    assert tables["generation_attention"].rows.isl.tolist() == [1, 1]
    said = kerneltable.assumptions(list(tables.values()))
    assert "no step column in context_attention_perf.csv: read as step 0 (a context kernel caches no tokens before " \
           "its prompt)" in said
    assert "no isl column in generation_attention_perf.csv: read as isl 1 (a generation kernel takes one query " \
           "token per sequence)" in said


def test_no_table(tmp_path):
    with pytest.raises(IronlawError, match="no kernel table"):
        kerneltable.read(tmp_path)
    with pytest.raises(IronlawError, match="no such file"):
        kerneltable.read(tmp_path / "absent")
    with pytest.raises(IronlawError, match="unknown kernel table op"):
        kerneltable.read(DATA, ops=("mla",))
    with pytest.raises(IronlawError, match="no kernel table for GPU 'h200'"):
        kerneltable.read(DATA, ops=("gemm",), gpu="h200")


def test_matching_and_versions():
    assert kerneltable.match_gpu("NVIDIA GB200") == "gb200"
    assert kerneltable.match_gpu("NVIDIA RTX PRO 6000 Blackwell Server Edition") == "rtx-pro-6000"
    assert kerneltable.match_gpu("L40S") == "l40s"                      # a catalog name as written
    assert kerneltable.match_gpu("Intel(R) Arc(TM) Pro B60 Graphics") == "b60"     # its XPU device name
    assert kerneltable.match_gpu("AMD Instinct MI300X") == "mi300x"     # ROCm's torch.cuda.get_device_name
    tabs = [kerneltable.KernelTable("gemm", "b200", "NVIDIA B200", "vllm", v, v, None)
            for v in ("0.22.0", "0.24.0", "0.9.1")]
    assert [t.version for t in kerneltable.newest(tabs)] == ["0.24.0"]


@pytest.mark.parametrize("args, message", [
    (["--kernels", "{tmp}/absent"], "no such file"),
    (["--kernels", "{data}", "--out", "x.json"], "must end in .toml"),
    (["--kernels", "{data}", "--framework", "tensorrt"], "--framework must be one of"),
    (["--kernels", "{data}"], "tables of 3 GPUs (b200, h100, h200); name one with --gpu"),
    (["--kernels", "{data}", "--gpu", "l40s"], "no kernel table for GPU 'l40s'"),
    (["--kernels", "{tmp}/acme.csv"], "GPU 'ACME X1' matches no catalog GPU"),
    (["--kernels", "{tmp}/nok.csv"], "missing column k"),
    (["--kernels", "{tmp}/ns.csv"], "unknown latency unit ns"),
    (["--kernels", "{tmp}/table.csv", "--gpu", "b200"], "no kernel table for GPU 'b200'"),
    (["--kernels", "{tmp}/zero.csv"], "zero.csv: 1 of 2 rows have m, n or k that is not a positive whole number"),
])
def test_cli_errors(tmp_path, args, message):
    for name, cols in (("acme", {"device": ["ACME X1", "ACME X1"]}), ("nok", {"k": None}),
                       ("ns", {"latency_unit": ["ns", "ns"]}), ("table", {"op_name": ["gemm", "gemm"]}),
                       ("zero", {"op_name": ["gemm", "gemm"], "m": [0, 64]})):
        _csv(tmp_path, f"{name}.csv", **cols)
    argv = [a.format(tmp=tmp_path, data=DATA) for a in args]
    r = run_cli("calibrate", *argv)
    assert r.rc == 2, r.err
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in r.err


def test_without_pandas_reading_a_table_is_one_line(tmp_path, monkeypatch):
    path = _csv(tmp_path)
    monkeypatch.setitem(__import__("sys").modules, "pandas", None)           # import fails as without pandas
    with pytest.raises(IronlawError, match=r"needs pandas .*pip install 'ironlaw\[fit\]'"):
        kerneltable.read(path)


def test_a_gemm_row_with_a_zero_dimension_is_named_with_its_table(tmp_path):
    t = kerneltable.read(_csv(tmp_path, m=[0, 64]))[0]                      # read: a release filter may drop it
    with pytest.raises(IronlawError, match=r"gemm_perf.csv: 1 of 2 rows have m, n or k .* m=0, n="):
        kerneltable.check_gemm_dims(t.rows, t.path)
