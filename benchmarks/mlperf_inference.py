"""MLPerf Inference v5.1 LLM Offline results against ironlaw: NVIDIA and AMD GPUs, through ``serve``.

    python benchmarks/mlperf_inference.py            # per benchmark and GPU: median / p90 |error|, signed median
    python benchmarks/mlperf_inference.py --rows     # ... and every row with the command that prices it
    python benchmarks/mlperf_inference.py --benchmark llama2-70b    # one of them (llama2-70b, mixtral-8x7b,
                                                                    # llama3.1-8b, llama3.1-405b, deepseek-r1)
    python benchmarks/mlperf_inference.py --what-if  # ... and what-ifs (nothing stored)

Sources: tests/data/mlperf_inference_v5.1_{llama2_70b,mixtral_8x7b,llama3.1_8b,llama3.1_405b,deepseek_r1}_offline.csv
(mlcommons/inference_results_v5.1; each header names the commit, which results were kept, which were left out and why,
and where each number and setting comes from). Each row is one system's Offline run: LoadGen sends one query of
samples_per_query samples, every one at once, to gpus / (tp x pp) instances (TensorRT-LLM on NVIDIA GPUs, AMD's vLLM
harness on AMD GPUs, RedHat's vLLM harness on H100 and L40S); the published figure is the system's generated tokens per
second, compared here per GPU.

Each row is priced as one instance by ``ironlaw.serve(..., max_throughput=True)``: Llama-2-70B from its Hugging Face
config (tests/data/llm_configs/llama2-70b.json), the others the catalog's (mixtral-8x7b, llama3.1-8b, llama3.1-405b,
deepseek-r1), the dataset's mean prompt (222, 427, 871, 9,429 and 804 tokens), the run's generated tokens per sample
(tokens_s / samples_s), the submission's weights and KV-cache dtypes, TP, PP, EP and attention DP, batch limit, step
token budget and memory fraction (--memory-fraction: TensorRT-LLM's kvcache_free_gpu_mem_frac, the KV cache's share of
the memory free after weights and workspace; vLLM's gpu_memory_utilization), its requests (samples_per_query /
instances) queued at once, on the engine the submission ran (a vLLM row with the long_prefill_token_threshold its
command sets, ``LONG_PREFILL``: a library keyword). TensorRT-LLM rows run on the kernels of the TensorRT-LLM
release the submissions built (1.0, ``TRTLLM_RELEASE``: --release) where the catalog holds its tables, and, where the
harness ran TensorRT engines through TensorRT-LLM's C++ executor, on that runtime (``CPP_EXECUTOR``: --runtime cpp,
every step eager with no CUDA graph, a measured C++ launch per kernel). A row runs its dataset's own per-request
lengths (``LENGTHS``: ``serve --lengths``, the samples drawn evenly over the file to the instance's requests, their
outputs the reference answers' lengths capped at the harness's max_output_len) only where the file passes the rule of
``on_dataset_lengths``: its outputs are token counts whose mean is within ``LENGTHS_TOLERANCE`` (10%) of the run's
generated tokens per sample. DeepSeek-R1, Mixtral and Llama-3.1-405B pass; Llama-2-70B and Llama-3.1-8B run one
length per request (the mean prompt, the run's generated tokens).

``--what-if`` prices the AMD, H200 NVL, TensorRT-LLM and dataset-lengths rows under twelve what-ifs, storing nothing:
(1) vLLM at its default gpu_memory_utilization, 0.9, in place of each submission's own (the rows priced without
--memory-fraction); (2) vLLM's V0 engine without chunked prefill, as every AMD submission ran it
(VLLM_USE_V1 0, enable_chunked_prefill False): prompt tokens in steps of their own (``mixed_steps`` False), and AMD's
Llama-2-70B rows at the decode batch their MLPerf scheduler holds (``DECODE_TARGET``) in place of max_num_seqs; (3) the
MI325X rows on the MI300X's fitted gfx942 GEMM terms at factor 1, in place of ``kernelfit.rules.CARRIED_GEMM``'s 1.193
(AMD's measured max-achievable FP8 GEMM rates of the two); (4) the MI300X and MI325X rows on those terms without their
kernel-choice grid (``grid_nodes`` / ``grid_log`` dropped: the fitted η(M, N, K) form alone); (5) the H200 NVL rows
(datasheet-only: the catalog carries no calibration to it) on the H200 SXM's kernel-table calibration carried to the
NVL's datasheet (the same GH100 and 141 GB HBM3e at 4.8 TB/s, its Tensor Core peaks 0.844 of the SXM's at a 600 W
limit; the carried η are fractions of those peaks); (6) the TensorRT-LLM rows of the dense models and Mixtral, which
ran TensorRT engines through TensorRT-LLM's C++ executor (``CPP_EXECUTOR``: priced with ``runtime="cpp"``), on its
PyTorch executor instead (``runtime="pytorch"``), whose steps with prompt tokens launch every kernel from Python at
the fitted launch cost (DeepSeek-R1 runs that PyTorch backend: ``CoreType.TRTLLM_ENDPOINT``); (7) the rows on their
dataset's lengths at one length per request (the dataset's mean prompt, the run's generated tokens per sample), and on
the dataset's prompts with every output the run's generated tokens per sample; (8) Mixtral's TensorRT-LLM rows on
their ModelOpt auto_quantize checkpoint, a share of the layers left in bf16 (``AUTO_QUANTIZE``: two placements that
fill its 8.75 effective bits); (9) their MoE layers at the measured fused-MoE rows around each step's tokens
(``MOE_ROWS``), alone and with (8); (10) the RTX PRO 6000's at its 1.3 rows times the H200's measured 1.0 / 1.3 ratio
(``RELEASE_10_OVER_13``), alone and with (8); (11) their attention at the dataset's token-weighted decode context
(``MIXTRAL_CONTEXT``) at one length per request (the dataset's lengths carry their own); (12) their prompts' attention
in bf16 on the fp8 cache, as the builder's use_fp8_context_fmha disabled runs it.

Held out: nothing is fitted on these rows. Error = predicted / published tokens/s per GPU - 1 (positive: ironlaw
too fast).
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench import ERRORS_HEAD, Errors, csv_rows, errors  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests/data"
# benchmark: (extract, ironlaw's model spec, the dataset's mean prompt in tokens as the extract's header gives it)
BENCHMARKS = {"llama2-70b": (DATA / "mlperf_inference_v5.1_llama2_70b_offline.csv",
                             "hf:tests/data/llm_configs/llama2-70b.json", 222),     # 222.33 over 24,576 samples
              "mixtral-8x7b": (DATA / "mlperf_inference_v5.1_mixtral_8x7b_offline.csv", "mixtral-8x7b", 427),  # 427.39
              "llama3.1-8b": (DATA / "mlperf_inference_v5.1_llama3.1_8b_offline.csv", "llama3.1-8b", 871),     # 870.73
              "llama3.1-405b": (DATA / "mlperf_inference_v5.1_llama3.1_405b_offline.csv", "llama3.1-405b",
                                9429),                                                                    # 9428.64
              "deepseek-r1": (DATA / "mlperf_inference_v5.1_deepseek_r1_offline.csv", "deepseek-r1", 804)}    # 803.79
GPUS = ("h100", "h200", "h200-nvl", "b200", "gb200", "rtx-pro-6000", "l40s", "mi300x", "mi325x", "mi355x")
# the TensorRT-LLM release every TensorRT-LLM row ran: each submitter's Makefile.build pins TRTLLM_HASH to a commit of
# NVIDIA's "1.0-mlpinf side branch" (270a6b24 of 7/21/25 or 18c0333e of 7/24/25, as its comment says); its kernels
# price those rows where the catalog holds that release's tables (catalog/engine/trtllm-1.0: aiconfigurator 0.8.0's
# TensorRT-LLM 1.0.0rc3 / rc6), the catalog's 1.3.0rc20 elsewhere (RTX PRO 6000)
TRTLLM_RELEASE = "1.0"
# benchmark: its dataset's per-request (prompt, output) lengths, priced through ``serve --lengths`` in place of one
# length per request where ``on_dataset_lengths`` holds (each header names the source: openshift-psap/
# performance-dashboard's per-sample summaries at 71007029, outputs the reference answers' token counts capped at the
# max_output_len each row's harness ran: DeepSeek-R1's 4,388 samples at 20,000, Mixtral's 15,000 at 1,024,
# Llama-3.1-405B's 8,313 at 2,000). Mean outputs 3,886.2, 144.8, 684.7 against the runs' 3,650-3,744, 143-146,
# 634-660 generated tokens per sample. Not stored, failing the rule: Llama-2-70B's summary (reference outputs
# average 218.9 tokens, the runs generate 273-302) and Llama-3.1-8B's (its outputs the reference summaries'
# characters / 4, not token counts)
LENGTHS = {"deepseek-r1": Path("tests/data/mlperf_deepseek_r1_lengths.csv"),
           "mixtral-8x7b": Path("tests/data/mlperf_mixtral_8x7b_lengths.csv"),
           "llama3.1-405b": Path("tests/data/mlperf_llama3.1_405b_lengths.csv")}
# the rule's bound: a dataset file's mean output against a run's generated tokens per sample (|mean / run - 1|)
LENGTHS_TOLERANCE = 0.10
# what a lengths file's header says of its output column where its outputs are token counts
TOKEN_COUNTS = "outputs are token counts"
# the benchmarks whose TensorRT-LLM rows ran TensorRT engines through TensorRT-LLM's C++ executor: every submitter's
# closed/<submitter>/code/<benchmark>/tensorrt/__init__.py sets ``DEFAULT_CORE_TYPE = CoreType.TRTLLM_EXECUTOR``
# (code/llmlib/cores/trtllm_executor_core.py: ``trtllm.Executor`` over the engine directory, its ``ExecutorConfig``
# with no CUDA-graph knob), and no Offline configuration names another core; DeepSeek-R1's is
# ``CoreType.TRTLLM_ENDPOINT``, trtllm-serve on the PyTorch backend (llmlib/config.py ``trtllm_backend`` 'pytorch').
# Those rows run with ``runtime="cpp"`` (``serve --runtime cpp``: ironlaw.models.serving.step.runtime)
CPP_EXECUTOR = frozenset({"llama2-70b", "mixtral-8x7b", "llama3.1-8b", "llama3.1-405b"})
# the vLLM rows' long_prefill_token_threshold, where the submission set one (RedHat's closed/RedHat/code/llama3.1-8b/
# README.md, "Running the harness for MLPerf Offline Scenario", On L40s: --long-prefill-token-threshold 256
# --max-num-partial-prefills 1, the latter vLLM's default, so the run stays on the V1 engine): each request prefills
# at most 256 prompt tokens a step (``serve``'s library keyword long_prefill_token_threshold, no CLI flag)
LONG_PREFILL = {"5.1-0082": 256}
# Mixtral's TensorRT-LLM checkpoint: ModelOpt ``mtq.auto_quantize`` over FP8 and unquantized (bf16, 16 bits) at
# effective_bits 8.75, lm_head excluded (closed/<submitter>/code/mixtral-8x7b/modelopt/quantize.py ``quantize``;
# each config's trtllm_checkpoint_flags). ModelOpt's ``_AutoQuantizeBaseSearcher.quant_grouping_rules``
# (modelopt/torch/quantization/algorithms.py, its "mixtral experts" rule) makes one choice per layer for all 8
# experts' w1/w2/w3 (8 x 3 x 4,096 x 14,336 = 1.409e9 weights), one for q/k/v and one for o (41.9e6 together). Of
# the searched 32 x 1.451e9 = 46.4e9 weights, 8.75 bits allow at most 0.75 / 8 of them (4.35e9) in bf16: at most 3
# layers' experts (4 would be 5.64e9). Which groups the search kept is not published; two placements that fill 96%
# and 97% of the budget bound it: placement: (share of the routed-expert layers in bf16, share of the attention
# projections in bf16, bf16 weights)
AUTO_QUANTIZE = {"3 layers' experts": (3 / 32, 0.0, 3 * 8 * 3 * 4096 * 14336),
                 "2 layers' experts + every attention projection": (2 / 32, 1.0, 2 * 8 * 3 * 4096 * 14336
                                                                    + 32 * 4096 * (6144 + 4096))}
EXPERT_OPS = ("mlp_up_proj", "mlp_down_proj", "mlp_act", "moe_permute", "moe_combine")   # the fused MoE layer's
ATTENTION_PROJECTIONS = ("attn_pre_proj", "attn_post_proj")
# The fused-MoE layer at Mixtral's shape (hidden 4,096, inter 14,336, 8 experts, top 2, EP 1, power_law_1.01; fp8,
# and bf16 for the bf16 layers) where the TensorRT-LLM rows' steps fall (H200 9,216 tokens, RTX PRO 6000 5,553):
# gpu: dtype: ((tokens, seconds), (tokens, seconds)) of the two rows around them. H200: TensorRT-LLM 1.0.0rc3, the
# submissions' release (aiconfigurator 0.8.0 systems/data/h200_sxm/trtllm/1.0.0rc3/moe_perf.txt, fp8 and float16);
# RTX PRO 6000: 1.3.0rc20, the only release measured on it (aiconfigurator-core 0.12.0 systems/data/
# rtx_pro_6000_server/moe/trtllm/1.3.0rc20/moe_perf.parquet, kernel_source moe_torch_flow_cutlass, fp8 and bfloat16)
MOE_ROWS = {"h200": {"fp8": ((8192, 5.1753e-3), (12288, 7.9335e-3)), "bf16": ((8192, 9.4170e-3), (12288, 14.9267e-3))},
            "rtx-pro-6000": {"fp8": ((4096, 4.6427e-3), (8192, 8.7089e-3)),
                             "bf16": ((4096, 10.3094e-3), (8192, 18.6633e-3))}}
# The H200's 1.0.0rc3 over 1.3.0rc20 layer time at 8,192 tokens (the rows above over aiconfigurator-core 0.12.0's
# h200_sxm 1.3.0rc20 moe_torch_flow_cutlass rows, power_law_1.01: fp8 4.0915 ms, bfloat16 7.7145 ms): carried to
# the RTX PRO 6000's 1.3 rows only as a what-if (no 1.0 table on it; nothing stored)
RELEASE_10_OVER_13 = {"fp8": 5.1753 / 4.0915, "bf16": 9.4170 / 7.7145}
# Mixtral's dataset: (A, B) of its token-weighted decode context over the samples' (prompt p, output o) lengths,
# sum(o (p + o / 2)) / sum(o) = A + B * mean(o), A = sum(o p) / sum(o) (the output-weighted prompt), B = sum(o^2) /
# (2 sum(o) mean(o)), from openshift-psap/performance-dashboard (commit 71007029) mlperf-data/summaries/mixtral-8x7b.csv (15,000 samples' input and reference output lengths: A =
# 438.61, B = 0.8028; at the runs' 146 tokens 555.8 tokens where one length per request gives 427 + 146 / 2 = 500)
MIXTRAL_CONTEXT = (438.61, 0.8028)
# AMD's Llama-2-70B Offline rows: the decode batch AMD's MLPerf scheduler holds (each row's config,
# ``harness_llm/models/llama2-70b/offline_<gpu>.yaml``: VLLM_LLAMA2_MLPERF_SCHED 1 and
# VLLM_LLAMA2_MLPERF_MAX_TARGET_DECODE_BATCH; the patch closed/AMD/setup/vllm_patches/
# scheduler-change-to-have-prefill-and-decode-reach-go.patch: a decode step takes at most that many sequences and a
# prompt is admitted only while fewer run), below each row's max_num_seqs
DECODE_TARGET = {"5.1-0001": 1536, "5.1-0027": 1536, "5.1-0002": 2048, "5.1-0003": 2048, "5.1-0006": 2048,
                 "5.1-0068": 2048, "5.1-0081": 2048, "5.1-0045": 2000, "5.1-0095": 2000, "5.1-0098": 3072}
RELEASE_GPUS = frozenset(p.stem for p in (ROOT / "src/ironlaw/machine/catalog/engine/trtllm-1.0").glob("*.toml"))


def load(benchmarks=tuple(BENCHMARKS)) -> list[dict]:
    """The extracts' rows (``#`` lines are their headers), numbers as numbers, each with its ``benchmark``, ``spec``
    and ``prompt`` and what the benchmark derives: generated tokens per sample, engine instances, requests per
    instance and the published tokens/s per GPU."""
    rows = []
    for name in benchmarks:
        path, spec, prompt = BENCHMARKS[name]
        rows += [dict(r, benchmark=name, spec=spec, prompt=prompt) for r in csv_rows(path)]
    for r in rows:
        for k in ("pp", "ep"):              # the Llama-2-70B and Mixtral extracts: every submission at PP 1, no EP
            r.setdefault(k, "1")
        r.setdefault("attention_dp", "false")
        for k in ("gpus", "tp", "pp", "ep", "max_batch", "max_num_tokens", "samples_per_query"):
            r[k] = int(r[k])
        for k in ("memory_fraction", "samples_s", "tokens_s"):
            r[k] = float(r[k])
        r["attention_dp"] = {"true": True, "false": False}[r["attention_dp"]]
        r["output"] = round(r["tokens_s"] / r["samples_s"])
        r["instances"] = r["gpus"] // (r["tp"] * r["pp"])
        r["requests"] = r["samples_per_query"] // r["instances"]
        r["published"] = r["tokens_s"] / r["gpus"]
    return rows


@functools.lru_cache(maxsize=None)
def dataset_outputs(path: Path) -> tuple[bool, float]:
    """(whether the header of the lengths file at ``path`` says its outputs are token counts, ``TOKEN_COUNTS``; the
    mean of its output column)."""
    from ironlaw.models.serving.lengths import read
    head = " ".join(line[1:].strip() for line in open(path) if line.startswith("#"))
    mix = read(path)
    return TOKEN_COUNTS in head.lower(), sum(mix.outputs) / mix.requests


def on_dataset_lengths(r: dict) -> bool:
    """The rule: row ``r`` runs its benchmark's dataset file (``LENGTHS``) only where the file's outputs are token
    counts whose mean is within ``LENGTHS_TOLERANCE`` of the run's generated tokens per sample (``r["output"]``, the
    log summary's tokens per second over samples per second, read by ``load``); else one length per request."""
    if r["benchmark"] not in LENGTHS or r.get("one_length"):
        return False
    tokens, mean = dataset_outputs(ROOT / LENGTHS[r["benchmark"]])
    return tokens and abs(mean / r["output"] - 1.0) <= LENGTHS_TOLERANCE


