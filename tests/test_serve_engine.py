"""``serve --engine trtllm|vllm|sglang``: each framework's kernel terms (catalog/engine/<framework>/<gpu>.toml, fitted
on aiconfigurator-core 0.12.0's per-framework kernel tables) and its scheduler's defaults as its source sets them."""
from __future__ import annotations

from dataclasses import replace

import pytest

from ironlaw import api
from ironlaw.machine import engines, hardware
from ironlaw.models.serving import frameworks, online, step, throughput

SPEC, ARGS = "llama3-8b", dict(prompt=1000, output=1000, dtype="fp8")


def test_unknown_engine_is_one_line_and_exit_2(cli):
    r = cli("serve", SPEC, "--on", "h100", "--engine", "tgi")
    assert r.rc == 2 and "unknown --engine 'tgi'" in r.err and "vllm" in r.err
    assert "Traceback" not in r.err and len(r.err.strip().splitlines()) == 1


def test_vllm_prices_gemm_and_attention_with_its_own_kernel_terms():
    hw = hardware.get("h100")
    eng = frameworks.select("vllm", hw)
    trt, vl = hw.calibration, eng.hw.calibration
    assert vl.shape("matmul")["bf16"] != trt.shape("matmul")["bf16"]
    assert vl.kernel["attention_generation_bf16_kv_bf16"] != trt.kernel["attention_generation_bf16_kv_bf16"]
    assert "vllm 0.24.0" in vl.provenance["gemm bf16"]["version"]
    assert "trtllm" in trt.provenance["gemm bf16"]["version"]
    assert "gemm bf16" in eng.kernels.own and eng.kernels.versions == ("vllm 0.24.0",)
    # vLLM's tables time no FP8-math context attention: those classes stay TensorRT-LLM's, and the line says so
    assert any(g.startswith("context attention fp8") for g in eng.kernels.borrowed)
    assert "TensorRT-LLM's for the" in eng.kernels.line()
    # the MoE layer is vLLM's own fused MoE where its tables time it (tests/test_engine_moe.py)
    assert vl.provenance["moe fp8"]["version"].endswith("vllm 0.24.0")
    assert "trtllm" in trt.provenance["moe fp8"]["version"]


def test_a_gpu_without_the_frameworks_tables_says_so():
    eng = frameworks.select("sglang", "mi300x")
    assert not eng.kernels.own and "mi300x has no SGLang kernel tables" in eng.kernels.line()
    assert eng.hw.calibration == hardware.get("mi300x").calibration


@pytest.mark.parametrize("gpu,offline,tokens,seqs,graph", [
    ("h100", True, 16384, 1024, 512),     # ≥ 70 GiB, not A100: LLM class 16384 / 1024
    ("h100", False, 8192, 1024, 512),     # OpenAI server 8192 / 1024
    ("a100", True, 8192, 256, 512),       # A100 keeps the small defaults: 8192 / 256
    ("l4", False, 2048, 256, 512),        # < 70 GiB: server 2048 / 256
])
def test_vllm_scheduler_defaults_are_its_sources(gpu, offline, tokens, seqs, graph):
    s = frameworks.vllm(hardware.get(gpu), offline)
    assert (s.max_num_batched_tokens, s.max_num_seqs, s.block_tokens, s.memory_fraction) == (tokens, seqs, 16, 0.9)
    assert s.cuda_graph_batches[:5] == (1, 2, 4, 8, 16) and s.cuda_graph_batches[-1] == graph
    assert s.cuda_graph_batches[s.cuda_graph_batches.index(256):][:3] == (256, 272, 288) and s.mixed_steps


def test_sglang_scheduler_defaults_are_its_sources():
    s = frameworks.sglang(hardware.get("h100"), tp=1)          # 80 GiB: the < 90 GiB tier
    assert (s.max_num_batched_tokens, s.cuda_graph_batches[-1], s.block_tokens, s.mixed_steps) == (8192, 256, 1, False)
    mem = hardware.get("h100").memory[hardware.get("h100").device_tier].capacity_bytes / 2**20
    assert s.memory_fraction == round((mem - max(512 + 8192 * 1.5 + 256 * 2 + 1024 / 8, 10240)) / mem, 3)
    assert s.cuda_graph_batches[:6] == (1, 2, 4, 8, 12, 16)
    assert frameworks.sglang(hardware.get("h100"), tp=4).cuda_graph_batches[-1] == 512
    assert frameworks.sglang(hardware.get("b200"), tp=1).max_num_batched_tokens == 16384


