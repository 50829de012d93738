"""What a new user who has read only the README and `--help` types wrong, and the one line each now gets. Each
pinned by the test that failed before its fix."""
import pytest

from conftest import one_line_error, run_cli


# ------------------------------------------------------------------ a phase search does not take
@pytest.mark.parametrize("phase", ["decode", "prefill"])
def test_search_with_a_phase_of_one_graph_says_what_search_takes(phase):
    """`search SPEC --phase decode` said "unknown search phase 'decode'; known: serve, train", as if decode were a
    typo; it now names what search takes and which command prices one phase."""
    line = one_line_error(run_cli("search", "llama3-8b", "--phase", phase, "--on", "h100"))
    assert f"search --phase takes train | serve, got '{phase}'" in line
    assert "--phase serve ranks serving layouts" in line and f"ironlaw analyze SPEC --on HW --phase {phase}" in line


def test_search_with_a_mistyped_phase_names_the_nearest():
    line = one_line_error(run_cli("search", "llama3-8b", "--phase", "trian"))
    assert "unknown search phase 'trian'" in line and "train" in line.split("did you mean")[1]


def test_the_library_search_refuses_a_phase_of_one_graph_as_the_command_does():
    import ironlaw
    from ironlaw.core.errors import IronlawError
    with pytest.raises(IronlawError, match="ironlaw analyze SPEC --on HW --phase decode"):
        ironlaw.search("llama3-8b", phase="decode")


# ------------------------------------------------------------------ report's file given as an argument
@pytest.mark.parametrize("args", [("llama3-8b", "out.html"), ("llama3-8b", "--on", "h100")])
def test_report_without_html_says_what_report_expects(tmp_path, args):
    """`report SPEC out.html` said "Missing option '--html'."; it now says the file is named with --html and shows
    the command."""
    r = run_cli("report", *args, cwd=str(tmp_path))
    line = one_line_error(r)
    assert "report writes one HTML file, named with --html" in line
    assert "ironlaw report SPEC --on HW --html FILE.html" in line
    assert not (tmp_path / "out.html").exists()


def test_calibrate_without_kernels_says_what_calibrate_expects():
    line = one_line_error(run_cli("calibrate", "--gpu", "h100"))
    assert "calibrate fits on measured kernel tables, named with --kernels" in line


# ------------------------------------------------------------------ a kernel framework on another maker's GPU
GEMM_ROWS = ("device,gemm_dtype,m,n,k,latency\n" + "".join(
    f"NVIDIA H100 80GB HBM3,bfloat16,{m},5120,4096,{0.006 + 2 * m * 5120 * 4096 / 6e11:.6f}\n"
    for m in (256, 512, 1024, 2048)))


def test_calibrate_refuses_aiter_on_an_nvidia_table(tmp_path):
    """`calibrate --kernels MY.csv --framework aiter` on rows of an H100 fitted them and printed "(aiter)"; AITER
    builds for AMD GPUs only: one line naming the table's GPU."""
    pytest.importorskip("pandas")
    table = tmp_path / "gemm_perf.csv"
    table.write_text("framework,version," + GEMM_ROWS.replace("\nNVIDIA", "\naiter,1.0,NVIDIA"))
    line = one_line_error(run_cli("calibrate", "--kernels", str(table), "--framework", "aiter"))
    assert line == ("ironlaw: error: --framework aiter: AITER's kernels run on AMD GPUs only, and gemm_perf.csv "
                    "is a table of h100 (NVIDIA H100 SXM5 80 GB)")


def test_calibrate_refuses_a_folder_that_files_nvidia_rows_under_aiter(tmp_path):
    pytest.importorskip("pandas")
    folder = tmp_path / "h100_sxm" / "gemm" / "aiter" / "1.0"
    folder.mkdir(parents=True)
    (folder / "gemm_perf.csv").write_text(GEMM_ROWS)
    line = one_line_error(run_cli("calibrate", "--kernels", str(tmp_path)))
    assert "h100_sxm/gemm/aiter/1.0/gemm_perf.csv: its framework is aiter" in line
    assert "AMD GPUs only" in line and "h100 (NVIDIA H100 SXM5 80 GB)" in line


