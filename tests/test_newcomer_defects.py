"""What a newcomer meets beyond bad input: answers that were wrong, options that were ignored and output that
misled, each pinned by the test that failed before its fix."""
import pytest

from conftest import one_line_error, run_cli, run_process


# ------------------------------------------------------------------ energy of a step on several devices
@pytest.mark.parametrize("spec, kw, devices", [
    ("llama3-8b", dict(phase="decode", seq=1024, batch=8, tp=2, gpus=2), 2),     # tensor-parallel inference
    ("allreduce:64MB", dict(gpus=8), 8),                                          # every rank of a collective
])
def test_energy_and_cost_count_every_device_of_the_step(spec, kw, devices):
    import ironlaw
    from ironlaw.law.power import PRICES_USD_PER_DEVICE_HOUR
    est = ironlaw.analyze(spec, on="h100", **kw)
    e = est.energy
    assert e["devices"] == devices
    assert e["joules"] == pytest.approx(e["power_w_per_device"] * est.time_s * devices)
    units = e["units_per_step"]
    usd_h = PRICES_USD_PER_DEVICE_HOUR["h100"][0]
    unit = "tokens" if "usd_per_million_tokens" in e else "samples"
    assert e[f"usd_per_million_{unit}"] == pytest.approx(devices * usd_h * est.time_s / 3600 / units * 1e6)
    one = ironlaw.analyze("llama3-8b", on="h100", phase="decode", seq=1024, batch=8).energy
    assert one["devices"] == 1


# ------------------------------------------------------------------ calibrate --kernels on a user's own folder
def _gemm_csv(path, framework=None):
    """A GEMM table as a user writes it: the documented columns, latency in µs, maybe a framework column."""
    path.parent.mkdir(parents=True, exist_ok=True)
    head = ("framework,version," if framework else "") + "device,gemm_dtype,m,n,k,latency_us"
    rows = [head]
    for i, (m, n, k) in enumerate((m, n, k) for m in (1, 16, 128, 1024, 4096) for n in (4096, 8192)
                                  for k in (4096, 8192)):
        t = 15 + 2 * m * n * k / 600e12 * 1e6 + 2 * n * k / 2.5e12 * 1e6
        rows.append((f"{framework},0.1," if framework else "") + f"My GPU X,bfloat16,{m},{n},{k},{t:.3f}")
    path.write_text("\n".join(rows) + "\n")
    return path


def test_calibrate_reads_a_users_folder_in_any_layout(tmp_path, shared_kernel_fits):
    """README: `ironlaw calibrate --kernels DIR --gpu h100`; a DIR of the user's own (no <framework>/<version>
    folders) was refused as 'no kernel table … for framework trtllm'."""
    import ironlaw
    _gemm_csv(tmp_path / "mine" / "gemm_perf.csv")
    _gemm_csv(tmp_path / "deep" / "a" / "b" / "gemm_perf.csv")
    for folder in ("mine", "deep"):           # naming a framework for them is refused: tests/test_first_steps.py
        res = ironlaw.calibrate(str(tmp_path / folder), gpu="h100")
        assert res.groups == 1 and res.framework == "unstated"
    r = run_cli("calibrate", "--kernels", str(tmp_path / "mine"), "--gpu", "h100")
    assert r.rc == 0, r.err


def test_calibrate_keeps_tables_whose_rows_name_the_framework(tmp_path):
    """A table whose framework column names another framework is not fitted as the one asked for."""
    import ironlaw
    _gemm_csv(tmp_path / "sg" / "gemm_perf.csv", framework="SGLang")
    assert ironlaw.calibrate(str(tmp_path / "sg"), gpu="h100", framework="sglang").groups == 1
    for target in (tmp_path / "sg", tmp_path / "sg" / "gemm_perf.csv"):
        line = one_line_error(run_cli("calibrate", "--kernels", str(target), "--gpu", "h100", "--framework", "vllm"))
        assert "no kernel table for framework 'vllm'" in line and "names sglang" in line, line


def test_calibrate_provenance_names_no_folder_as_framework(tmp_path):
    """A file read alone: the folders above it are not a framework and a version (they read 'nu3 kt')."""
    from ironlaw.measure.calibrate import kerneltable
    t = kerneltable.read(_gemm_csv(tmp_path / "nu3" / "kt" / "gemm_perf.csv"), gpu="h100")[0]
    assert (t.framework, t.version) == ("", "")
    layout = tmp_path / "x" / "h100_sxm" / "gemm" / "vllm" / "0.24.0" / "gemm_perf.csv"
    t = kerneltable.read(_gemm_csv(layout), gpu="h100")[0]
    assert (t.framework, t.version) == ("vllm", "0.24.0")