def test_vllm_max_throughput_runs_on_vllms_limits_and_kernels():
    d = api.serve(SPEC, "h100", max_throughput=True, engine="vllm", **ARGS).to_dict()
    assert d["engine"]["name"] == "vllm"
    assert (d["engine"]["max_batch_size"], d["engine"]["max_num_tokens"]) == (1024, 16384)
    assert "vLLM defaults" in d["engine"]["source"]
    assert d["constants"]["cuda_graph_batches"][-1] == 512
    assert "carried from the TensorRT-LLM H100 fit" in d["engine"]["host_constants"]
    t = api.serve(SPEC, "h100", max_throughput=True, **ARGS).to_dict()
    assert t["engine"]["name"] == "trtllm" and t["engine"]["source"] == "trtllm-bench"
    assert d["output_tokens_per_s"] != t["output_tokens_per_s"]


def test_the_default_engine_is_todays_path():
    new = api.serve(SPEC, "h100", max_throughput=True, **ARGS)
    old = throughput.max_throughput(SPEC, "h100", 1000, 1000, dtype="fp8")
    assert new.time_s == old.time_s and new.limits == old.limits and new.constants == old.constants
    on = api.serve(SPEC, "h100", concurrency=16, engine="trtllm").to_dict()
    ref = online.estimate(SPEC, "h100", 1024, 256, 16)
    assert on["tokens_per_s"] == ref.tokens_per_s and on["engine"]["name"] == "trtllm"


def test_online_vllm_uses_its_chunk_block_and_seq_limit(cli):
    s = api.serve(SPEC, "h100", concurrency=16, engine="vllm")
    # the 16 decode tokens take their share of the 8192-token budget first; the prompt chunk gets the rest
    assert s.estimate.chunk == 8192 - 16 and s.to_dict()["capacity"]["page_tokens"] == 16
    assert api.serve(SPEC, "h100", concurrency=16, engine="sglang").estimate.chunk is None
    r = cli("serve", SPEC, "--on", "l4", "--engine", "vllm", "--concurrency", "300", "--dtype", "fp8")
    assert r.rc == 2 and "--concurrency 300 exceeds vLLM's 256" in r.err
    r = cli("serve", SPEC, "--on", "h100", "--engine", "vllm", "--max-throughput", "--kv-fraction", "0.9")
    assert r.rc == 2 and "--kv-fraction is TensorRT-LLM's" in r.err


def test_engine_in_text_and_json(cli):
    r = cli("serve", SPEC, "--on", "h100", "--engine", "sglang", "--concurrency", "8")
    assert r.rc == 0, r.err
    lines = r.out.splitlines()
    assert lines[1].startswith("engine: SGLang") and any(x.startswith("scheduler:") for x in lines[2:5])
    r = cli("serve", SPEC, "--on", "h100", "--engine", "vllm", "--max-throughput", "--dtype", "fp8", "--format", "json")
    assert r.rc == 0 and r.json()["engine"]["name"] == "vllm"


def test_a_step_that_does_not_mix_pays_its_prefill_and_decode_apart():
    run = throughput.engine_run(SPEC, "h100", 1000, 1000, 64, dtype="fp8").run
    apart = step.EngineRun(**{**vars(run), "constants": replace(run.constants, mixed_steps=False)})
    pre = step.step_seconds(apart, 0, 500.0, 0.5, pad=False)[0]
    dec = step.step_seconds(apart, 64, 0.0, 0.0, pad=True)[0]
    assert step.step_seconds(apart, 64, 500.0, 0.5, pad=False)[0] == pytest.approx(pre + dec)
    assert step.step_seconds(run, 64, 500.0, 0.5, pad=False)[0] < pre + dec


def test_padding_follows_the_engines_capture_sizes():
    assert step.padded(269, 4096) == 384                                     # TensorRT-LLM's list
    vllm_sizes = frameworks.vllm(hardware.get("h100"), True).cuda_graph_batches
    assert step.padded(269, 1024, vllm_sizes) == 272 and step.padded(600, 1024, vllm_sizes) == 600


def test_every_engine_file_names_its_data():
    files = sorted(p for p in engines.ENGINE_DIR.glob("*/*.toml") if p.parent.name in engines.ENGINES)
    assert files, "no engine kernel files"          # (a release's own files: tests/test_engine_release.py)
    for p in files:
        cal = engines.load(p.stem, p.parent.name)
        for group, prov in cal["provenance"].items():
            assert p.parent.name in prov["version"] and "aiconfigurator-core 0.12.0" in prov["version"]
            assert prov["rows_fitted"] > 0 and prov["rows_held_out"] > 0 and prov["license"] == "Apache-2.0"


