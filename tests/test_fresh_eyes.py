"""What an engineer who runs vLLM, SGLang or TensorRT-LLM benchmarks tries first with ``ironlaw serve`` and
``search``, and what each gets: an option of theirs named in ironlaw's terms, a line that reads as it is meant."""
import pytest

from conftest import one_line_error, run_cli


@pytest.mark.parametrize("flag", ["--rate", "--request-rate", "--qps"])
def test_an_arrival_rate_is_refused_naming_the_closed_loop_serve_runs(flag):
    """``vllm bench serve --request-rate 5`` is an open arrival rate; ``serve`` runs a closed loop at a set
    concurrency: the refusal names that loop and --slo, not click's nearest option names."""
    line = one_line_error(run_cli("serve", "llama3.1-8b", "--on", "h100", flag, "5"))
    assert line.startswith(f"ironlaw: error: serve takes no {flag}: it runs a closed loop of --concurrency N")
    assert "an open arrival rate is not modelled" in line and "--slo" in line and "--dtype" not in line


def test_the_benchmark_clients_concurrency_flag_names_serves():
    line = one_line_error(run_cli("serve", "llama3.1-8b", "--on", "h100", "--max-concurrency", "8"))
    assert line.endswith("serve takes no --max-concurrency: requests in flight are --concurrency N")


def test_the_compute_reason_quotes_the_rate_its_time_implies():
    """A 4096³ bf16 GEMM on an H100: 2·4096³ = 137 GFLOP. The reason says the time and the rate the GEMM reaches
    (η within) against the peak, as the bandwidth reason does, so that the FLOPs over the rate it quotes give the
    time it explains (the peak alone divides to 139 µs, not the 161 µs priced)."""
    import ironlaw
    from ironlaw.core.units import fmt, fmt_time
    est = ironlaw.analyze("gemm:4096,4096,4096", on="h100")
    flops, compute_s = 2.0 * 4096 ** 3, float(est.term("compute_s"))
    assert float(est.graph.flops) == flops
    rate = flops / compute_s
    assert 0.5 * 989.4e12 < rate < 989.4e12
    why = est.bottleneck()["why"]
    assert (f"{fmt(flops, 'FLOP')} take {fmt_time(compute_s)} at {fmt(rate, 'FLOP/s')}, "
            f"{100 * rate / 989.4e12:.0f}% of its 989 TFLOP/s bf16 peak;") in why, why


def test_a_one_thread_probe_says_one_thread():
    """``probe --threads 1`` titles its profile and sources each number with '(1 thread)', singular."""
    from test_probe import fake_probe
    from ironlaw.measure.calibrate import build
    doc = build.profile(fake_probe(threads=1), calibrate_fit=False)
    assert "(1 thread)," in doc["title"] and "1 thread):" in doc["latency"]["source"]
    assert "threads" not in doc["title"] + doc["latency"]["source"]


def test_a_hardware_comparison_names_the_terms_that_move():
    """``compare llama3-8b --phase decode --on h100 --vs-hardware b200``: D_vol, O and the launches stay while the
    data term falls to ×0.58 and compute to ×0.02; the verdict names the terms' ratios and what stays."""
    import ironlaw
    c = ironlaw.compare("llama3-8b", on="h100", phase="decode", vs_hardware="b200")
    v = c.verdict()
    ratio = float(c.after.term("data_s")) / float(c.before.term("data_s"))
    assert f"data ×{ratio:.2g}" in v and "(the same D_vol, O and launches)" in v, v
    assert "barely change" not in v


@pytest.mark.parametrize("feature", [("--prefix-hit", "0.5"),
                                     ("--speculative", "method=eagle,tokens=3,acceptance=0.7")])