def test_calibrate_refuses_an_amd_table_filed_as_tensorrt_llm(tmp_path):
    pytest.importorskip("pandas")
    from pathlib import Path
    src = Path(__file__).parent / "data" / "aiter_kernels" / "mi300x" / "gemm" / "aiter" / "e4048607" / "gemm_perf.csv"
    folder = tmp_path / "mi300x" / "gemm" / "trtllm" / "1.0"
    folder.mkdir(parents=True)
    (folder / "gemm_perf.csv").write_text(src.read_text())
    line = one_line_error(run_cli("calibrate", "--kernels", str(tmp_path)))
    assert "its framework is trtllm" in line and "NVIDIA GPUs only" in line and "mi300x" in line


def test_a_device_whose_title_names_no_maker_takes_any_framework():
    from types import SimpleNamespace
    from ironlaw.machine.engines import check_kernels_run_on
    own = SimpleNamespace(kind="gpu", title="My accelerator", name="mine")
    for fw in ("aiter", "trtllm", "vllm"):
        check_kernels_run_on(fw, own, "gemm_perf.csv", given=True)


# ------------------------------------------------------------------ an option of another command
@pytest.mark.parametrize("args, says", [
    (("serve", "llama3-8b", "--gpus", "8"), "ironlaw search SPEC --phase serve --on HW --gpus N"),
    (("serve", "llama3-8b", "--seq", "2048"), "--prompt N and --output M"),
    (("serve", "llama3-8b", "--batch", "32"), "--concurrency N"),
    (("analyze", "llama3-8b", "--prompt", "1024"), "its sequence is --seq N"),
    (("analyze", "llama3-8b", "--output", "256"), "ironlaw serve SPEC --on HW --prompt N --output M"),
    (("analyze", "llama3-8b", "--concurrency", "8"), "ironlaw serve SPEC --on HW --concurrency N"),
    (("analyze", "llama3-8b", "--engine", "vllm"), "ironlaw serve SPEC --on HW --engine vllm|sglang|trtllm"),
    (("sweep", "llama3-8b", "--batch", "1,2", "--engine", "vllm"), "--engine vllm --sweep-concurrency"),
    (("search", "llama3-8b", "--phase", "serve", "--concurrency", "8"), "ironlaw serve SPEC --on HW --concurrency N"),
])
def test_an_option_another_command_takes_says_where(args, says):
    """Each got click's "No such option" (serve --gpus: "Did you mean one of: '--ep', '--pp', '--tp'?", analyze
    --prompt: "'--opt', '--plot', '--recompute'?"); each now says what the command takes instead and which command
    takes the option."""
    line = one_line_error(run_cli(*args))
    assert f"{args[0]} takes no {args[-2]}:" in line and says in line and "Did you mean" not in line


# ------------------------------------------------------------------ a subcommand a group lacks
def test_a_subcommand_with_no_near_name_gets_the_groups_commands():
    """`workloads show llama3-8b` said only "No such command 'show'."; the group's commands follow."""
    line = one_line_error(run_cli("workloads", "show", "llama3-8b"))
    assert line == "ironlaw: error: No such command 'show'. ironlaw workloads takes: list"
    assert one_line_error(run_cli("hardware", "lst")).endswith("Did you mean 'list'?")


def test_hardware_show_without_a_name_says_where_the_names_are():
    """`hardware show` said "Missing argument 'NAME'."."""
    line = one_line_error(run_cli("hardware", "show"))
    assert "ironlaw hardware show h100" in line and "ironlaw hardware list" in line


