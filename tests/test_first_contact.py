"""Defects a new user meets on first contact: wrong defaults, options that were ignored or refused for the wrong
reason, and bad input that did not end in one line. Each test failed before its fix."""
import pytest

from conftest import one_line_error, run_cli


# ------------------------------------------------------------------ DeepSeek-V3/R1 ship FP8
@pytest.mark.parametrize("name", ["deepseek-v3", "deepseek-r1"])
def test_deepseek_inference_defaults_to_its_fp8_checkpoint(name):
    """The built-in DeepSeek-V3/R1 (block-scaled FP8 checkpoints, quantization_config in their config) were priced
    in bf16 with no --dtype: twice the weight bytes, a 157 GiB decode that spilled to host memory on 8 H200s."""
    import ironlaw
    kw = dict(on="h200", phase="decode", batch=8, tp=8)
    est = ironlaw.analyze(name, **kw)
    assert est.graph.dtype == "fp8"
    assert est.time_s == pytest.approx(ironlaw.analyze(name, dtype="fp8", **kw).time_s)
    assert ironlaw.analyze(name, dtype="bf16", **kw).graph.dtype == "bf16"
    assert ironlaw.serve(name, on="h200", tp=8, max_throughput=True).dtype == "fp8"
    assert ironlaw.analyze("llama3-8b", on="h200", phase="decode").graph.dtype == "bf16"


@pytest.mark.parametrize("argv", [["analyze", "deepseek-r1", "--phase", "decode", "--tp", "8"],
                                  ["serve", "deepseek-v3", "--tp", "8"],
                                  ["serve", "deepseek-v3", "--tp", "8", "--max-throughput"]])
def test_a_checkpoint_dtype_the_device_lacks_is_refused_naming_the_checkpoint(argv):
    line = one_line_error(run_cli(*argv, "--on", "a100"))
    assert "checkpoint (built-in config deepseek-v3.json: quantization_config) is fp8" in line, line
    assert "a100 has no fp8" in line and "--dtype" in line, line
    r = run_cli(*argv, "--on", "a100", "--dtype", "bf16")      # 1.3 TB of bf16 weights: served by 8 A100s or not
    assert "checkpoint" not in r.err and (r.rc == 0 or "does not fit" in r.err), r.err


# ------------------------------------------------------------------ a captured model's backward and optimizer
TINY = '''
import torch
from torch import nn
import torch.nn.functional as F

class Block(nn.Module):
    def __init__(self, d=256, h=4):
        super().__init__()
        self.h, self.qkv, self.o = h, nn.Linear(d, 3 * d), nn.Linear(d, d)
    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        return x + self.o(F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, s, d))

def make(batch=2, seq=128):
    return nn.Sequential(Block(), Block()), (torch.randn(batch, seq, 256),)
'''


def _tiny(tmp_path) -> str:
    pytest.importorskip("torch")
    p = tmp_path / "tiny.py"
    p.write_text(TINY)
    return f"py:{p}:make"


def test_a_captured_models_backward_and_optimizer_ops_are_seen_as_such(tmp_path):
    """Captured ops of the backward are labelled '<aten name> (backward)': attention's backward (and every other
    non-linear one) ran as forward work, so a data-parallel step had no gradient reduction and the optimizer step
    was counted inside each micro-batch."""
    import ironlaw
    from ironlaw.core import passes
    from ironlaw.models import workloads
    spec = _tiny(tmp_path)
    g = workloads.resolve(workloads.Request(spec, phase="train", device="cuda"))
    att = [o for o in g.ops if o.kind == "attention"]
    assert [passes.is_backward_op(o) for o in att] == [False, False, True, True], [o.name for o in att]
    assert passes.forward_of(att[2].name) == att[2].name.removesuffix(" (backward)")
    assert any(passes.is_optimizer(o.name) for o in g.ops)
    b = ironlaw.analyze(spec, on="h100", phase="train", gpus=2).breakdown
    assert b.dp_grad_comm_s > 0 and b.optimizer_s > 0


def test_full_recompute_of_a_captured_model_checkpoints_each_numbered_block(tmp_path):
    """`compare py:… --what-if recompute=full` was refused ('no repeated blocks': captured ops have count 1);
    the rule torch.utils.checkpoint users follow: each numbered child (an nn.Sequential's, a ModuleList's) keeps
    its input and runs its forward again before the backward."""
    import ironlaw
    from ironlaw.core import passes
    from ironlaw.models import workloads
    from ironlaw.models.whatif import apply
    spec = _tiny(tmp_path)
    g = workloads.resolve(workloads.Request(spec, phase="train", device="cuda"))
    from ironlaw.machine import hardware
    full, _ = apply(g, hardware.get("h100"), ["recompute=full"])
    again = [o for o in full.ops if passes.of(o.name) is passes.Pass.RECOMPUTE]
    fwd = [o for o in g.ops if o.module.split(".")[0] in ("0", "1") and passes.of(o.name) is passes.Pass.FORWARD]
    assert len(again) == len(fwd) == 8
    assert sum(o.flops for o in again) == pytest.approx(sum(o.flops for o in fwd))
    x = 1 * 128 * 256 * 4                                    # one block's input: batch 1 × 128 × 256 in fp32
    assert full.footprint["activations"] == pytest.approx(2 * x + sum(
        o.bytes_written for o in g.ops if passes.of(o.name) is passes.Pass.FORWARD and o.module == ""
        and o.kind not in ("collective", "copy")))
    assert run_cli("compare", spec, "--phase", "train", "--on", "h100", "--what-if", "recompute=full").rc == 0
    line = one_line_error(run_cli("analyze", spec, "--phase", "train", "--on", "h100", "--recompute", "full"))
    assert "is captured op by op" in line and "--what-if recompute=full" in line, line