def serve_kwargs(r: dict) -> dict:
    """``ironlaw.serve``'s keywords for one engine instance of row ``r``."""
    lengths = {"lengths": str(LENGTHS[r["benchmark"]])} if on_dataset_lengths(r) else \
        {"prompt": r["prompt"], "output": r["output"]}
    kw = {**lengths, "dtype": r["weights"], "tp": r["tp"],
          "max_throughput": True, "requests": r["requests"], "max_batch": r["max_batch"],
          "max_num_tokens": r["max_num_tokens"], "engine": r["engine"], "memory_fraction": r["memory_fraction"]}
    if r["kv_dtype"] != "checkpoint":
        kw["kv_dtype"] = r["kv_dtype"]
    for k in ("pp", "ep"):
        if r[k] > 1:
            kw[k] = r[k]
    if r["attention_dp"]:
        kw["attention_dp"] = True
    if r["engine"] == "trtllm" and r["gpu"] in RELEASE_GPUS:
        kw["release"] = TRTLLM_RELEASE
    if r["engine"] == "trtllm" and r["benchmark"] in CPP_EXECUTOR:
        kw["runtime"] = "cpp"
    if r["id"] in LONG_PREFILL:
        kw["long_prefill_token_threshold"] = LONG_PREFILL[r["id"]]
    return kw


