"""What a newcomer meets: bad input, contradicting options and the library's front door. Each case is one line
on stderr and exit 2 (or one IronlawError), with the user's own numbers in the message."""
import pytest

from conftest import one_line_error, run_cli


@pytest.mark.parametrize("argv,typed", [
    (["analyze", "llama3-8b", "--price-per-gpu-hour", "-5"], "got -5"),
    (["analyze", "llama3-8b", "--expert-imbalance", "-5"], "got -5"),
    (["sweep", "llama3-8b", "--batch", "1", "--grid-gco2-per-kwh", "-3"], "got -3"),
    (["serve", "llama3-8b", "--max-throughput", "--kv-fraction", "2"], "got 2"),
    (["serve", "llama3-8b", "--prefix-hit", "2"], "got 2"),
    (["analyze", "llama3-8b", "--phase", "train", "--train-tokens", "1T", "--checkpoint-s", "-5"], "got -5"),
])
def test_a_float_option_is_echoed_as_typed(argv, typed):
    line = one_line_error(run_cli(*argv))
    assert line.endswith(typed), line          # "got -5", never "got -5.0"


# ------------------------------------------------------------------ search --serve-engine
def test_search_serve_engine_prices_each_layout_as_serve_engine_does():
    import ironlaw
    from ironlaw.core.schemas import validate
    for engine in ("vllm", "sglang"):
        res = ironlaw.search("llama3-8b", phase="serve", on="h100", gpus=1, tp=1, dtype="fp8", top=1,
                             serve_engine=engine)
        doc = res.to_dict()
        validate(doc)
        assert doc["settings"] == {"serve_engine": engine}
        one = ironlaw.serve("llama3-8b", on="h100", max_throughput=True, engine=engine, dtype="fp8", kv_dtype="fp8")
        assert res.top[0]["tokens_per_s_per_gpu"] == pytest.approx(one.output_tokens_per_s, rel=1e-9)
    default = ironlaw.search("llama3-8b", phase="serve", on="h100", gpus=1, tp=1, dtype="fp8", top=1)
    assert default.to_dict()["settings"] == {"serve_engine": "trtllm"}
    assert default.top[0]["tokens_per_s_per_gpu"] != res.top[0]["tokens_per_s_per_gpu"]


def test_search_serve_engine_schema_refuses_an_unknown_framework():
    import jsonschema
    import ironlaw
    from ironlaw.core.schemas import validate
    doc = ironlaw.search("llama3-8b", phase="serve", on="h100", gpus=1, tp=1, top=1).to_dict()
    doc["settings"]["serve_engine"] = "tgi"
    with pytest.raises(jsonschema.ValidationError):
        validate(doc)


@pytest.mark.parametrize("argv,says", [
    (["search", "llama3-8b", "--serve-engine", "vllm"], "--serve-engine belongs to the serving search"),
    (["search", "llama3-8b", "--phase", "serve", "--engine", "vllm"], "--serve-engine vllm"),
    (["search", "llama3-8b", "--phase", "serve", "--serve-engine", "tgi"], "unknown --serve-engine 'tgi'"),
])
def test_search_serve_engine_bad_input(argv, says):
    assert says in one_line_error(run_cli(*argv))


# ------------------------------------------------------------------ options that would be ignored
@pytest.mark.parametrize("extra,flag", [
    (["--concurrency", "32"], "--concurrency"), (["--slo", "ttft=2s"], "--slo"),
    (["--sweep-concurrency"], "--sweep-concurrency"), (["--chunk", "512"], "--chunk"),
    (["--prefix-hit", "0.5"], "--prefix-hit"), (["--disaggregate", "prefill=2,decode=2"], "--disaggregate"),
    (["--speculative", "method=draft,draft=llama3.2-1b,tokens=4,acceptance=0.7"], "--speculative"),
    (["--max-seq", "4096"], "--max-seq"), (["--serial"], "--serial"),
])
def test_serve_max_throughput_refuses_an_online_option(extra, flag):
    line = one_line_error(run_cli("serve", "llama3-8b", "--on", "h100", "--max-throughput", *extra))
    assert f"{flag} belongs to the online scenario" in line