def test_a_feature_priced_without_chunked_prefill_names_vllms_chunking_not_a_chunk_never_given(feature):
    """``serve … --engine vllm --prefix-hit 0.5``: vLLM's scheduler chunks on its own, so the refusal says so and
    names the engines that prefill apart instead of asking to drop a --chunk never given; a --chunk given is named
    with its value."""
    line = one_line_error(run_cli("serve", "llama3.1-8b", "--on", "h100", "--engine", "vllm", *feature))
    assert f"{feature[0]} is modelled without chunked prefill, which the engine's scheduler runs" in line
    assert "vLLM V1: always on" in line and "--engine trtllm or sglang" in line and "drop --chunk" not in line
    given = one_line_error(run_cli("serve", "llama3.1-8b", "--on", "h100", "--chunk", "512", *feature))
    assert given.endswith("drop --chunk 512")


QWEN25_VL_7B = {   # Qwen/Qwen2.5-VL-7B-Instruct config.json's text fields (the vision tower's abridged)
    "architectures": ["Qwen2_5_VLForConditionalGeneration"], "model_type": "qwen2_5_vl", "hidden_act": "silu",
    "hidden_size": 3584, "intermediate_size": 18944, "max_position_embeddings": 128000, "num_attention_heads": 28,
    "num_hidden_layers": 28, "num_key_value_heads": 4, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
    "sliding_window": 32768, "use_sliding_window": False, "tie_word_embeddings": False, "vocab_size": 152064,
    "max_window_layers": 28, "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]},
    "vision_config": {"depth": 32, "hidden_size": 1280, "out_hidden_size": 3584, "patch_size": 14}}


@pytest.mark.parametrize("nested", [False, True])
def test_a_qwen_vl_config_decodes_as_its_qwen2_language_model(tmp_path, nested):
    """``analyze hf:Qwen2.5-VL-7B/config.json --phase decode`` prices the VLM's language model (a capture would run
    the whole VLM's forward, which has no decode phase). Its language model is Qwen2-7B's layout (q/k/v biases,
    no sliding window): built as one, the vision tower not modelled (as gemma3's and llama4's), the text fields at
    the top level or, as transformers 5 writes them, under text_config."""
    import json
    from ironlaw.models.workloads import Request, resolve
    text = {k: v for k, v in QWEN25_VL_7B.items() if k not in ("architectures", "model_type", "vision_config")}
    vl = dict(QWEN25_VL_7B, text_config=dict(text, model_type="qwen2_5_vl_text")) if nested else QWEN25_VL_7B
    (tmp_path / "vl.json").write_text(json.dumps(
        {k: v for k, v in vl.items() if k in ("architectures", "model_type", "vision_config", "text_config")}
        if nested else vl))
    (tmp_path / "lm.json").write_text(json.dumps(dict(text, model_type="qwen2", architectures=["Qwen2ForCausalLM"])))
    g, lm = (resolve(Request(f"hf:{tmp_path / f}", phase="decode", seq=4096, batch=8)) for f in ("vl.json", "lm.json"))
    assert g.meta["params"] == lm.meta["params"] == 7_615_616_512          # Qwen2-7B's published count
    assert g.meta["kv_cache_bytes"] == lm.meta["kv_cache_bytes"] == 8 * 4096 * 28 * 2 * 4 * 128 * 2
    assert sum(op.total_bytes * op.count for op in g.ops) == sum(op.total_bytes * op.count for op in lm.ops)


def test_the_library_refuses_an_arrival_rate_as_the_command_does():
    """``ironlaw.serve(..., rate=5)`` names the closed loop of concurrency=N that serve runs."""
    import ironlaw
    with pytest.raises(ironlaw.IronlawError, match=r"'request_rate' \(serve runs a closed loop of concurrency=N"):
        ironlaw.serve("llama3-8b", on="h100", request_rate=5)


@pytest.mark.parametrize("fmt", ["fp8_e4m3", "fp8_e5m2"])
def test_vllms_fp8_kv_cache_names_point_to_fp8(fmt):
    """``--kv-dtype fp8_e4m3`` / ``fp8_e5m2`` (vLLM's and SGLang's --kv-cache-dtype choices, which they do store)
    point to --kv-dtype fp8, which prices either format."""
    line = one_line_error(run_cli("serve", "llama3.1-8b", "--on", "h100", "--engine", "vllm", "--kv-dtype", fmt))
    assert line.endswith(f"--kv-dtype {fmt}: vLLM's and SGLang's name of an FP8 KV cache (--kv-cache-dtype); "
                         "ironlaw prices either format as --kv-dtype fp8 (one byte an element)")