def command(r: dict) -> str:
    """The ``ironlaw serve`` command line that prices row ``r`` (one instance)."""
    flags = {"on": r["gpu"], **serve_kwargs(r)}
    library = flags.pop("long_prefill_token_threshold", None)     # a library keyword, no flag
    parts = [f"ironlaw serve {r['spec']}"]
    for k, v in flags.items():
        flag = "--" + k.replace("_", "-")
        parts.append(flag if v is True else f"{flag} {v}")
    if library is not None:
        parts.append(f"# and ironlaw.serve(..., long_prefill_token_threshold={library})")
    return " ".join(parts)


@functools.lru_cache(maxsize=None)
def dataset_mix(path: str):
    """The lengths file at ``path`` read once (``serving.lengths.read``; ``serve`` takes the ``Lengths`` as read)."""
    from ironlaw.models.serving.lengths import read
    return read(path)


def call_kwargs(r: dict, **given) -> dict:
    """``serve_kwargs`` of row ``r`` with ``given`` in their place, a dataset file as read (``dataset_mix``)."""
    kw = {**serve_kwargs(r), **given}
    if isinstance(kw.get("lengths"), (str, Path)):
        kw["lengths"] = dataset_mix(str(ROOT / kw["lengths"]))
    return kw


def predict(r: dict, **given) -> float:
    """Predicted generated tokens/s per GPU of row ``r``: one instance's, over its TP x PP GPUs (``given``: keywords
    in place of the row's)."""
    import ironlaw
    spec = r["spec"].replace("hf:", "hf:" + str(ROOT) + "/", 1) if r["spec"].startswith("hf:") else r["spec"]
    est = ironlaw.serve(spec, r["gpu"], **call_kwargs(r, **given))
    return est.output_tokens_per_s / (r["tp"] * r["pp"])