# ------------------------------------------------------------------ parallel degrees inference does not model
@pytest.mark.parametrize("spec, flag", [("llama3-8b", "--pp"), ("llama3-8b", "--dp"), ("mixtral-8x7b", "--ep")])
def test_inference_refuses_a_parallel_degree_by_the_flag_typed(spec, flag):
    """`analyze llama3-8b --phase decode --pp 2` said '--tp 1 × --pp 2 = 2 does not divide --gpus 1' (a --tp and a
    --gpus nobody typed); --ep 2 said it 'does not divide --dp 1'."""
    line = one_line_error(run_cli("analyze", spec, "--phase", "decode", flag, "2"))
    assert line.startswith(f"ironlaw: error: {flag} 2: inference (decode) models tensor parallelism only"), line
    assert "--gpus 1" not in line and "--dp 1" not in line, line


# ------------------------------------------------------------------ --dtype on a collective of BYTES
@pytest.mark.parametrize("spec", ["allreduce:64MB", "alltoall:8MB"])
def test_dtype_on_a_collective_of_bytes_is_refused(spec):
    """`analyze allreduce:64MB --dtype fp8 --gpus 8` printed 'fp8' in its header and the bf16 time (315 µs):
    the option was read by nothing."""
    line = one_line_error(run_cli("analyze", spec, "--gpus", "8", "--dtype", "fp8"))
    assert f"--dtype does not apply to {spec}: its size is BYTES" in line, line
    assert run_cli("analyze", spec, "--gpus", "8").rc == 0


# ------------------------------------------------------------------ an --slo that is no time at all
@pytest.mark.parametrize("slo, value", [("ttft=-1", "-1"), ("itl=inf", "inf"), ("itl=0", "0")])
def test_an_slo_that_is_no_positive_time_is_not_told_to_add_a_unit(slo, value):
    """`serve --slo ttft=-1` answered 'give the time with its unit, e.g. ttft=-1ms', a target it then refused;
    itl=inf was told to write 'itl=infms'."""
    line = one_line_error(run_cli("serve", "llama3-8b", "--slo", slo))
    assert "must be a positive time of at most an hour" in line and f"got '{value}'" in line, line
    assert f"={value}ms" not in line, line
    assert "give the time with its unit, e.g. itl=5ms" in one_line_error(run_cli("serve", "llama3-8b", "--slo", "itl=5"))


# ------------------------------------------------------------------ a plan's devices, named as typed
@pytest.mark.parametrize("argv, says", [
    (["--cp", "3"], "--cp 3 does not divide --gpus 64"),
    (["--dp", "3"], "--dp 3 = 3 devices, but --gpus is 64"),
    (["--tp", "8", "--pp", "3"], "--tp 8 × --pp 3 = 24 does not divide --gpus 64"),
])
def test_a_plan_that_does_not_fill_the_devices_names_the_degrees_typed(argv, says):
    """`--gpus 64 --cp 3` said '--tp 1 × --pp 1 × --cp 3 = 3 does not divide --gpus 64': two degrees nobody gave."""
    line = one_line_error(run_cli("analyze", "llama3-70b", "--phase", "train", "--gpus", "64", *argv))
    assert says in line, line
    assert ("--tp 1" not in line) and ("--pp 1" not in line), line


# ------------------------------------------------------------------ a refusal in JSON names its schema
@pytest.mark.parametrize("argv", [["analyze", "llama3-8b", "--batch", "0"], ["hardware", "show", "nope"],
                                  ["serve", "llama3-8b", "--slo", "itl=5"]])
def test_a_refused_command_in_json_writes_a_document_with_its_schema(argv):
    """`--format json` wrote {"error": …, "exit_code": 2}: the one JSON document without a schema version."""
    from ironlaw.core import schemas
    r = run_cli(*argv, "--format", "json")
    line = one_line_error(r)
    doc = r.json()
    assert doc["schema"] == "ironlaw.error/1" and doc["exit_code"] == 2
    assert line == f"ironlaw: error: {doc['error']}"
    schemas.validate(doc)


# ------------------------------------------------------------------ validate --warmup -1
def test_validate_refuses_a_negative_warmup():
    """`validate … --warmup -1` ran (no warm-up) and wrote "warmup": -1 into its JSON document."""
    from conftest import ROOT
    data = ROOT / "tests" / "data"
    line = one_line_error(run_cli("validate", f"py:{data / 'validate_models.py'}:tiny", "--on",
                                  str(data / "validate-cpu.toml"), "--warmup", "-1"))
    assert line == "ironlaw: error: validate: --warmup must be a whole number of runs, 0 or more, got -1", line


# ------------------------------------------------------------------ a layout search of a model without layers
@pytest.mark.parametrize("spec", ["resnet50", "gemm:1024,1024,1024"])
def test_a_layout_search_of_a_model_without_layers_says_so(spec):
    """`search resnet50 --gpus 8` answered '--seq does not apply to a CNN; drop it' and `search gemm:…` 'gemm has no
    phase train': the search's own defaults held against the user, who typed neither."""
    line = one_line_error(run_cli("search", spec, "--gpus", "8"))
    assert "a layout search needs a transformer built by ironlaw" in line, line
    assert "--seq" not in line and "has no phase" not in line, line