@pytest.mark.parametrize("argv,says", [
    (["analyze", "gemm:64,64,64", "--seq", "128"], "--seq does not apply to gemm:64,64,64"),
    (["analyze", "gemm:64,64,64", "--batch", "4"], "--batch does not apply to gemm:64,64,64"),
    (["analyze", "gemv:64,64", "--batch", "4"], "--batch does not apply to gemv:64,64"),
    (["sweep", "gemm:64,64,64", "--batch", "1,2"], "--batch does not apply"),
    (["analyze", "allreduce:64MB", "--gpus", "8", "--batch", "4"], "--batch does not apply to allreduce:64MB"),
    (["analyze", "allreduce:64MB", "--on", "a100", "--gpus", "1"], "over one device moves nothing"),
    (["analyze", "allreduce:64MB", "--gpus", "8", "--tp", "2"], "--tp does not apply to one collective"),
])
def test_one_kernel_or_collective_refuses_sizes_it_does_not_read(argv, says):
    assert says in one_line_error(run_cli(*argv))


@pytest.mark.parametrize("flag", [["--recompute", "full"], ["--zero", "1"], ["--fsdp"], ["--grad-fp32"],
                                  ["--cp", "2", "--gpus", "2"], ["--offload-activations", "2"],
                                  ["--cuda-graph", "attn"], ["--global-batch", "64"]])
def test_inference_refuses_a_training_option(flag):
    line = one_line_error(run_cli("analyze", "llama3-8b", "--phase", "decode", *flag))
    assert f"{flag[0]} shapes a training step; llama3-8b decode does not read it" in line


@pytest.mark.parametrize("argv,says", [
    (["analyze", "llama3-8b", "--capture"], "--capture applies to hf: specs"),
    (["analyze", "llama3-8b", "--micro-batch", "4", "--batch", "2"], "--micro-batch 4 and --batch 2 contradict"),
    (["analyze", "llama3-8b", "--phase", "train", "--micro-batch", "0"], "--micro-batch must be a positive whole "
                                                                          "number, got 0"),
])
def test_analyze_contradictions(argv, says):
    assert says in one_line_error(run_cli(*argv))


def test_micro_batch_alone_is_the_batch():
    import ironlaw
    a = ironlaw.analyze("llama3-8b", on="h100", phase="decode", micro_batch=4)
    b = ironlaw.analyze("llama3-8b", on="h100", phase="decode", batch=4, micro_batch=4)
    assert a.time_s == b.time_s == ironlaw.analyze("llama3-8b", on="h100", phase="decode", batch=4).time_s


@pytest.mark.parametrize("extra,flag", [
    (["--global-batch", "7"], "--global-batch"), (["--seq", "100"], "--seq"), (["--grad-fp32"], "--grad-fp32"),
    (["--no-tp-comm-overlap"], "--tp-comm-overlap"), (["--recompute", "full"], "--recompute"),
    (["--expert-imbalance", "2"], "--expert-imbalance"), (["--nodes", "1"], "--nodes"),
])
def test_the_serving_search_refuses_a_training_option(extra, flag):
    line = one_line_error(run_cli("search", "llama3-8b", "--phase", "serve", "--gpus", "8", *extra))
    assert f"{flag} belongs to the training search (--phase train)" in line


@pytest.mark.parametrize("extra,flag", [(["--prompt", "5"], "--prompt"), (["--output", "5"], "--output"),
                                        (["--slo", "ttft=2s"], "--slo")])
def test_the_training_search_refuses_a_serving_option(extra, flag):
    line = one_line_error(run_cli("search", "llama3-8b", "--gpus", "8", *extra))
    assert f"{flag} belongs to the serving search (--phase serve)" in line


def test_the_search_defaults_are_unchanged():
    import ironlaw
    r = ironlaw.search("llama3-8b", on="h100", gpus=8, top=1)
    assert (r.setup["global_batch"], r.setup["seq"]) == (1024, 4096)
    assert r.setup["settings"]["tp_comm_overlap"] is True and r.setup["settings"]["grad_fp32"] is False
    s = ironlaw.search("llama3-8b", phase="serve", on="h100", gpus=1, tp=1, top=1)
    assert (s.setup["prompt"], s.setup["output"]) == (1024, 256)


# ------------------------------------------------------------------ the library's front door
FRONT = ["analyze", "train", "compare", "sweep", "serve", "search"]


@pytest.mark.parametrize("fn", FRONT)
def test_an_unknown_keyword_is_one_ironlaw_error_and_a_type_error(fn):
    import ironlaw
    for kind in (ironlaw.IronlawError, TypeError):
        with pytest.raises(kind, match="unexpected keyword argument 'concurency'") as e:
            getattr(ironlaw, fn)("llama3-8b", on="h100", concurency=2)
        assert "\n" not in str(e.value)