@contextlib.contextmanager
def kv_once():
    """Within it, ``serve`` takes the KV bytes of a sequence of so many tokens (``engine.kv_sequence_bytes``, which
    ``Lengths.weighted`` evaluates per distinct length of a file's mix, a model graph each) once per model, GPU
    (its catalog name) and dtypes."""
    from unittest import mock

    from ironlaw.models.serving import engine
    kv, own = {}, engine.kv_sequence_bytes

    def once(spec, hw, meta, dtype, kv_dtype, tokens, constants):
        key = (spec, hw.name, dtype, kv_dtype, tokens, constants)
        if key not in kv:
            kv[key] = own(spec, hw, meta, dtype, kv_dtype, tokens, constants)
        return kv[key]

    with mock.patch.object(engine, "kv_sequence_bytes", once):
        yield


def scored(rows: list[dict] | None = None) -> list[dict]:
    """Every row with ``pred`` (tokens/s per GPU), ``err`` (predicted / published - 1) and ``seconds`` (its call's).
    Rows that make the same call (model, GPU and ``serve`` keywords: on a dataset file the run's own generated
    tokens enter only the rule) are priced once, each sequence length's KV bytes once (``kv_once``)."""
    out, priced = [], {}
    with kv_once():
        for r in rows if rows is not None else load():
            key = (r["spec"], r["gpu"], r["tp"] * r["pp"], tuple(sorted(serve_kwargs(r).items())))
            if key not in priced:
                t0 = time.perf_counter()
                priced[key] = (predict(r), time.perf_counter() - t0)
            pred, seconds = priced[key]
            out.append(dict(r, pred=pred, err=pred / r["published"] - 1.0, seconds=seconds))
    return out