# ------------------------------------------------------------------ inference beyond the model's context
@pytest.mark.parametrize("argv, says", [
    (["analyze", "llama3-8b", "--phase", "prefill", "--seq", "100000"],
     "--seq 100000 exceeds the 8,192-token context of llama3-8b"),
    (["analyze", "llama3-8b", "--phase", "decode", "--seq", "8192"],
     "--seq 8192 + the decoded token exceeds the 8,192-token context of llama3-8b"),
    (["sweep", "llama3-8b", "--phase", "decode", "--seq", "4096,16384"], "--seq 16384 + the decoded token"),
])
def test_inference_beyond_the_models_context_is_refused(argv, says):
    """`analyze llama3-8b --phase prefill --seq 100000` priced a prompt 12× the model's 8,192 positions (6.85 s)
    while `serve llama3-8b --prompt 100000` refused it; learned-position models were already refused."""
    line = one_line_error(run_cli(*argv))
    assert says in line, line
    assert run_cli("analyze", "llama3.1-8b", "--phase", "prefill", "--seq", "100000").rc == 0     # 128K context
    assert run_cli("analyze", "llama3-8b", "--phase", "train", "--seq", "16384", "--gpus", "8", "--dp", "8",   # context
                   "--zero", "3", "--recompute", "full").rc == 0            # extension (one h100 holds no such step)


# ------------------------------------------------------------------ a collective's header names no dtype
@pytest.mark.parametrize("argv, says", [(["allreduce:64MB", "--gpus", "8"], "allreduce:64MB · infer · 8 GPUs on h100:"),
                                        (["alltoall:8MB", "--gpus", "16", "--nodes", "2"],
                                         "alltoall:8MB · infer · 16 GPUs, 2 nodes on h100:")])
def test_a_collectives_header_names_its_devices_not_a_dtype(argv, says):
    """`analyze allreduce:64MB --gpus 8` said 'allreduce:64MB · infer · bf16 on h100': a dtype nobody chose, for a
    size given in bytes (and --dtype is refused there)."""
    for fmt in ("text", "md"):
        r = run_cli("analyze", *argv, "--format", fmt)
        assert r.rc == 0 and says in r.out.splitlines()[0] and "bf16" not in r.out.splitlines()[0], r.out[:300]


# ------------------------------------------------------------------ --format md on the listing commands
@pytest.mark.parametrize("argv, header", [
    (["hardware", "list"], "| name | device | bf16 peak | fp32 peak | memory | bandwidth | TDP |"),
    (["workloads", "list"], "| name | family | phases | description |"),
    (["calibrate", "--kernels", "tests/data/kernel_tables/h100_sxm/gemm", "--gpu", "h100"],
     "| kernel class | rows | median \\|err\\| | p90 \\|err\\| |"),
    (["hardware", "show", "gb200"], "| link | kind | bandwidth | latency | source |"),
    (["sweep", "llama3-8b", "--phase", "decode", "--batch", "1,64"],
     "| hardware | batch | time | tokens/s | bottleneck | J/token | $/M tokens |"),
])
def test_listing_commands_write_markdown_tables(argv, header, shared_kernel_fits):
    """`hardware list --format md` (and `workloads list`, `calibrate`, `hardware show`) said "--format must be one
    of text, json"; `sweep` "one of text, json, csv": the only commands without the Markdown others write.
    the only commands without the Markdown every other command writes."""
    from conftest import ROOT
    r = run_cli(*argv, "--format", "md", cwd=str(ROOT), timeout=600)
    assert r.rc == 0, r.err
    lines = r.out.splitlines()
    at = lines.index(header)
    assert set(lines[at + 1].replace("|", "").split()) <= {"---", "---:"}
    body = [x for x in lines[at + 2:] if x.startswith("| ")]
    assert body and all(x.count(" | ") == header.count(" | ") for x in body), body[:3]
    assert "\x1b[" not in r.out and "┃" not in r.out


# ------------------------------------------------------------------ a model that calls torch.utils.checkpoint
CKPT = '''
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint

class Net(nn.Module):
    def __init__(self, how):
        super().__init__()
        self.how, self.a, self.b = how, nn.Linear(256, 256), nn.Linear(256, 256)
    def forward(self, x):
        f = lambda t: torch.relu(self.a(t))
        x = f(x) if self.how is None else checkpoint(f, x, use_reentrant=self.how)
        return self.b(x)

def plain():
    return Net(None), (torch.randn(2, 128, 256),)
def nonreentrant():
    return Net(False), (torch.randn(2, 128, 256),)
def reentrant():
    return Net(True), (torch.randn(2, 128, 256),)
'''


@pytest.mark.parametrize("variant", ["nonreentrant", "reentrant"])
def test_a_model_that_checkpoints_is_captured_as_its_forward(tmp_path, variant):
    """`analyze py:… --phase train` of a model calling torch.utils.checkpoint failed: 'the model's training step
    failed on fake tensors: AssertionError: Please convert all Tensors to FakeTensors first …' (the recompute ran
    on the module's own parameters, outside the capture). The region is captured as forward ops; recompute is
    the what-if's."""
    pytest.importorskip("torch")
    import torch.utils.checkpoint as ck
    from ironlaw.models import workloads
    p = tmp_path / "ckpt.py"
    p.write_text(CKPT)
    graph = lambda fn: workloads.resolve(workloads.Request(f"py:{p}:{fn}", phase="train", device="cuda"))
    g, ref = graph(variant), graph("plain")
    assert [o.name for o in g.ops] == [o.name for o in ref.ops]
    assert sum(o.flops for o in g.ops) == pytest.approx(sum(o.flops for o in ref.ops))
    assert any("1 torch.utils.checkpoint region(s) captured as forward ops" in n for n in g.meta["notes"])
    assert ck.CheckpointFunction.__name__ == "CheckpointFunction"          # restored after the capture
    assert run_cli("analyze", f"py:{p}:{variant}", "--phase", "train", "--on", "h100").rc == 0