# ------------------------------------------------------------------ the library, given what a keyword cannot hold
def test_an_empty_batch_array_is_refused_as_a_bad_value():
    """`analyze(..., batch=np.array([], dtype=int))` raised numpy's "ValueError: cannot reshape array of size 0"."""
    import numpy as np
    import ironlaw
    from ironlaw.core.errors import IronlawError
    with pytest.raises(IronlawError, match="--batch: an empty array"):
        ironlaw.analyze("llama3-8b", phase="decode", batch=np.array([], dtype=int))


def test_report_with_a_top_that_is_no_number_is_refused(tmp_path):
    """`ironlaw.api.report(..., top="5")` raised "TypeError: '<' not supported between instances of 'str' and
    'int'"."""
    from ironlaw.api import report
    from ironlaw.core.errors import IronlawError
    with pytest.raises(IronlawError, match="--top must be at least 1, got '5'"):
        report("llama3-8b", str(tmp_path / "r.html"), top="5")
    assert not (tmp_path / "r.html").exists()


def test_fit_with_no_runs_says_so_not_that_no_profile_exists():
    """`ironlaw.fit([])` said "no profile yet; run `ironlaw probe`", as if a probe would make it work."""
    import ironlaw
    from ironlaw.core.errors import IronlawError
    with pytest.raises(IronlawError, match="fit: no runs given"):
        ironlaw.fit([])


# ------------------------------------------------------------------ HTML asked of --format
def test_report_with_format_says_what_report_writes(tmp_path):
    """README: "Every command but `report` (HTML) takes --format json"; `report … --format json` got click's "No
    such option '--format'.". It now says report writes one HTML file and which command prints JSON."""
    r = run_cli("report", "llama3-8b", "--html", str(tmp_path / "r.html"), "--format", "json")
    line = one_line_error(r)
    assert "report takes no --format: it writes one HTML file" in line and "ironlaw analyze SPEC" in line
    assert r.json()["schema"] == "ironlaw.error/1"


def test_format_html_names_the_option_that_writes_html():
    line = one_line_error(run_cli("serve", "llama3-8b", "--format", "html"))
    assert "got 'html'; an HTML page is a file: --html FILE.html" in line


# ------------------------------------------------------------------ validate, checked before it runs anything
def test_validate_refuses_zero_repeats_before_it_builds_the_model():
    """`validate gpt2 --phase decode --repeats 0` built and ran GPT-2 (and printed transformers' warning) before it
    refused the count: three lines on stderr. The count is now checked first, with --warmup."""
    r = run_cli("validate", "gpt2", "--phase", "decode", "--seq", "8", "--repeats", "0", timeout=60)
    assert one_line_error(r) == "ironlaw: error: validate: --repeats must be a positive whole number, got 0"


def test_validate_decode_passes_the_kv_cache_under_the_name_transformers_takes():
    """A decode step passed its cache as `past_key_values`, which transformers 5.x renamed `cache` and warns
    about ("FutureWarning: `past_key_values` is deprecated … Use `cache` instead") on every validate run."""
    pytest.importorskip("transformers")
    import warnings
    from ironlaw.measure.validate import models
    r = models.resolve("gpt2", 1, 8, "decode")
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        step = r.real()
        step.before()
        step()


# ------------------------------------------------------------------ kernel tables of one's own, written wrong
def _table(folder, text):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "gemm_perf.csv").write_text(text)
    return str(folder)


def test_an_infinite_latency_is_refused_as_the_other_bad_latencies_are(tmp_path):
    """A row timed `inf` passed the check of positive latencies and ended as "internal error: TypeError:
    argument of type 'NoneType' is not iterable" (exit 1) after a numpy warning."""
    pytest.importorskip("pandas")
    folder = _table(tmp_path / "t", GEMM_ROWS + "NVIDIA H100 80GB HBM3,bfloat16,4096,5120,4096,inf\n")
    line = one_line_error(run_cli("calibrate", "--kernels", folder, "--gpu", "h100"))
    assert line == "ironlaw: error: gemm_perf.csv: column latency must hold positive numbers (finite)"