def at_default_memory_fraction(r: dict) -> float:
    """What-if: row ``r`` priced at its engine's default memory fraction, not the submission's."""
    return predict(r, memory_fraction=None)


def unmixed(r: dict) -> float:
    """What-if: row ``r`` priced with vLLM's prompt tokens in steps of their own (``mixed_steps`` False), as vLLM's
    V0 engine runs them with chunked prefill off: the AMD submissions' VLLM_USE_V1 0 and enable_chunked_prefill
    False (each harness's common/config.yaml and offline_<gpu>.yaml)."""
    from dataclasses import replace
    from unittest import mock

    from ironlaw.models.serving import frameworks
    own = frameworks.vllm
    with mock.patch.object(frameworks, "vllm", lambda hw, offline: replace(own(hw, offline), mixed_steps=False)):
        return predict(r)


def at_decode_target(r: dict) -> float:
    """What-if: an AMD Llama-2-70B row priced with its batch limit at the decode batch AMD's MLPerf scheduler holds
    (``DECODE_TARGET``), not its max_num_seqs."""
    return predict(r, max_batch=DECODE_TARGET[r["id"]])


def on_pytorch_executor(r: dict) -> float:
    """What-if: a C++-executor row ``r`` priced on TensorRT-LLM's PyTorch executor (``runtime="pytorch"``: Python's
    fitted launch per kernel of a step with prompt tokens, decode steps replayed as padded CUDA graphs), as every
    TensorRT-LLM row was priced before ``CPP_EXECUTOR``."""
    return predict(r, runtime="pytorch")