# ------------------------------------------------------------------ a model file typed without its spec prefix
@pytest.mark.parametrize("spec, says", [
    ("{tmp}/net.py:make", "for a PyTorch module give the spec prefix, py:{tmp}/net.py:make"),
    ("{tmp}/net.py", "the function that returns (module, args), py:{tmp}/net.py:FACTORY"),
    ("{tmp}/model.onnx", "for an ONNX model give the spec prefix, onnx:{tmp}/model.onnx"),
])
def test_a_model_file_without_its_prefix_is_told_the_spec_to_type(spec, says, tmp_path):
    """`analyze net.py:make` said "unknown workload prefix 'net.py:' (did you mean: py:?)", `analyze model.onnx`
    listed the built-in workloads, and `analyze net.py` suggested 'py:net.py', a spec refused for its missing
    factory (a config.json was already told 'hf:')."""
    spec, says = (x.replace("{tmp}", str(tmp_path)) for x in (spec, says))
    line = one_line_error(run_cli("analyze", spec))
    assert line == f"ironlaw: error: unknown workload '{spec}': {says}" or says in line, line
    assert "did you mean" not in line and "known:" not in line, line


# ------------------------------------------------------------------ the serving search's --prompt, by its name
@pytest.mark.parametrize("prompt", ["0", "-5"])
def test_the_serving_searchs_prompt_is_refused_by_its_own_name(prompt):
    """`search llama3-8b --phase serve --prompt 0` said '--seq must be a positive whole number, got 0': an option
    the serving search refuses ('--seq belongs to the training search')."""
    line = one_line_error(run_cli("search", "llama3-8b", "--phase", "serve", "--prompt", prompt))
    assert line == f"ironlaw: error: --prompt must be a whole number between 1 and 4,194,304, got {prompt}", line


# ------------------------------------------------------------------ a collective over --nodes 0
@pytest.mark.parametrize("nodes", ["0", "-1"])
def test_a_collective_over_no_nodes_is_refused(nodes):
    """`analyze allreduce:64MB --gpus 8 --nodes 0` priced one node (315 µs): 0 read as 'not given'."""
    line = one_line_error(run_cli("analyze", "allreduce:64MB", "--gpus", "8", "--nodes", nodes))
    assert line == f"ironlaw: error: --nodes must be a positive whole number, got {nodes}", line


# ------------------------------------------------------------------ two devices where one is taken
@pytest.mark.parametrize("argv", [["analyze", "llama3-8b"], ["serve", "llama3-8b"], ["hardware", "show"]])
def test_two_devices_where_one_is_taken_say_so(argv):
    """`analyze llama3-8b --on h100,b200` said "unknown hardware 'h100,b200' (did you mean: h200, h100, b200?)":
    two devices the catalog has, called unknown."""
    on = ["h100,b200"] if argv[0] == "hardware" else ["--on", "h100,b200"]
    line = one_line_error(run_cli(*argv, *on))
    assert "'h100,b200' names 2 devices; this command takes one" in line and "unknown" not in line, line
    assert "did you mean" in one_line_error(run_cli("hardware", "show", "h100,nope"))


# ------------------------------------------------------------------ a concurrency the sweep would ignore
def test_a_concurrency_with_the_concurrency_sweep_is_refused_unless_a_report_marks_it(tmp_path):
    """`serve --sweep-concurrency --concurrency 8` printed the same frontier as without --concurrency: the
    option was silently ignored. With --html it marks the report's current point."""
    line = one_line_error(run_cli("serve", "llama3-8b", "--sweep-concurrency", "--concurrency", "8"))
    assert line.startswith("ironlaw: error: --concurrency 8 is one point; --sweep-concurrency sweeps"), line
    page = tmp_path / "serve.html"
    r = run_cli("serve", "llama3-8b", "--sweep-concurrency", "--concurrency", "8", "--html", str(page))
    assert r.rc == 0 and page.exists(), r.err


# ------------------------------------------------------------------ --format md on the measuring commands
@pytest.mark.torch
def test_probe_validate_and_fit_print_markdown_tables(monkeypatch, tmp_path, capsys):
    """`probe`, `validate` and `fit` said "--format must be one of text, json, got 'md'" where every other command
    prints Markdown: their tables come out as pipe tables, their lines as paragraphs with no rich markup."""
    pytest.importorskip("torch")
    import ironlaw.measure.probe as probe_mod
    from ironlaw.cli import main
    from test_probe import fake_probe
    from test_schemas import PROFILE, TINY

    def md(argv) -> str:
        try:
            main(argv)
        except SystemExit as e:
            assert e.code in (0, None)
        out = capsys.readouterr().out
        assert "[bold]" not in out and "[yellow]" not in out and "┃" not in out and "━" not in out, out
        return out

    monkeypatch.setenv("IRONLAW_HOME", str(tmp_path))
    monkeypatch.setattr(probe_mod, "run", lambda **kw: fake_probe())
    out = md(["probe", "--quick", "--no-references", "--format", "md"])
    assert "**GEMM peak per dtype (best shape)**" in out and "| dtype | peak | note |" in out, out
    runs = []
    for b in (1, 2):
        runs.append(str(tmp_path / f"b{b}.json"))
        out = md(["validate", TINY, "--batch", str(b), "--on", str(PROFILE), "--repeats", "2", "--warmup", "1",
                  "--threads", "1", "--format", "md", "--out", runs[-1]])
        assert "| kind | ops | predicted | measured | spread (IQR) | error |" in out, out
        assert "| **total** |" not in out and "| total |" in out, out
    out = md(["fit", runs[0], "--hold-out", runs[1], "--on", str(PROFILE), "--format", "md"])
    assert "**HELD OUT (never fitted)**" in out and "| case | measured | CV |" in out, out