def test_a_table_of_a_header_alone_says_it_holds_no_rows(tmp_path):
    """With --gpu, a header-only table said "no kernel table for GPU 'h100'", as if the rows were another GPU's."""
    pytest.importorskip("pandas")
    folder = _table(tmp_path / "t", GEMM_ROWS.splitlines()[0] + "\n")
    line = one_line_error(run_cli("calibrate", "--kernels", folder, "--gpu", "h100"))
    assert "the kernel tables hold no rows (gemm_perf.csv)" in line


def test_a_gpu_the_tables_lack_names_the_gpus_they_hold(tmp_path):
    pytest.importorskip("pandas")
    folder = _table(tmp_path / "t", GEMM_ROWS.replace("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"))
    line = one_line_error(run_cli("calibrate", "--kernels", folder, "--gpu", "h100"))
    assert line.endswith("no kernel table for GPU 'h100' (the tables' GPUs: a100)")


def test_an_empty_file_says_it_is_empty(tmp_path):
    """An empty gemm_perf.csv said pandas' "cannot read the table: No columns to parse from file"."""
    pytest.importorskip("pandas")
    line = one_line_error(run_cli("calibrate", "--kernels", _table(tmp_path / "t", ""), "--gpu", "h100"))
    assert line == "ironlaw: error: gemm_perf.csv: the file is empty (no header row, no rows)"


def test_a_tab_separated_table_says_how_its_columns_are_split(tmp_path):
    pytest.importorskip("pandas")
    folder = _table(tmp_path / "t", GEMM_ROWS.replace(",", "\t"))
    line = one_line_error(run_cli("calibrate", "--kernels", folder, "--gpu", "h100"))
    assert "its columns are split by tabs, and a table's by commas" in line


def test_gemm_rows_of_a_dtype_the_gpu_lacks_name_the_table_not_an_option_calibrate_lacks(tmp_path):
    """fp8 rows on an A100 ended in "a100 has no fp8 tensor cores …; choose one with --dtype", and calibrate has
    no --dtype: the line now names the table and its rows."""
    pytest.importorskip("pandas")
    folder = _table(tmp_path / "t", GEMM_ROWS.replace("NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB")
                    .replace("bfloat16", "fp8"))
    line = one_line_error(run_cli("calibrate", "--kernels", folder))
    assert line.startswith("ironlaw: error: gemm_perf.csv: 4 rows of gemm fp8, but a100 has no fp8 tensor cores")
    assert "--dtype" not in line


def test_validate_train_says_a_training_step_is_predicted_not_measured():
    """`validate SPEC --phase train` said "no profile yet; run `ironlaw probe`", and after a probe "unknown
    validate phase 'train'", as if train were a typo. The phase is checked first, and the line says why."""
    line = one_line_error(run_cli("validate", "gpt2", "--phase", "train"))
    assert "validate times forward passes (infer, prefill, decode)" in line
    assert "ironlaw analyze SPEC --on HW --phase train" in line


def test_fit_without_runs_says_which_files_it_takes():
    line = one_line_error(run_cli("fit"))
    assert "fit takes the files validate wrote: ironlaw fit RUN.json" in line


def test_a_model_too_big_for_one_gpu_online_suggests_only_options_serve_takes_there():
    """`serve llama3-70b --on h100` said "use a larger --tp or --pp", and `--pp 2` then got "--pp belongs to the
    offline scenario: add --max-throughput"."""
    line = one_line_error(run_cli("serve", "llama3-70b", "--on", "h100"))
    assert "use a larger --tp (or --pp, with --max-throughput)" in line