def at_one_length(r: dict) -> float:
    """What-if: row ``r`` of a benchmark priced through its dataset's lengths (``LENGTHS``) priced instead at one
    length per request: the dataset's mean prompt and the run's generated tokens per sample."""
    return predict(dict(r, one_length=True))


def at_run_output(r: dict, tmp: Path) -> float:
    """What-if: row ``r`` on its dataset's per-request prompts (``LENGTHS``), every output the run's generated tokens
    per sample in place of the reference answer's (a file of them written under ``tmp``)."""
    path = tmp / f"{r['benchmark']}-{r['output']}.csv"
    if not path.exists():
        prompts = [line.split(",")[0] for line in open(ROOT / LENGTHS[r["benchmark"]]) if line[:1].isdigit()]
        path.write_text(f"# {TOKEN_COUNTS}\nprompt,output\n" + "".join(f"{p},{r['output']}\n" for p in prompts))
    return predict(r, lengths=str(path))


def expert_layer_s(est, moe_rows: dict | None, dtype: str, tokens: float) -> float:
    """Seconds the step ``est`` (every layer) gives its routed-expert ops less what ``moe_rows[dtype]`` (one GPU's
    ``MOE_ROWS``) interpolated at ``tokens`` gives them (0 without rows): what moves the step onto the rows."""
    law = sum(float(est.op_total_s[i]) for i, op in enumerate(est.graph.ops)
              if op.name.split(".")[-1] in EXPERT_OPS)
    if moe_rows is None:
        return 0.0
    (t0, s0), (t1, s1) = moe_rows[dtype]
    return law - est.graph.meta["moe_layers"] * (s0 + (s1 - s0) * (tokens - t0) / (t1 - t0))


def release_10(r: dict) -> dict:
    """Row ``r``'s GPU's ``MOE_ROWS`` times ``RELEASE_10_OVER_13`` (what-if: 1.0's layer where only 1.3's is
    measured)."""
    return {dt: tuple((t, s * RELEASE_10_OVER_13[dt]) for t, s in rows) for dt, rows in MOE_ROWS[r["gpu"]].items()}


def auto_quantized(r: dict, placement: str | None, moe_rows: dict | None = None) -> float:
    """What-if: Mixtral row ``r`` with ``AUTO_QUANTIZE[placement]``'s layers in bf16 (None: none): each step's
    expert-layer and attention-projection ops at their bf16 time for that share of the layers (the step priced
    whole in fp8 and in bf16, the same tokens), the extra weight bytes taken from the KV cache's free memory;
    ``moe_rows``: the expert ops of each dtype at those measured layer times (one GPU's ``MOE_ROWS``)."""
    from dataclasses import replace
    from unittest import mock

    import ironlaw
    from ironlaw.models.serving import throughput
    experts, attention, weights = AUTO_QUANTIZE[placement] if placement else (0.0, 0.0, 0)
    own = throughput.step_seconds

    def share(name: str) -> float:
        role = name.split(".")[-1]
        return experts if role in EXPERT_OPS else attention if role in ATTENTION_PROJECTIONS else 0.0

    def mixed(run, decode, prefill_tokens, contexts, pad):
        t, est = own(run, decode, prefill_tokens, contexts, pad)
        half = own(replace(run, dtype="bf16"), decode, prefill_tokens, contexts, pad)[1]
        bf16 = {op.name: float(half.op_total_s[i]) for i, op in enumerate(half.graph.ops)}
        tokens = decode + prefill_tokens
        return (t + sum(share(op.name) * (bf16[op.name] - float(est.op_total_s[i]))
                        for i, op in enumerate(est.graph.ops))
                - (1 - experts) * expert_layer_s(est, moe_rows, "fp8", tokens)
                - experts * expert_layer_s(half, moe_rows, "bf16", tokens)), est

    mem = ironlaw.serve(r["spec"], r["gpu"], **call_kwargs(r)).memory
    fraction = r["memory_fraction"] * (mem["free_bytes"] - weights) / mem["free_bytes"]   # weights: +1 byte each
    with mock.patch.object(throughput, "step_seconds", mixed):
        return predict(r, memory_fraction=fraction)


def at_weighted_context(r: dict) -> float:
    """What-if: Mixtral row ``r`` with every step's attention at the dataset's token-weighted decode context
    (``MIXTRAL_CONTEXT``) in place of one length's prompt + output / 2, at one length per request (the dataset's
    lengths carry their own decode context); token budget unchanged."""
    from unittest import mock

    from ironlaw.models.serving.step import run as step_run
    a, b = MIXTRAL_CONTEXT
    own = step_run.step_graph

    def weighted(*args, **kw):
        return own(*args, **dict(kw, context=round(a + b * r["output"])))

    with mock.patch.object(step_run, "step_graph", weighted):
        return predict(dict(r, one_length=True))