# ------------------------------------------------------------------ a collective of fractional bytes
@pytest.mark.parametrize("size, says", [("1.5B", "1.5B (1.5 bytes)"), ("0.5", "0.5 (0.5 bytes)"),
                                        ("1.1KiB", "1.1KiB (1126.4 bytes)")])
def test_a_collective_of_fractional_bytes_is_refused(size, says):
    """`analyze allreduce:1.5B --gpus 8` priced a message of one and a half bytes: bytes are whole."""
    line = one_line_error(run_cli("analyze", f"allreduce:{size}", "--on", "a100", "--gpus", "8"))
    assert line == f"ironlaw: error: allreduce message size must be a whole number of bytes, got {says}", line


def test_a_collective_of_whole_bytes_written_with_a_fraction_is_taken():
    import ironlaw
    t = ironlaw.analyze("allreduce:0.1KB", on="a100", gpus=8).time_s     # 0.1 × 1000 is 100.00000000000001
    assert t == ironlaw.analyze("allreduce:100", on="a100", gpus=8).time_s
    assert ironlaw.analyze("allreduce:1.5KB", on="a100", gpus=8).time_s == \
        ironlaw.analyze("allreduce:1500", on="a100", gpus=8).time_s


# ------------------------------------------------------------------ torch's private checkpoint names
def test_a_torch_without_the_private_checkpoint_names_captures_or_says_why(tmp_path, monkeypatch):
    """Capture replaces torch.utils.checkpoint's private CheckpointFunction and
    _checkpoint_without_reentrant_generator; on a torch without them it raised AttributeError for every model."""
    pytest.importorskip("torch")
    import torch.utils.checkpoint as ck
    from ironlaw.core.errors import IronlawError
    from ironlaw.models import workloads
    p = tmp_path / "ckpt.py"
    p.write_text(CKPT)
    for name in ("CheckpointFunction", "_checkpoint_without_reentrant_generator"):
        monkeypatch.delattr(ck, name)
    graph = lambda fn: workloads.resolve(workloads.Request(f"py:{p}:{fn}", phase="train", device="cuda"))
    assert any(o.kind == "matmul" for o in graph("plain").ops)
    assert not hasattr(ck, "CheckpointFunction")                      # nothing left behind
    for variant in ("nonreentrant", "reentrant"):
        with pytest.raises(IronlawError) as e:
            graph(variant)
        msg = str(e.value)
        assert "has no torch.utils.checkpoint._checkpoint_without_reentrant_generator, " \
               "torch.utils.checkpoint.CheckpointFunction" in msg and "\n" not in msg, msg


# ------------------------------------------------------------------ a price of "-0"
def test_a_price_or_grid_of_minus_zero_is_zero_not_negative():
    """`serve --price-per-gpu-hour -0 --format json` wrote "usd_per_million_output_tokens": -0.0."""
    import math
    d = run_cli("serve", "llama3-8b", "--price-per-gpu-hour", "-0", "--grid-gco2-per-kwh", "-0", "--format",
                "json").json()["energy"]
    for k in ("usd_per_gpu_hour", "usd_per_million_output_tokens", "grid_gco2_per_kwh",
              "gco2_per_million_output_tokens"):
        assert d[k] == 0 and math.copysign(1.0, d[k]) == 1.0, (k, d[k])


# ------------------------------------------------------------------ a recommender that does not fit its devices
@pytest.mark.parametrize("argv, says", [
    (["--gpus", "8"], "this plan needs 390 GiB per device, 310 GiB more than the 79.6 GiB of h100 (weights 48.7 GiB, "
                      "gradients 48.7 GiB, optimizer 292 GiB, activations 77.8 KiB); try --zero 3 (or more devices)"),
    (["--gpus", "2", "--zero", "3"], "dlrm-dcnv2 cannot fit on 2 × h100 even fully sharded (--zero 3): 195 GiB per "
                                     "device exceeds 79.6 GiB by 115 GiB; use more devices"),
])
def test_a_recommender_training_that_does_not_fit_says_so(argv, says):
    """`analyze dlrm-dcnv2 --phase train --gpus 8` said "internal error: KeyError: 'tokens'": the refusal priced
    full recomputation, which needs a transformer's layers, and named options DLRM refuses."""
    line = one_line_error(run_cli("analyze", "dlrm-dcnv2", "--phase", "train", "--on", "h100", *argv))
    assert line == f"ironlaw: error: {says}", line