@pytest.mark.parametrize("flag,value,says", [
    ("--tensor-parallel-size", "2", "tensor parallelism is --tp N"),
    ("--gpu-memory-utilization", "0.9", "the engine's memory knob is --memory-fraction F"),
    ("--mem-fraction-static", "0.8", "the engine's memory knob is --memory-fraction F"),
    ("--kv-cache-dtype", "fp8", "the KV cache's dtype is --kv-dtype D"),
    ("--max-num-seqs", "64", "sequences in flight are --max-batch N with --max-throughput, --concurrency N online"),
    ("--max-num-batched-tokens", "4096", "the step token budget is --max-num-tokens N"),
    ("--num-prompts", "100", "requests queued are --requests N"),
    ("--model", "llama3.1-8b", "the model is the first argument: ironlaw serve SPEC --on HW"),
])
def test_an_engines_own_flag_names_serves(flag, value, says):
    """vLLM's, SGLang's and trtllm-bench's flags, the first a user of them types, each name serve's own option."""
    line = one_line_error(run_cli("serve", "llama3.1-8b", "--on", "h100", flag, value))
    assert line.startswith(f"ironlaw: error: serve takes no {flag}: {says}")


@pytest.mark.parametrize("command,flag,says", [
    ("analyze", "--tensor-model-parallel-size", "tensor parallelism is --tp N"),
    ("analyze", "--global-batch-size", "sequences per optimizer step are --global-batch N"),
    ("search", "--use-distributed-optimizer", "the distributed optimizer is --zero 1"),
    ("search", "--recompute-granularity", "activation recomputation is --recompute selective|full"),
])
def test_a_megatron_flag_names_the_option(command, flag, says):
    """Megatron-LM's flags, which a Megatron/NeMo user types first, each name analyze's and search's option."""
    value = [] if flag == "--use-distributed-optimizer" else ["2" if "size" in flag else "full"]
    line = one_line_error(run_cli(command, "llama3-8b", "--phase", "train", "--on", "h100", "--gpus", "8", flag,
                                  *value))
    assert line.startswith(f"ironlaw: error: {command} takes no {flag}: {says}")


def test_the_chunked_ttft_reads_as_chunks():
    """vLLM's chunked TTFT reads as the prompt's tokens in chunks beside the decode batch."""
    import ironlaw
    why = ironlaw.serve("llama3.1-8b", on="h100", engine="vllm", prompt=20000, output=100,
                        concurrency=4).to_dict()["ttft_why"]
    assert "= 3 mixed steps of" in why
    assert why.endswith("the prompt's 20,000 tokens in chunks of 8,188 beside the decode batch")


@pytest.mark.parametrize("flag,value", [("--enable-expert-parallel", []), ("--ep-size", ["4"])])
def test_the_engines_expert_parallel_flag_names_ep_under_tp_attention(flag, value):
    """vLLM's --enable-expert-parallel without data parallelism (SGLang's --ep-size) is EP under TP attention, which
    ``serve --engine vllm|sglang --ep N`` prices without --attention-dp; the line names both layouts."""
    line = one_line_error(run_cli("serve", "qwen3-30b-a3b", "--on", "h100", "--engine", "vllm", flag, *value))
    assert line.startswith(f"ironlaw: error: serve takes no {flag}: expert parallelism is --ep N equal to --tp")
    assert "without --attention-dp vLLM's and SGLang's EP under TP attention" in line
    ok = run_cli("serve", "qwen3-30b-a3b", "--on", "h100", "--engine", "vllm", "--max-throughput", "--tp", "4",
                 "--ep", "4", "--prompt", "256", "--output", "64", "--requests", "16")
    assert ok.rc == 0, ok.err