# ------------------------------------------------------------------ --seq or --batch a captured model would ignore
def test_a_factory_without_seq_refuses_seq_instead_of_ignoring_it():
    """`analyze py:examples/resnet.py:resnet50 --seq 128` printed the batch-1 image estimate as if --seq were
    used; so did validate. The factory's signature is named."""
    pytest.importorskip("torch")
    from pathlib import Path
    spec = f"py:{Path(__file__).parents[1] / 'examples' / 'resnet.py'}:resnet50"
    for verb, on in (("analyze", "h100"), ("validate", "xeon-8480")):
        line = one_line_error(run_cli(verb, spec, "--seq", "128", "--on", on))
        assert "--seq 128 does not apply: resnet50(batch: int = 1, image_size: int = 224) takes no 'seq'" in line


def test_a_factory_without_batch_refuses_a_batch(tmp_path):
    pytest.importorskip("torch")
    (tmp_path / "m.py").write_text("import torch\n\ndef model():\n"
                                   "    return torch.nn.Linear(8, 8), (torch.zeros(2, 8),)\n")
    line = one_line_error(run_cli("analyze", f"py:{tmp_path / 'm.py'}:model", "--batch", "4"))
    assert "--batch 4 does not apply: model() takes no 'batch' parameter" in line
    assert run_cli("analyze", f"py:{tmp_path / 'm.py'}:model").rc == 0


def test_an_onnx_graph_refuses_seq(tmp_path):
    """An ONNX graph's shapes are its own: `analyze onnx:m.onnx --seq 128` read the file and dropped --seq."""
    from ironlaw.core.errors import IronlawError
    from ironlaw.models.workloads.external import onnx_spec
    from ironlaw.models.workloads.registry import Request
    with pytest.raises(IronlawError, match="--seq 128 does not apply: an ONNX graph's shapes are its own"):
        onnx_spec(str(tmp_path / "m.onnx"), Request(spec=f"onnx:{tmp_path / 'm.onnx'}", seq=128))


# ------------------------------------------------------------------ an option only other commands take
@pytest.mark.parametrize("verb, says", [
    ("sweep", "it draws its curves with --plot FILE.svg|.png"),
    ("compare", "ironlaw report SPEC --on HW --html FILE.html --what-if"),
    ("contract", "ironlaw report SPEC --on HW --html FILE.html"),
])
def test_html_on_a_command_without_a_page_says_which_command_draws_one(verb, says):
    """README: "--html … also on analyze, serve"; `sweep … --html` got "No such option '--html'. Did you mean
    '--help'?"."""
    args = (verb,) if verb == "contract" else (verb, "llama3-8b")
    line = one_line_error(run_cli(*args, "--html", "x.html"))
    assert f"{verb} takes no --html: " in line and says in line and "--help'?" not in line


def test_an_option_of_other_commands_names_them_instead_of_help():
    """`workloads list --on h100` and `contract --what-if …` got "Did you mean '--help'?" or nothing; the line
    names the commands that take the option. A mistyped --help keeps its suggestion."""
    line = one_line_error(run_cli("contract", "--what-if", "fusion=elementwise"))
    assert line.endswith("No such option '--what-if'. --what-if is an option of compare, sweep, report "
                         "(`ironlaw COMMAND --help` lists each one's)")
    assert "--kernels is an option of calibrate" in one_line_error(run_cli("sweep", "llama3-8b", "--kernels", "x"))
    assert one_line_error(run_cli("contract", "--hepl")).endswith("Did you mean '--help'?")


@pytest.mark.parametrize("verb", ["analyze", "serve", "search"])
def test_a_command_without_its_workload_says_what_a_spec_is(verb):
    """`ironlaw analyze` said "Missing argument 'SPEC'."; the line now says what a SPEC is and where the built-ins
    are listed."""
    line = one_line_error(run_cli(verb))
    assert f"{verb} needs a workload: ironlaw {verb} SPEC" in line and "ironlaw workloads list" in line


def test_an_option_without_its_value_gets_no_list_of_commands():
    assert one_line_error(run_cli("analyze", "llama3-8b", "--on")) == \
        "ironlaw: error: Option '--on' requires an argument."


