"""A new user's first steps with each command, read from the README and --help alone: what a line said that was
wrong or unexplained. Each pinned by the test that failed before its fix."""
import pytest

from conftest import one_line_error, run_cli


# ------------------------------------------------------------------ fit: what the calibration holds, and why not more
def test_fit_says_what_it_fitted_and_why_no_op_class():
    """`fit` on one ResNet run printed "calibration: 0 op classes, framework 0 s per op + 0.0%" although it had
    fitted conv, elementwise, norm, reduction and the fp32 GEMMs; it now names them, and why no op name got a
    class of its own, and why the framework terms are 0."""
    from ironlaw.cli.fit import fitted_line, framework_line
    cal = {"compute": {"conv": 0.3, "elementwise": 0.1}, "latency_s": {"norm": 1e-6},
           "memory": {"kind": {"elementwise": 0.5}, "produced": 0.5}, "matmul": {"fp32": {"eta_max": 0.7}},
           "kernel": {"pool-max": {"compute": 0.1}}, "framework_s": 0.0, "framework_share": 0.0}
    line = fitted_line(cal)
    assert line.startswith("op kinds conv, elementwise, matmul (fp32), norm;")
    assert "kernel classes pool-max" in line and "no op class of its own (an op name gets one where it holds" in line
    assert "0 op classes" not in line
    assert "no longer than their ops timed one by one" in framework_line(cal)
    with_ops = fitted_line({**cal, "op": {"aten::max_pool2d_with_indices": {"compute": 0.2}}})
    assert with_ops.endswith("op classes aten::max_pool2d_with_indices")
    assert "one by one" not in framework_line({"framework_s": 1e-5, "framework_share": 0.0})


# ------------------------------------------------------------------ calibrate --framework on a table that names none
def _own_gemm(folder, head="", cells=""):
    folder.mkdir(parents=True, exist_ok=True)
    rows = [head + "device,gemm_dtype,m,n,k,latency"]
    for m in (16, 256, 4096):
        for n in (4096, 14336):
            rows.append(cells + f"NVIDIA H100 80GB HBM3,bfloat16,{m},{n},4096,{0.006 + 2 * m * n * 4096 / 6e11:.6f}")
    (folder / "gemm_perf.csv").write_text("\n".join(rows) + "\n")
    return str(folder)


def test_framework_on_a_table_that_names_none_is_refused_not_a_label():
    """`calibrate --kernels MYDIR --framework vllm` over a table naming no framework fitted it as no framework's
    (vLLM's rules key on the table's own framework and version) and printed "(vllm)": the option changed a label
    only. It is refused now, naming the file; a table whose columns name vLLM takes it."""
    pytest.importorskip("pandas")
    import tempfile
    from pathlib import Path
    with tempfile.TemporaryDirectory() as d:
        mine = _own_gemm(Path(d) / "mine")
        line = one_line_error(run_cli("calibrate", "--kernels", mine, "--gpu", "h100", "--framework", "vllm"))
        assert line.startswith("ironlaw: error: --framework vllm: gemm_perf.csv names no framework") and \
            "drop --framework" in line
        named = _own_gemm(Path(d) / "named", "framework,version,", "vllm,0.11.0,")
        r = run_cli("calibrate", "--kernels", named, "--gpu", "h100", "--framework", "vllm")
        assert r.rc == 0 and "(vllm)" in r.out, r.err
        r = run_cli("calibrate", "--kernels", mine, "--gpu", "h100")
        assert r.rc == 0 and "framework unstated" in " ".join(r.out.split()), r.err


def test_a_framework_typo_names_the_nearest():
    line = one_line_error(run_cli("calibrate", "--kernels", ".", "--framework", "vlm"))
    assert "got 'vlm'" in line and "did you mean: vllm" in line