# ------------------------------------------------------------------ a sweep over seq at 80 columns
def test_a_sweep_over_seq_keeps_the_seq_column_at_80_columns(monkeypatch, capsys):
    """`sweep llama3-8b --phase decode --seq 128,256 --batch 1` at 80 columns dropped the seq column first: two
    rows 'h100 1 7.09 ms' and 'h100 1 7.1 ms' with nothing to tell them apart."""
    from ironlaw.cli import main
    monkeypatch.setenv("COLUMNS", "80")
    main(["sweep", "llama3-8b", "--phase", "decode", "--on", "h100", "--seq", "128,256", "--batch", "1"])
    out = capsys.readouterr().out
    head = next(ln for ln in out.splitlines() if "hardware" in ln and "batch" in ln)
    assert "seq" in head.split() and all(len(ln) <= 80 for ln in out.splitlines()), out
    rows = [ln.split() for ln in out.splitlines() if ln.strip().startswith("h100")]
    assert [r[2] for r in rows] == ["128", "256"], out


# ------------------------------------------------------------------ a run of one and a half tokens
def test_a_fractional_token_count_is_refused():
    """`analyze … --phase train --train-tokens 1.5` priced 'training run: 1.5 tokens = 1 steps of 8,192 tokens'."""
    argv = ["analyze", "llama3-8b", "--on", "h100", "--phase", "train", "--gpus", "8", "--zero", "3"]
    line = one_line_error(run_cli(*argv, "--train-tokens", "1.5"))
    assert line == "ironlaw: error: --train-tokens must be a whole number, got '1.5'", line
    r = run_cli(*argv, "--train-tokens", "0.1K")
    assert r.rc == 0 and "training run: 100 tokens = 1 step of 8,192 tokens" in r.out, r.err


# ------------------------------------------------------------------ a price given as text to the API
@pytest.mark.parametrize("kw, says", [
    ({"price_per_gpu_hour": "2"}, "--price-per-gpu-hour must be a non-negative number of USD, got '2'"),
    ({"grid_gco2_per_kwh": "400"}, "--grid-gco2-per-kwh must be between 0 and 5000 gCO2/kWh, got '400'"),
])
def test_a_price_given_as_text_is_refused_quoted(kw, says):
    """`ironlaw.serve(…, price_per_gpu_hour="2")` said "must be a non-negative number of USD, got 2": 2 is one."""
    import ironlaw
    from ironlaw.core.errors import IronlawError
    with pytest.raises(IronlawError) as e:
        ironlaw.serve("llama3-8b", on="h100", **kw)
    assert str(e.value) == says
    line = one_line_error(run_cli("serve", "llama3-8b", "--price-per-gpu-hour", "-1"))
    assert line.endswith("got -1"), line


# ------------------------------------------------------------------ --nodes without --gpus
@pytest.mark.parametrize("argv, says", [
    (["--phase", "decode", "--nodes", "2"], "--nodes 2 needs --tp N --gpus N with N a multiple of 2"),
    (["--phase", "decode", "--tp", "2", "--nodes", "4"],
     "--nodes 4 needs --tp N --gpus N with N a multiple of 4 (got --tp 2)"),
    (["--phase", "train", "--tp", "2", "--nodes", "4"],
     "--nodes 4 needs --gpus N, a multiple of 4 (the parallel degrees given make 2 devices)"),
    (["--phase", "train", "--gpus", "6", "--nodes", "4"], "--gpus 6 does not divide evenly over --nodes 4"),
])
def test_nodes_without_gpus_names_what_was_typed(argv, says):
    """`analyze llama3-8b --phase decode --nodes 2` said '--gpus 1 does not divide evenly over --nodes 2': a --gpus
    nobody typed."""
    line = one_line_error(run_cli("analyze", "llama3-8b", "--on", "h100", *argv))
    assert line == f"ironlaw: error: {says}", line


# ------------------------------------------------------------------ a what-if beyond the model's context
@pytest.mark.parametrize("phase, limit", [("prefill", 8192), ("decode", 8191)])
def test_a_what_if_seq_beyond_the_context_is_refused_as_seq_is(phase, limit):
    """`compare llama3-8b --what-if seq=999999` priced a 999,999-token prefill of a model with 8,192 positions
    ('21002.96× slower') while `analyze --seq 999999` refuses it."""
    line = one_line_error(run_cli("compare", "llama3-8b", "--phase", phase, "--what-if", "seq=999999"))
    assert "what-if seq 999999" in line and "8,192-token context of llama3-8b" in line, line
    assert f"use what-if seq <= {limit}" in line, line
    assert run_cli("compare", "llama3-8b", "--phase", phase, "--what-if", f"seq={limit}").rc == 0


# ------------------------------------------------------------------ expert options on a dense model's search
@pytest.mark.parametrize("argv, flag", [(["--expert-imbalance", "2"], "--expert-imbalance"),
                                        (["--moe-a2a-overlap"], "--moe-a2a-overlap")])
def test_a_layout_search_refuses_expert_options_on_a_dense_model(argv, flag):
    """`search llama3-8b --expert-imbalance 2` ranked llama3-8b's layouts as if nothing were typed (no layout has
    EP > 1), while analyze and serve refuse the option on a dense model."""
    line = one_line_error(run_cli("search", "llama3-8b", "--on", "h100", "--gpus", "8", *argv))
    assert line == f"ironlaw: error: {flag} shapes the routed experts of MoE layers; llama3-8b has no experts", line
    import ironlaw
    best = ironlaw.search("qwen3-30b-a3b", on="h100", gpus=8, global_batch=64, seq=1024, expert_imbalance=1.5, top=1)
    assert best.top[0]["time_s"] > 0