def test_sglang_kv_pool_is_its_memory_fraction_less_weights():
    """SGLang sizes its KV pool as memory · mem_fraction_static − weights (model_runner profile_max_num_token):
    its reserve holds the activations, so the workspace is not taken a second time; vLLM's profiled activations
    come out of its gpu_memory_utilization share besides the weights."""
    sg = api.serve("qwen3-32b", "h100", prompt=1024, output=256, max_throughput=True, engine="sglang")
    vl = api.serve("qwen3-32b", "h100", prompt=1024, output=256, max_throughput=True, engine="vllm")
    m_sg, m_vl = sg.to_dict()["memory_per_gpu"], vl.to_dict()["memory_per_gpu"]
    cap = m_sg["device_memory_bytes"]
    frac = frameworks.sglang(hardware.get("h100")).memory_fraction
    assert m_sg["free_bytes"] == pytest.approx(frac * cap - m_sg["weights_bytes"])
    assert m_vl["free_bytes"] == pytest.approx(0.9 * cap - m_vl["weights_bytes"] - m_vl["workspace_bytes"])
    assert m_sg["workspace_bytes"] > 0 and not throughput.FITTED.reserve_holds_workspace


def test_a_chunk_must_fit_beside_the_decode_tokens_in_the_step_budget(cli):
    """A mixed step carries the decode batch's tokens first and the prompt chunk in what they leave of
    max_num_tokens (TensorRT-LLM's MicroBatchScheduler ctxTokensCapacity, vLLM's token budget): a ``--chunk`` that
    cannot fit is refused with the numbers given, one that fits is priced."""
    # 8 H100 at 128 + 1024 tokens: trtllm-bench's max_num_tokens 4,608, and 4,500 sequences fit the KV cache
    args = ("serve", "llama3.1-8b", "--on", "h100", "--dtype", "fp8", "--tp", "8", "--prompt", "128", "--output",
            "1024", "--chunk")
    r = cli(*args, "512", "--concurrency", "4500")
    assert r.rc == 2 and r.err.count("\n") == 1, r.err
    assert ("--chunk 512 (capped at --prompt 128) with --concurrency 4500: a step carries 4,500 decode tokens and "
            "the 128-token chunk, 4,628 tokens, over the engine's max_num_tokens 4,608") in r.err
    assert "use --chunk 108 or less" in r.err
    assert cli(*args, "128", "--concurrency", "4400").rc == 0
    r = cli("serve", "llama3.1-8b", "--on", "h100", "--engine", "vllm", "--prompt", "8192", "--chunk", "8192",
            "--concurrency", "16")
    assert r.rc == 2 and "over the engine's max_num_tokens 8,192" in r.err and "use --chunk 8176 or less" in r.err


def test_vllms_own_chunk_is_what_each_concurrency_leaves_of_the_budget():
    """``serve --engine vllm`` chunks the prompt to what the decode tokens leave (``mixed_chunk``) at every
    concurrency a sweep visits, never the first concurrency's chunk carried to a larger batch."""
    eng = frameworks.select("vllm", "h100", 1)
    kw = frameworks.online_kwargs(eng, 1, None)
    for c in (1, 16, 48):
        assert online.estimate("llama3.1-8b", eng.hw, 8192, 128, c, **kw).chunk == 8192 - c
    front = api.serve("llama3.1-8b", "h100", engine="vllm", prompt=8192, output=128, sweep_concurrency=True).to_dict()
    assert front["points"][-1]["concurrency"] > 1


def _own_gpu(tmp_path, vendor: str | None) -> str:
    """The MI300X's catalog file as a user's own: a title that names no maker, and ``vendor`` if given."""
    text = hardware.CATALOG_DIR.joinpath("mi300x.toml").read_text()
    text = text.replace('name = "mi300x"', 'name = "my-gpu"').replace("AMD Instinct MI300X 192 GB", "My MI300X box")
    text = text.replace('kind = "gpu"', 'kind = "gpu"' + (f'\nvendor = "{vendor}"' if vendor else ""))
    path = tmp_path / f"my-gpu-{vendor}.toml"
    path.write_text("\n".join(l for l in text.splitlines() if not l.startswith("aliases")))
    return str(path)


def test_a_users_gpu_file_names_its_vendor_and_gets_that_makers_default_engine(cli, tmp_path):
    """A hand-written TOML follows the catalog's rule (the maker picks the default engine) through its vendor field:
    vLLM on an AMD GPU, and --engine trtllm refused in one line; no vendor and a title naming none: NVIDIA's."""
    amd = _own_gpu(tmp_path, "AMD")
    assert engines.default_for(hardware.load_file(amd)) == "vllm"
    assert engines.default_for(hardware.load_file(_own_gpu(tmp_path, "NVIDIA"))) == "trtllm"
    assert engines.default_for(hardware.load_file(_own_gpu(tmp_path, None))) == "trtllm"
    r = cli("serve", "llama3-8b", "--on", amd, "--engine", "trtllm")
    assert r.rc == 2 and r.err.count("\n") == 1 and "runs on NVIDIA GPUs only" in r.err and "AMD's" in r.err
    assert hardware.load_file(amd).to_dict()["vendor"] == "AMD"