@pytest.mark.parametrize("fn,kw,says", [
    ("analyze", {"dtype": 8}, "unknown dtype '8'"),
    ("analyze", {"price_per_gpu_hour": "x"}, "--price-per-gpu-hour must be a non-negative number"),
    ("analyze", {"grid_gco2_per_kwh": "x"}, "--grid-gco2-per-kwh must be between"),
    ("serve", {"engine": 7}, "unknown --engine '7'"),
    ("search", {"phase": None}, "unknown search phase 'None'"),
    ("search", {"phase": "serve", "top": "2"}, "--top must be between 1 and 1000, got '2'"),
    ("compare", {"what_if": 5}, "--what-if takes a text or a list of texts, got 5"),
    ("compare", {"what_if": ";;"}, "--what-if: empty"),
    ("sweep", {"batch": 5.5}, "a batch or seq grid is a text"),
])
def test_a_bad_value_is_one_ironlaw_error(fn, kw, says):
    import ironlaw
    with pytest.raises(ironlaw.IronlawError) as e:
        getattr(ironlaw, fn)("llama3-8b", on="h100", **kw)
    assert says in str(e.value) and "\n" not in str(e.value)


def test_calibrate_on_a_table_with_a_header_alone_isone_line_error(tmp_path):
    pytest.importorskip("pandas")
    d = tmp_path / "h100_sxm" / "gemm" / "trtllm" / "1.0"
    d.mkdir(parents=True)
    (d / "gemm_perf.csv").write_text("framework,version,device,op_name,kernel_source,gemm_dtype,m,n,k,latency\n")
    line = one_line_error(run_cli("calibrate", "--kernels", str(tmp_path)))
    assert "the kernel tables hold no rows (gemm_perf.csv)" in line


@pytest.mark.parametrize("argv,says", [
    (["serve", "llama3-8b", "--on", "epyc-9654", "--engine", "vllm", "--max-throughput"],
     "--engine vllm: vLLM is modelled on GPUs"),
    (["serve", "llama3-8b", "--on", "tpu-v5p", "--engine", "sglang", "--max-throughput"],
     "--engine sglang: SGLang is modelled on GPUs"),
    (["search", "llama3-8b", "--on", "h100,h200", "--global-batch", "64"], "the training search takes one device"),
    (["analyze", "{tmp}/config.json"], "give the spec prefix, hf:{tmp}/config.json"),
])
def test_more_newcomer_mistakes(argv, says, tmp_path):
    (tmp_path / "config.json").write_text("{}")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in argv]
    assert says.replace("{tmp}", str(tmp_path)) in one_line_error(run_cli(*argv))


@pytest.mark.parametrize("argv,says", [
    (["compare", "llama3-8b", "--vs-hardware", "b200", "--what-if", "hardware=h200"],
     "--vs-hardware b200 and the what-if hardware= both name the 'after' device"),
    (["sweep", "llama3-8b", "--on", "h100,h100", "--batch", "1"], "--on names h100 twice"),
])
def test_contradicting_devices(argv, says):
    assert says in one_line_error(run_cli(*argv))


def test_probe_threads_zero_is_refused_not_the_default():
    pytest.importorskip("torch")
    from ironlaw.core.errors import IronlawError
    from ironlaw.measure import probe
    with pytest.raises(IronlawError, match="--threads must be a whole number of threads from 1 to 4,096, got 0"):
        probe.run(quick=True, threads=0)


def test_every_option_of_every_command_says_what_it_does():
    import click
    import typer
    from ironlaw.cli import app

    def commands(group, prefix=""):
        for name, cmd in group.commands.items():
            if isinstance(cmd, click.Group):
                yield from commands(cmd, prefix + name + " ")
            else:
                yield prefix + name, cmd
    silent = [f"{name} {p.opts[0]}" for name, cmd in commands(typer.main.get_command(app))
              for p in cmd.params if isinstance(p, click.Option) and not (p.help or "").strip()]
    assert not silent, silent


def test_a_builder_option_given_twice_is_refused():
    line = one_line_error(run_cli("analyze", "resnet50", "--opt", "image=288", "--opt", "image=300"))
    assert "--opt image given twice (288 and 300)" in line


def test_a_what_if_range_prints_its_bounds_in_full():
    line = one_line_error(run_cli("compare", "llama3-8b", "--what-if", "batch=0"))
    assert line.endswith("what-if batch: size must be in [1, 16,777,216], got 0"), line


def test_the_serving_search_names_its_own_engine_flag():
    line = one_line_error(run_cli("search", "llama3-8b", "--phase", "serve", "--on", "epyc-9654", "--serve-engine", "vllm"))
    assert line.startswith("ironlaw: error: --serve-engine vllm: vLLM is modelled on GPUs"), line