# ------------------------------------------------------------------ --capture's default length
def test_a_captured_config_is_priced_at_the_analytic_builders_default_length():
    """`analyze hf:config.json` priced a decoder at seq 1024 and the same command with --capture at seq 512: the
    two ways of reading one config answered different questions when --seq was left out."""
    pytest.importorskip("transformers")
    import ironlaw
    from pathlib import Path
    spec = f"hf:{Path(__file__).parent / 'data' / 'gpt2_config.json'}"
    built = ironlaw.analyze(spec, on="h100")
    captured = ironlaw.analyze(spec, on="h100", capture=True)
    assert built.graph.meta["seq"] == captured.graph.meta["seq"] == 1024


# ------------------------------------------------------------------ a misspelt keyword of analyze and train
@pytest.mark.parametrize("fn, typo, near", [("analyze", "bach", "batch"), ("train", "globl_batch", "global_batch"),
                                            ("analyze", "tp_degre", "tp")])
def test_a_misspelt_keyword_names_the_keyword_meant(fn, typo, near):
    """`ironlaw.analyze("llama3-8b", bach=4)` said only '(the builder options of llama3-8b: none)': the keywords
    analyze and train take (batch, global_batch, tp …) were never suggested, as the other functions' are."""
    import ironlaw
    with pytest.raises(TypeError, match=f"unexpected keyword argument '{typo}'") as e:
        getattr(ironlaw, fn)("llama3-8b", on="h100", **{typo: 4})
    assert "did you mean: " in str(e.value) and near in str(e.value).split("did you mean: ")[1], e.value
    with pytest.raises(TypeError, match=r"\(the builder options of llama3-8b: none\)"):
        getattr(ironlaw, fn)("llama3-8b", on="h100", zzz=4)


# ------------------------------------------------------------------ a spec that is no string
@pytest.mark.parametrize("spec, shown", [(42, "int 42"), (None, "NoneType None"), (["llama3-8b"], "list ['llama3-8b']")])
def test_a_spec_that_is_no_string_is_named_not_called_empty(spec, shown):
    """`ironlaw.analyze(42)` said 'workload: empty spec': the user gave something, just not a string."""
    import ironlaw
    with pytest.raises(ironlaw.IronlawError, match="a spec is a string") as e:
        ironlaw.analyze(spec, on="h100")
    assert f"got {shown};" in str(e.value) and "empty" not in str(e.value), e.value
    with pytest.raises(ironlaw.IronlawError, match="workload: empty spec"):
        ironlaw.analyze("  ", on="h100")


# ------------------------------------------------------------------ serving a model that decodes nothing
@pytest.mark.parametrize("argv, says", [
    (["serve", "resnet50"], "serve: resnet50 is no decoder LLM (its phases: infer, train)"),
    (["serve", "gemm:64,64,64", "--max-throughput"], "serve: gemm:64,64,64 is no decoder LLM (a gemm: spec)"),
    (["search", "bert-large", "--phase", "serve"],
     "search --phase serve: bert-large is no decoder LLM (its phases: infer, train)")])
def test_serving_a_model_without_decode_says_what_serving_needs(argv, says):
    """`serve resnet50` said 'resnet50 has no phase 'decode'; it supports: infer, train': serve has no --phase,
    and the line did not say that serving needs a decoder LLM."""
    line = one_line_error(run_cli(*argv, "--on", "h100"))
    assert line.startswith(f"ironlaw: error: {says}; serving prices a prompt's prefill"), line
    assert "hf:config.json" in line and "no phase" not in line, line


# ------------------------------------------------------------------ a network calibration nothing reads
def test_a_network_calibration_on_one_device_without_collectives_is_refused():
    """`analyze llama3-8b --network a100-vidur` on one H100 printed the plain estimate: no collective read the
    calibration it named."""
    line = one_line_error(run_cli("analyze", "llama3-8b", "--on", "h100", "--network", "a100-vidur"))
    assert line == ("ironlaw: error: --network a100-vidur calibrates collectives; llama3-8b prefill on one device "
                    "runs none: add --tp N --gpus N (or a collective spec) or drop --network"), line
    for argv in (["llama3-8b", "--tp", "8", "--gpus", "8"], ["allreduce:64MB", "--gpus", "8"]):
        assert run_cli("analyze", *argv, "--on", "a100", "--network", "a100-vidur").rc == 0


# ------------------------------------------------------------------ a missing model file where torch is missing
def test_a_missing_model_file_is_said_before_a_missing_torch(tmp_path):
    """Without PyTorch, `analyze py:nothere.py:make` said 'this spec needs PyTorch to capture the model': the user
    installs torch, only to learn that the file was never there."""
    import os
    fake = tmp_path / "fake"
    (fake / "torch").mkdir(parents=True)
    (fake / "torch" / "__init__.py").write_text("raise ImportError(\"No module named 'torch'\")\n")
    env = {"PYTHONPATH": os.pathsep.join([str(fake), os.environ.get("PYTHONPATH", "")])}
    missing = tmp_path / "nothere.py"
    line = one_line_error(run_cli("analyze", f"py:{missing}:make", "--on", "h100", env=env))
    assert line == f"ironlaw: error: py:{missing}:make: no such file '{missing}'", line
    line = one_line_error(run_cli("analyze", f"onnx:{tmp_path / 'm.onnx'}", "--on", "h100", env=env))
    assert line == f"ironlaw: error: onnx:{tmp_path / 'm.onnx'}: no such file", line
    (tmp_path / "there.py").write_text("def make():\n    pass\n")
    line = one_line_error(run_cli("analyze", f"py:{tmp_path / 'there.py'}:make", "--on", "h100", env=env))
    assert "this spec needs PyTorch to capture the model" in line, line