def bf16_context_fmha(r: dict) -> float:
    """What-if: TensorRT-LLM row ``r`` with its prompts' attention in bf16 on the fp8 cache (the builder's
    ``use_fp8_context_fmha`` disabled, as every Mixtral config's trtllm_build_flags set it), not fp8."""
    import copy
    from unittest import mock

    from ironlaw.core.gemmshape import attention_kernel, attention_kernel_parts
    from ironlaw.models.serving.step import run as step_run
    own = step_run.step_graph

    def in_bf16(op):
        o = copy.copy(op)
        phase, regime = attention_kernel_parts(op.attrs["kernel"])
        o.dtype, o.attrs = "bf16", {**op.attrs, "kernel": attention_kernel(phase, "bf16", op.attrs["kv_dtype"], regime)}
        return o

    def bf16_context(*args, **kw):
        g = own(*args, **kw)
        g.ops = [in_bf16(op) if op.kind == "attention" and op.name.endswith("prefill") else op for op in g.ops]
        return g

    with mock.patch.object(step_run, "step_graph", bf16_context):
        return predict(r)


def gfx942_terms(r: dict, tmp: Path, grid: bool = True, factor: bool = True) -> str:
    """The catalog file (written under ``tmp``) of an MI300X or MI325X row's GPU on its datasheet with the MI300X's
    fitted GEMM terms, carried to MI325X at ``kernelfit.rules.CARRIED_GEMM``'s factor (``factor``) or at 1 (the
    MI300X's own rates), with or without their kernel-choice grid (``grid_nodes`` / ``grid_log``)."""
    import copy

    from ironlaw.machine import hardware
    from ironlaw.machine.profile import replace_table
    from ironlaw.measure.calibrate.kernelfit import carried
    table = copy.deepcopy(hardware.get("mi300x").calibration.table())
    if r["gpu"] == "mi325x":        # the GEMM terms carried (at 1: the MI300X's own), the MI325X's own MoE classes
        from amd_kernels import with_moe
        gemm = carried.carried(table, "mi325x")
        if not factor:
            for dt, t in gemm["matmul"].items():
                t["eta_max"] = table["matmul"][dt]["eta_max"]
        table = with_moe(hardware.get("mi325x"), gemm)
    for t in table["matmul"].values() if not grid else ():
        t.pop("grid_nodes", None)
        t.pop("grid_log", None)
    name = f"{r['gpu']}-gfx942{'' if factor else '-x1'}{'' if grid else '-nogrid'}"
    own = (ROOT / f"src/ironlaw/machine/catalog/{r['gpu']}.toml").read_text().split("\n[calibration]\n", 1)[0]
    path = tmp / f"{name}.toml"
    path.write_text(own.replace(f'name = "{r["gpu"]}"', f'name = "{name}"', 1))
    replace_table(path, "calibration", table)
    return str(path)


def h200_carried(r: dict, tmp: Path) -> str:
    """The catalog file (written under ``tmp``) of an H200 NVL row's GPU: the h200-nvl datasheet (its own peaks,
    600 W) with the H200 SXM's ``[calibration]`` (the η it holds are fractions of those peaks)."""
    from ironlaw.machine import hardware
    from ironlaw.machine.profile import replace_table
    path = tmp / "h200-nvl-h200.toml"
    own = (ROOT / "src/ironlaw/machine/catalog/h200-nvl.toml").read_text()
    path.write_text(own.replace('name = "h200-nvl"', 'name = "h200-nvl-h200"', 1))
    replace_table(path, "calibration", hardware.get("h200").calibration.table())
    return str(path)