# ------------------------------------------------------------------ a quantized checkpoint's config.json
QWEN2 = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 3584,
         "intermediate_size": 18944, "num_attention_heads": 28, "num_key_value_heads": 4, "num_hidden_layers": 28,
         "vocab_size": 152064, "max_position_embeddings": 32768, "rms_norm_eps": 1e-6, "rope_theta": 1e6,
         "tie_word_embeddings": False, "torch_dtype": "bfloat16", "hidden_act": "silu"}
W8A8 = {"quant_method": "compressed-tensors", "config_groups": {"group_0": {
    "weights": {"num_bits": 8, "type": "float"}, "input_activations": {"num_bits": 8, "type": "float"}}}}


def _config(tmp_path, name, **extra):
    import json
    p = tmp_path / f"{name}.json"
    p.write_text(json.dumps({**QWEN2, **extra}))
    return f"hf:{p}"


@pytest.mark.parametrize("quant, dtype", [
    ({"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}, "fp8"),
    ({"quant_method": "modelopt", "quant_algo": "FP8"}, "fp8"),
    (W8A8, "fp8"),
])
def test_an_fp8_checkpoint_is_predicted_in_fp8(tmp_path, quant, dtype):
    """quantization_config was ignored: an FP8 checkpoint was priced in bf16, its weights read at twice the bytes."""
    import ironlaw
    plain, quantized = _config(tmp_path, "plain"), _config(tmp_path, "fp8", quantization_config=quant)
    est = ironlaw.analyze(quantized, on="h100", phase="decode", seq=2048, batch=4)
    assert est.graph.dtype == dtype
    assert est.time_s == pytest.approx(ironlaw.analyze(plain, on="h100", phase="decode", seq=2048, batch=4,
                                                       dtype=dtype).time_s)
    assert ironlaw.analyze(quantized, on="h100", phase="decode", seq=2048, dtype="bf16").graph.dtype == "bf16"
    assert ironlaw.train(quantized, on="h100", gpus=8, global_batch=8, zero=3).graph.dtype == "bf16"  # trained in bf16
    srv = ironlaw.serve(quantized, on="h100")
    assert srv.estimate.kv_dtype == "fp8"


def test_a_checkpoint_in_a_format_ironlaw_does_not_build_isone_line_error(tmp_path):
    spec = _config(tmp_path, "awq", quantization_config={"quant_method": "awq", "bits": 4, "group_size": 128})
    line = one_line_error(run_cli("analyze", spec, "--phase", "decode"))
    assert "quant_method 'awq'" in line and "give --dtype" in line, line
    assert run_cli("analyze", spec, "--phase", "decode", "--dtype", "bf16").rc == 0


# ------------------------------------------------------------------ a request longer than the model's context
@pytest.mark.parametrize("argv, says", [
    (["serve", "llama3-8b", "--prompt", "100000"], "--prompt 100000 + --output 256 = 100,256 tokens exceed the "
                                                   "8,192-token context of llama3-8b"),
    (["serve", "llama3-8b", "--prompt", "100000", "--max-throughput"], "8,192-token context of llama3-8b"),
    (["serve", "llama3-8b", "--prompt", "8000", "--output", "500", "--on", "epyc-9654"], "8,500 tokens exceed"),
    (["serve", "gpt2"], "--prompt 1024 + --output 256 = 1,280 tokens exceed the 1,024-token context of gpt2"),
])
def test_serve_refuses_a_request_beyond_the_models_context(argv, says):
    """llama3-8b (8,192 positions) served a 100,000-token prompt; gpt2's refusal named a --seq nobody typed."""
    line = one_line_error(run_cli(*argv))
    assert says in line and "--seq" not in line, line


def test_context_follows_rope_scaling(tmp_path):
    from ironlaw.models.workloads import hfconfig
    yarn = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}
    assert hfconfig.context_tokens({"rope_scaling": yarn}, 40960) == 131072        # Qwen3's YaRN recipe
    assert hfconfig.context_tokens({"rope_scaling": {"rope_type": "llama3", "factor": 8.0}}, 131072) == 131072
    assert hfconfig.context_tokens({"rope_scaling": {"type": "linear", "factor": 2.0}}, 4096) == 8192
    assert hfconfig.context_tokens({}, 8192) == 8192
    import ironlaw
    spec = _config(tmp_path, "yarn", max_position_embeddings=32768, rope_scaling=yarn)
    assert ironlaw.serve(spec, on="h200", prompt=100000, output=1000).estimate.prompt == 100000
    assert ironlaw.serve("gemma3-27b", on="h200", prompt=100000, output=1000).estimate.prompt == 100000


# ------------------------------------------------------------------ --format md
def test_serve_frontier_as_markdown_is_one_table():
    """`serve --sweep-concurrency --format md` printed its padded text rows as separate paragraphs."""
    r = run_cli("serve", "llama3-8b", "--sweep-concurrency", "--slo", "ttft=1s,itl=20ms", "--format", "md")
    assert r.rc == 0, r.err
    rows = [line for line in r.out.splitlines() if line.startswith("|")]
    assert rows[0] == "| concurrency | tokens/s/device | tokens/s/user | TTFT | ITL | J/token | SLO |"
    assert rows[1].startswith("| ---: |") and all(row.count("|") == 8 for row in rows)
    block = r.out.split(rows[0])[1].split("\n\n")[0]             # no blank line inside the table
    assert block.count("\n") == len(rows) - 1 and rows[-1].endswith(("met |", "missed |"))


# ------------------------------------------------------------------ the text headline
def test_the_text_headline_keeps_the_tensor_parallel_name():
    """The graph of `analyze --tp 2` is named 'llama3-8b [tp 2]'; rich read '[tp 2]' as markup and dropped it,
    leaving 'llama3-8b  · decode'."""
    r = run_cli("analyze", "llama3-8b", "--phase", "decode", "--tp", "2", "--gpus", "2")
    assert r.rc == 0, r.err
    assert r.out.splitlines()[0].startswith("llama3-8b [tp 2] · decode · bf16"), r.out.splitlines()[0]


# ------------------------------------------------------------------ speculative decoding
def test_mtp_needs_a_checkpoint_with_an_mtp_module():
    """`serve llama3-8b --speculative method=mtp` priced a DeepSeek-style MTP head Llama does not have (+42%)."""
    line = one_line_error(run_cli("serve", "llama3-8b", "--speculative", "method=mtp,tokens=1,acceptance=0.8"))
    assert "llama3-8b has none" in line and "method=eagle" in line, line
    r = run_cli("serve", "deepseek-v3", "--on", "h200", "--tp", "8", "--dtype", "fp8", "--speculative",
                "method=mtp,tokens=1,acceptance=0.85")
    assert r.rc == 0, r.err


def test_calibrate_refuses_to_save_another_engines_fit_as_the_profiles(tmp_path):
    """`calibrate --framework vllm --out my.toml` wrote vLLM's kernel terms into [calibration], which analyze and
    serve price as TensorRT-LLM's, while `serve --engine vllm --on my.toml` replaced them by the catalog's."""
    folder = _gemm_csv(tmp_path / "mine" / "gemm_perf.csv").parent
    out = tmp_path / "my.toml"
    for fw in ("vllm", "sglang"):
        line = one_line_error(run_cli("calibrate", "--kernels", str(folder), "--gpu", "h100", "--framework", fw,
                                 "--out", str(out)))
        assert f"--framework {fw} --out {out}" in line and "drop --out" in line, line
    assert not out.exists()
    assert run_cli("calibrate", "--kernels", str(folder), "--gpu", "h100", "--out", str(out)).rc == 0
    assert out.exists()


# ------------------------------------------------------------------ a command without its verb
@pytest.mark.parametrize("argv, commands", [
    ([], "analyze, contract, compare"),
    (["hardware"], "list, show"),
    (["workloads"], "list"),
])
def test_a_group_without_its_command_names_the_commands_inone_line_error(argv, commands):
    """`ironlaw` alone printed 'ironlaw: error: Usage: ironlaw [OPTIONS] …' — the whole help squashed into one line.
    (A process of its own: the commands' order is the order a fresh `ironlaw` registers them.)"""
    line = one_line_error(run_process(*argv))
    assert line.startswith("ironlaw: error: missing a command: ") and commands in line and "Usage:" not in line, line


# ------------------------------------------------------------------ --max-throughput off a GPU
@pytest.mark.parametrize("hw", ["xeon-8480", "tpu-v6e", "apple-m3-max"])
def test_max_throughput_is_refused_where_the_engine_does_not_price(hw):
    """`serve --max-throughput --on xeon-8480` priced trtllm-bench on a CPU (630 tokens/s), while the online mode
    and --engine vllm|sglang refuse the engine there."""
    line = one_line_error(run_cli("serve", "llama3-8b", "--on", hw, "--max-throughput"))
    assert "--max-throughput prices trtllm-bench's offline run" in line and f"{hw} is kind" in line, line


# ------------------------------------------------------------------ serving a config only graph capture builds
STABLELM = {"architectures": ["StableLmForCausalLM"], "model_type": "stablelm", "hidden_size": 256,
            "intermediate_size": 1024, "num_attention_heads": 4, "num_key_value_heads": 4, "num_hidden_layers": 2,
            "vocab_size": 1024, "max_position_embeddings": 2048, "hidden_act": "silu",
            "partial_rotary_factor": 0.25, "bos_token_id": 0, "eos_token_id": 0}


@pytest.mark.parametrize("argv", [["serve"], ["search", "--phase", "serve", "--gpus", "2"]])
def test_serving_a_captured_config_names_why_it_is_refused(tmp_path, argv):
    """`serve hf:stablelm/config.json` captured the model with torch (seconds to minutes), then said 'serving needs a
    decoder LLM with prefill and decode phases' of a decoder LLM: the refusal is now the real reason, at once."""
    import json
    path = tmp_path / "config.json"
    path.write_text(json.dumps(STABLELM))
    line = one_line_error(run_cli(argv[0], f"hf:{path}", *argv[1:]))
    assert f"hf:{path} is a 'stablelm' config" in line and "captures with torch" in line, line
    assert f"`ironlaw analyze hf:{path} --phase decode`" in line and "prefill and decode phases" not in line, line


# ------------------------------------------------------------------ help text that names a value the option refuses
def test_moe_routing_help_names_no_default_value_it_refuses():
    """`serve --help` said '--moe-routing … balanced | power_law_<alpha> (…; default uniform)', and
    `--moe-routing uniform` is refused: the default is no routing given (experts drawn uniformly at random)."""
    import typer
    from ironlaw.cli import app
    (opt,) = [p for p in typer.main.get_command(app).commands["serve"].params if "--moe-routing" in p.opts]
    line = one_line_error(run_cli("serve", "qwen3-30b-a3b", "--max-throughput", "--moe-routing", "uniform"))
    assert "unknown MoE routing 'uniform'" in line, line
    assert "default uniform" not in opt.help and "default: none" in opt.help, opt.help


def test_a_cnn_refusing_seq_names_the_users_image_and_the_flag():
    """`analyze resnet50 --opt image=288 --seq 100` said 'the input size is the option image=224, e.g.
    ironlaw.analyze('resnet50', image=288)': the default, not the 288 given, and the library's spelling on the CLI."""
    line = one_line_error(run_cli("analyze", "resnet50", "--opt", "image=288", "--seq", "100"))
    assert "image of 288 pixels" in line and "--opt image=N" in line and "image=224" not in line, line


def test_a_spill_over_two_tiers_names_each_tiers_share():
    """Llama-3.1-405B decode on one h100 (756 GiB): the footprint places 256 GiB in host DRAM and 421 GiB on NVMe, and
    the data term prices each; the explanation said '676 GiB of weights spill to nvme (7 GB/s)'."""
    import ironlaw
    est = ironlaw.analyze("llama3.1-405b", on="h100", phase="decode", seq=1024)
    why = est.bottleneck()["why"]
    assert "677 GiB of weights spill: 256 GiB to host-dram (64 GB/s), 421 GiB to nvme (7 GB/s)" in why, why
    hold = {t["name"]: t["holds"].get("weights", 0) for t in est.to_dict()["footprint"]["tiers"]}
    assert hold["host-dram"] == 256 * 2**30 and round(hold["nvme"] / 2**30) == 421
    one = ironlaw.analyze("dlrm-dcnv2", on="h100", batch=2048).bottleneck()["why"]
    assert "17.8 GiB of tables spill to host-dram (64 GB/s), where their traffic takes" in one, one


def test_a_network_what_if_on_a_graph_without_collectives_is_refused():
    """`compare llama3-8b --phase decode -w network=a100-vidur` answered 'no gain … the terms barely change': an option
    the run ignores, which `analyze --network` refuses on the same graph."""
    line = one_line_error(run_cli("compare", "llama3-8b", "--phase", "decode", "-w", "network=a100-vidur"))
    assert "what-if network=a100-vidur calibrates collectives" in line and "runs none" in line, line
    import ironlaw
    c = ironlaw.compare("llama3-8b", on="a100", phase="decode", what_if="tp=2;network=a100-vidur")
    assert c.after.term("network_s") > 0