# ------------------------------------------------------------------ the latency bottleneck's launches
def test_a_latency_bound_why_names_the_launch_cost_the_terms_carry():
    """`analyze gemm:64,64,64 --on h100` said '1 ops × 5 µs launch/dispatch' (the catalog's op_latency) beside an
    L_lat of 2.54 µs in its own terms table (the calibrated GEMM launch): the explanation contradicted the numbers."""
    import numpy as np
    import ironlaw
    from ironlaw.core.units import fmt_time
    est = ironlaw.analyze("gemm:64,64,64", on="h100")
    why = est.bottleneck()["why"]
    assert est.bottleneck()["resource"] == "latency"
    assert f"1 ops × {fmt_time(float(est.term('latency_s')))} launch/dispatch" in why, why
    mixed = ironlaw.analyze("llama3-8b", on="h100", phase="decode", seq=4, tp=8, gpus=8)
    lat, n = float(mixed.term("latency_s")), int(np.sum(mixed.cols.count))
    assert mixed.bottleneck()["resource"] == "latency"
    assert f"{fmt_time(lat)} of launch/dispatch over {n:,} ops" in mixed.bottleneck()["why"], mixed.bottleneck()


# ------------------------------------------------------------------ per-op views of an estimate over arrays
@pytest.mark.parametrize("view", ["bottleneck", "rows", "top_ops", "by_kind", "footprint", "to_dict", "to_frame"])
def test_a_per_op_view_of_many_configurations_is_one_clear_error(view):
    """`ironlaw.analyze(..., batch=np.arange(1, 9)).bottleneck()` ended in 'TypeError: only 0-dimensional arrays can
    be converted to Python scalars' (rows, top_ops, by_kind, footprint alike); to_dict and to_frame said 'index a
    sweep first', an operation an estimate does not have."""
    import numpy as np
    import ironlaw
    est = ironlaw.analyze("llama3-8b", on="h100", phase="decode", batch=np.arange(1, 9))
    for kind in (ironlaw.IronlawError, ValueError):
        with pytest.raises(kind, match=rf"^{view}\(\) describes one configuration; this estimate holds 8 ") as e:
            getattr(est, view)()
        assert "index a sweep" not in str(e.value) and "time_s" in str(e.value)
    assert est.time_s.shape == (8,)
    assert ironlaw.analyze("llama3-8b", on="h100", phase="decode", batch=8).bottleneck()["resource"] == "bandwidth"


# ------------------------------------------------------------------ a --top past the last op
@pytest.mark.parametrize("fmt, top, says", [("text", "100000", "all 14 ops by time"), ("md", "100000", "All 14 ops:"),
                                            ("text", "5", "top 5 ops by time"), ("md", "5", "Top 5 ops:")])
def test_the_top_ops_title_counts_the_rows_it_shows(fmt, top, says):
    """`analyze llama3-8b --top 100000` titled its table of 14 rows 'top 100000 ops by time'."""
    r = run_cli("analyze", "llama3-8b", "--on", "h100", "--top", top, "--format", fmt)
    assert r.rc == 0 and says in r.out, r.out
    assert "100000" not in r.out


# ------------------------------------------------------------------ a result typed at the prompt
def test_a_result_printed_at_the_prompt_is_a_line_not_a_megabyte():
    """`est = ironlaw.analyze("llama3-8b")` then `est` at a Python prompt printed 144 kB (the hardware's every
    calibration row and source, each op's arrays); a serve result 1 MB, a comparison 368 kB, the contract 695 kB."""
    import ironlaw
    est = ironlaw.analyze("llama3-8b", on="h100", phase="decode")
    assert repr(est) == f"Analysis('llama3-8b', 'decode', 'bf16' on 'h100': time_s={est.time_s!r})"
    step = ironlaw.train("llama3-8b", on="h100", gpus=8, global_batch=64, zero=1)
    assert repr(step) == f"Training(tp=1, pp=1, dp=8, gpus=8: step_s={step.step_s!r}, mfu={step.mfu!r})"
    cmp = ironlaw.compare("llama3-8b", on="h100", vs_hardware="b200")
    assert repr(cmp).startswith("Comparison('hardware=b200': ") and f"speedup={cmp.speedup!r}" in repr(cmp)
    assert repr(est.hw) == "Hardware('h100', 'NVIDIA H100 SXM5 80 GB', kind='gpu')"
    for r in (est, step, cmp, ironlaw.contract(on="h100"), ironlaw.serve("llama3-8b", on="h100"),
              ironlaw.serve("llama3-8b", on="h100", max_throughput=True)):
        assert len(repr(r)) < 10_000, (type(r).__name__, len(repr(r)))



def test_one_op_is_counted_in_the_singular():
    one = run_cli("analyze", "gemm:1,1,1", "--on", "h100")
    assert one.rc == 0 and "1 op invocation (1 distinct row)" in one.out, one.out
    many = run_cli("analyze", "llama3-8b", "--on", "h100")
    assert many.rc == 0 and " op invocations (" in many.out and " distinct rows)" in many.out, many.out


def test_fit_names_a_missing_run_file_before_a_missing_profile(tmp_path):
    r = run_cli("fit", str(tmp_path / "nothere.json"), env={"IRONLAW_HOME": str(tmp_path / "home")})
    assert "nothere.json: no such validate JSON file" in one_line_error(r)