def test_a_negative_value_in_a_sweep_list_is_out_of_range_not_unreadable():
    """`sweep … --batch 1,-2` said "cannot read '-2' as a whole number"; it is one, out of range."""
    line = one_line_error(run_cli("sweep", "llama3-8b", "--batch=1,-2"))
    assert line == "ironlaw: error: --batch '1,-2': -2 is out of range (1 … 16,777,216)"


def test_the_library_calibrate_refuses_values_of_the_wrong_kind():
    """`ironlaw.calibrate(None)` raised TypeError, `out=5` AttributeError, `gpu=5` said "hardware: empty name"."""
    import ironlaw
    from ironlaw.core.errors import IronlawError
    with pytest.raises(IronlawError, match="--kernels takes a folder or a file of kernel tables, got None"):
        ironlaw.calibrate(None)
    with pytest.raises(IronlawError, match="--out 5: a hardware profile's file name must end in .toml"):
        ironlaw.calibrate("tables", out=5)
    with pytest.raises(IronlawError, match="a name or a .toml file is a text, got int 5"):
        ironlaw.calibrate("tables", gpu=5)


# ------------------------------------------------------------------ an attention table of one's own, shaped wrong
ATTN_HEAD = "device,batch_size,isl,num_heads,num_key_value_heads,head_dim,window_size,attn_dtype,kv_cache_dtype,step,latency"


def _attention(folder, heads=32, kv=8, head_dim=128, window=0):
    folder.mkdir(parents=True, exist_ok=True)
    rows = [f"NVIDIA H100 80GB HBM3,{b},{s},{heads},{kv},{head_dim},{window},bfloat16,bfloat16,0,"
            f"{b * s * s * 32 * 128 * 4 / 4e14 * 1e3 + 0.01:.6f}" for b in (1, 2, 4, 8) for s in (1024, 2048, 4096)]
    (folder / "context_attention_perf.csv").write_text("\n".join([ATTN_HEAD, *rows]) + "\n")
    return str(folder)


@pytest.mark.parametrize("shape, first", [
    (dict(heads=-32), "num_heads=-32"),                 # was: internal error (TypeError), exit 1
    (dict(head_dim=0), "head_dim=0"),                   # was: internal error (ZeroDivisionError), exit 1
    (dict(window=-5), "window_size=-5"),                # was: no answer in 5 minutes
    (dict(kv=5), "num_key_value_heads=5"),              # was: fitted, 32 query heads over 5 KV heads
])
def test_an_attention_table_with_an_impossible_shape_is_refused_naming_the_row(tmp_path, shape, first):
    pytest.importorskip("pandas")
    line = one_line_error(run_cli("calibrate", "--kernels", _attention(tmp_path / "t", **shape), "--gpu", "h100",
                                  timeout=60))
    assert line.startswith("ironlaw: error: context_attention_perf.csv: 12 of 12 rows break ") and first in line


def test_calibrate_refuses_aiter_for_an_nvidia_gpu_before_reading_tables(tmp_path):
    """`calibrate --kernels DIR --framework aiter --gpu h100` searched the folder and said only that it held no
    aiter table; the GPU is named first, and a folder without the framework's tables names those it holds."""
    pytest.importorskip("pandas")
    line = one_line_error(run_cli("calibrate", "--kernels", str(tmp_path), "--framework", "aiter", "--gpu", "h100"))
    assert line == ("ironlaw: error: --framework aiter: AITER's kernels run on AMD GPUs only, and --gpu h100 is an "
                    "NVIDIA H100 SXM5 80 GB")
    folder = tmp_path / "h100_sxm" / "gemm" / "trtllm" / "1.3"
    folder.mkdir(parents=True)
    (folder / "gemm_perf.csv").write_text(GEMM_ROWS)
    line = one_line_error(run_cli("calibrate", "--kernels", str(tmp_path), "--framework", "vllm"))
    assert "for framework 'vllm' (its tables are trtllm's)" in line
