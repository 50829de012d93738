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
            ms = 0.006 + 2 * m * n * 4096 / 6e11 + 2 * n * 4096 / 3e9      # 600 TFLOP/s, weights at 3 TB/s
            rows.append(cells + f"NVIDIA H100 80GB HBM3,bfloat16,{m},{n},4096,{ms:.6f}")
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


# ------------------------------------------------------------------ analyze a Hugging Face model id, or a model's folder
def test_a_hub_id_says_how_to_give_the_model(tmp_path):
    """`analyze mistralai/Mistral-Small-24B` listed the built-ins and stopped: a user with a Hub id learned nothing
    of how to give their model. The line now says the id is not downloaded and what to give; a folder holding a
    config.json is answered with the hf: spec to type."""
    line = one_line_error(run_cli("analyze", "mistralai/Mistral-Small-24B", "--on", "h100"))
    assert "unknown workload 'mistralai/Mistral-Small-24B'" in line and "not downloaded" in line and "hf:" in line
    line = one_line_error(run_cli("analyze", "meta-llama/Llama-3.1-8B", "--on", "h100"))
    assert "did you mean: llama3.1-8b" in line and "not downloaded" in line
    assert "not downloaded" not in one_line_error(run_cli("analyze", "llama3-8bb", "--on", "h100"))
    (tmp_path / "config.json").write_text('{"model_type": "llama"}')
    line = one_line_error(run_cli("analyze", str(tmp_path), "--on", "h100"))
    assert f"give hf:{tmp_path / 'config.json'}" in line


# ------------------------------------------------------------------ probe --threads past any machine
def test_probe_threads_too_many_says_the_bound_not_positive():
    """`probe --threads 100000` answered "--threads must be a positive number of threads, got 100000": the number
    is positive; the line now gives the range it must fall in."""
    line = one_line_error(run_cli("probe", "--quick", "--threads", "100000"))
    assert line == "ironlaw: error: --threads must be a whole number of threads from 1 to 4,096, got 100000"


# ------------------------------------------------------------------ serve: the step model's line
def test_the_step_model_line_names_it_once():
    """`serve … --engine trtllm` printed "steps: engine step model (h100 is a GPU: each step priced as
    --max-throughput prices it (the engine step model: its host and padding constants fitted on …))": the model
    named twice, in parentheses within parentheses."""
    from ironlaw.machine import hardware
    from ironlaw.models.serving.online import step_model
    rule = step_model(hardware.get("h100")).rule
    assert "step model" not in rule and "(" not in rule and "fitted on TensorRT-LLM H100 runs" in rule


# ------------------------------------------------------------------ a mistyped subcommand
def test_a_mistyped_subcommand_is_suggested_once():
    """`hardware shw h100` said "No such command 'shw'. Did you mean 'show'? Did you mean 'show'?" (click and
    typer each add the suggestion)."""
    line = one_line_error(run_cli("hardware", "shw", "h100"))
    assert line == "ironlaw: error: No such command 'shw'. Did you mean 'show'?"


# ------------------------------------------------------------------ calibrate on a table in the wrong unit
@pytest.mark.parametrize("scale, how", [(1000.0, "slower than"), (0.001, "faster than")])
def test_a_gemm_table_in_another_unit_than_its_column_is_refused(tmp_path, scale, how):
    """A table of µs under `latency` (which reads ms) was fitted as it stood, "0.0% / 0.0%" held out, an η a
    thousandth of the real one; seconds under it fitted with 94,474% errors. The largest GEMM against the device's
    roofline now tells: one line naming the file and the columns that name a unit."""
    pytest.importorskip("pandas")
    rows = ["device,gemm_dtype,m,n,k,latency"]
    for m in (16, 256, 4096):
        for n in (4096, 14336):
            rows.append(f"NVIDIA H100 80GB HBM3,bfloat16,{m},{n},4096,{scale * (0.006 + 2 * m * n * 4096 / 6e11):.9f}")
    (tmp_path / "gemm_perf.csv").write_text("\n".join(rows) + "\n")
    line = one_line_error(run_cli("calibrate", "--kernels", str(tmp_path), "--gpu", "h100"))
    assert line.startswith("ironlaw: error: gemm_perf.csv: its largest bfloat16 GEMM (4096×14336×4096) runs") and \
        how in line and "h100's roofline" in line and "'latency_us'" in line


def test_fit_on_a_catalog_cpu_does_not_offer_a_save_it_would_refuse():
    """`fit RUN.json --on xeon-8480` ended "(not saved; --save writes it into the profile)", and --save then
    refused: a catalog device is not a probe profile."""
    from ironlaw.cli.fit import saved_line
    line = saved_line(None, "xeon-8480", "xeon-8480")
    assert "--save writes it into the profile" not in line and "not a profile `ironlaw probe` wrote" in line
    assert saved_line("/p.toml", "xeon-8480", "xeon-8480") == "; saved into /p.toml"


# ------------------------------------------------------------------ an option or a GPU name given where it has no place
def test_serve_with_phase_says_where_a_phase_is_chosen():
    """`serve SPEC --on h100 --phase decode` got click's "No such option '--phase'. (Did you mean one of: '--help',
    ...)"; it now says serve runs both phases and which command takes one."""
    line = one_line_error(run_cli("serve", "llama3-8b", "--on", "h100", "--phase", "decode"))
    assert "serve takes no --phase" in line and "ironlaw analyze SPEC --on HW --phase decode" in line
    assert "--help" not in line


def test_calibrate_with_a_mistyped_gpu_names_the_nearest(tmp_path):
    """`calibrate --kernels DIR --gpu h1000` said "no kernel table for GPU 'h1000'" as if the tables lacked it;
    the name is no catalog GPU, and the nearest are named."""
    folder = _own_gemm(tmp_path / "mine")
    line = one_line_error(run_cli("calibrate", "--kernels", folder, "--gpu", "h1000"))
    assert "unknown hardware 'h1000'" in line and "h100" in line.split("did you mean")[1]