def what_if(rows: list[dict]) -> None:
    """``--what-if``: the AMD, H200 NVL, TensorRT-LLM and dataset-lengths rows under each what-if (module docstring),
    per benchmark and GPU, each sequence length's KV bytes priced once (``kv_once``)."""
    import tempfile
    amd = [r for r in rows if r["engine"] == "vllm" and r["gpu"].startswith("mi")]
    gfx942 = [r for r in amd if r["gpu"] != "mi355x"]
    nvl = [r for r in rows if r["gpu"] == "h200-nvl"]
    mixtral = [r for r in rows if r["benchmark"] == "mixtral-8x7b" and r["engine"] == "trtllm"]
    on_file = [r for r in rows if on_dataset_lengths(r)]
    with tempfile.TemporaryDirectory() as tmp, kv_once():
        def on(r, **kw):
            return predict(dict(r, gpu=gfx942_terms(r, Path(tmp), **kw)))
        cases = (("vLLM at its default gpu_memory_utilization (0.9)", at_default_memory_fraction, amd),
                 ("vLLM V0 without chunked prefill (prompts in steps of their own)", unmixed, amd),
                 ("AMD's Llama-2-70B rows at their scheduler's target decode batch (DECODE_TARGET)",
                  at_decode_target, [r for r in amd if r["benchmark"] == "llama2-70b"]),
                 ("MI325X on the MI300X's gfx942 terms at factor 1 (not CARRIED_GEMM's 1.193)",
                  lambda r: on(r, factor=False), [r for r in amd if r["gpu"] == "mi325x"]),
                 ("MI300X and MI325X on those terms without their grid", lambda r: on(r, grid=False), gfx942),
                 ("H200 NVL on the H200 SXM's kernel calibration",
                  lambda r: predict(dict(r, gpu=h200_carried(r, Path(tmp)))), nvl),
                 ("the C++-executor rows on TensorRT-LLM's PyTorch executor (--runtime pytorch)",
                  on_pytorch_executor, [r for r in rows if r["engine"] == "trtllm" and r["benchmark"] in CPP_EXECUTOR]),
                 ("at one length per request (not the dataset's lengths)", at_one_length, on_file),
                 ("the dataset's prompts, every output the run's generated tokens per sample",
                  lambda r: at_run_output(r, Path(tmp)), on_file),
                 *((f"Mixtral's auto_quantize checkpoint with {p} in bf16", lambda r, p=p: auto_quantized(r, p),
                    mixtral) for p in AUTO_QUANTIZE),
                 *((f"Mixtral's MoE layers at the table's rows{', ' + p + ' in bf16' if p else ''}",
                    lambda r, p=p: auto_quantized(r, p, MOE_ROWS[r["gpu"]]), mixtral) for p in (None, *AUTO_QUANTIZE)),
                 *((f"Mixtral's RTX PRO 6000 MoE layers at its 1.3 rows x the H200's 1.0 / 1.3 ratio"
                    f"{', ' + p + ' in bf16' if p else ''}", lambda r, p=p: auto_quantized(r, p, release_10(r)),
                    [r for r in mixtral if r["gpu"] == "rtx-pro-6000"]) for p in (None, *AUTO_QUANTIZE)),
                 ("Mixtral's attention at the dataset's token-weighted decode context", at_weighted_context, mixtral),
                 ("Mixtral's prompts' attention in bf16 (use_fp8_context_fmha disabled)", bf16_context_fmha, mixtral))
        for label, price, sel in cases:
            print(f"\nwhat-if: {label} (nothing stored)")
            after = [dict(r, err=price(r) / r["published"] - 1.0) for r in sel]
            for bench in BENCHMARKS:
                for gpu in GPUS:
                    b = [r["err"] for r in sel if r["gpu"] == gpu and r["benchmark"] == bench]
                    a = [r["err"] for r in after if r["gpu"] == gpu and r["benchmark"] == bench]
                    if a:
                        mag_b, mag_a = statistics.median(map(abs, b)), statistics.median(map(abs, a))
                        print(f"  {bench:<13} {gpu:<12} n {len(a):>2}: median |err| {100 * mag_b:.1f}% -> "
                              f"{100 * mag_a:.1f}%, signed median {100 * statistics.median(b):+.1f}% -> "
                              f"{100 * statistics.median(a):+.1f}%")


def summary(rows: list[dict]) -> list[tuple[str, str, Errors]]:
    """(benchmark, GPU, its errors scored: rows, median and p90 |err|, signed median) per benchmark and GPU, then
    over each benchmark's rows."""
    out = []
    for bench in BENCHMARKS:
        for label in (*GPUS, "all"):
            errs = [r["err"] for r in rows if r["benchmark"] == bench and label in ("all", r["gpu"])]
            if errs:
                out.append((bench, label, errors(errs)))
    return out


def print_rows(rows: list[dict]) -> None:
    print(f"{'id':<9} {'benchmark':<13} {'submitter':<14} {'gpu':<12} {'engine':<6} {'w':<5} {'kv':<5} {'par':<9} "
          f"{'OSL':>4} {'batch':>5} {'tokens':>6} {'published':>9} {'ironlaw':>8} {'error':>7}")
    for r in rows:
        par = f"{r['tp']}x{r['pp']}" + (f"/ep{r['ep']}" if r["ep"] > 1 else "") + ("+adp" if r["attention_dp"] else "")
        print(f"{r['id']:<9} {r['benchmark']:<13} {r['submitter'][:14]:<14} {r['gpu']:<12} {r['engine']:<6} "
              f"{r['weights']:<5} {r['kv_dtype'][:5]:<5} {par:<9} {r['output']:>4} {r['max_batch']:>5} "
              f"{r['max_num_tokens']:>6} {r['published']:>9.0f} {r['pred']:>8.0f} {100 * r['err']:>+6.1f}%")
        print(f"    {command(r)}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", action="store_true", help="print every row and its ironlaw command")
    ap.add_argument("--what-if", action="store_true", help="the AMD, H200 NVL, TensorRT-LLM and dataset-lengths rows "
                                                           "under twelve what-ifs (nothing stored)")
    ap.add_argument("--benchmark", action="append", choices=sorted(BENCHMARKS), help="one benchmark (default: all)")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    rows = scored(load(args.benchmark or tuple(BENCHMARKS)))
    if args.rows:
        print_rows(rows)
    print(f"\n{len(rows)} MLPerf Inference v5.1 Offline results (tests/data/mlperf_inference_v5.1_*_offline.csv); "
          f"error = predicted / published generated tokens/s per GPU - 1; held out: nothing fitted on them")
    print(f"{'benchmark':<13} {'gpu':<14} {ERRORS_HEAD}")
    for bench, label, score in summary(rows):
        print(f"{bench:<13} {label:<14} {score.cells()}")
    if args.what_if:
        what_if(rows)
    secs = [r["seconds"] for r in rows]
    print(f"time per prediction: median {statistics.median(secs):.3f} s, max {max(secs):.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
