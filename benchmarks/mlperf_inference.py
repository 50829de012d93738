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
instances) queued at once, on the engine the submission ran. TensorRT-LLM rows run on the kernels of the TensorRT-LLM
release the submissions built (1.0, ``TRTLLM_RELEASE``: --release) where the catalog holds its tables. DeepSeek-R1's rows
run its dataset's own per-request lengths (``LENGTHS``: ``serve --lengths``, the samples cycled to the query's size,
their outputs the reference answers' lengths capped at the runs' max_output_len); the others one length per request.

``--what-if`` prices the AMD, H200 NVL, TensorRT-LLM and DeepSeek-R1 rows under seven what-ifs, storing nothing: (1)
vLLM at its default
gpu_memory_utilization, 0.9, in place of each submission's own (what the rows scored before --memory-fraction
carried it); (2) vLLM's V0 engine without chunked prefill, as every AMD submission ran it (VLLM_USE_V1 0,
enable_chunked_prefill False): prompt tokens in steps of their own (``mixed_steps`` False); (3) the MI325X rows on the
MI300X's fitted gfx942 GEMM terms at factor 1, in place of ``kernelfit.rules.CARRIED_GEMM``'s 1.193 (AMD's measured
max-achievable FP8 GEMM rates of the two); (4) the MI300X and MI325X rows on those terms without their kernel-choice
grid (``grid_nodes`` / ``grid_log`` dropped: the fitted η(M, N, K) form alone); (5) the H200 NVL rows (datasheet-only:
the catalog carries no calibration to it) on the H200 SXM's kernel-table calibration carried to the NVL's datasheet
(the same GH100 and 141 GB HBM3e at 4.8 TB/s, its Tensor Core peaks 0.844 of the SXM's at a 600 W limit; the carried
η are fractions of those peaks); (6) the TensorRT-LLM rows of the dense models and Mixtral without the host's eager
kernel launches (``step.host.host_launches`` 0): NVIDIA's harness runs those benchmarks on TensorRT engines through
TensorRT-LLM's C++ executor (closed/NVIDIA/code/<benchmark>/tensorrt/__init__.py: ``DEFAULT_CORE_TYPE =
CoreType.TRTLLM_EXECUTOR``, tensorrt_llm.bindings.executor), where ironlaw prices TensorRT-LLM's PyTorch executor,
whose steps with prompt tokens launch every kernel from Python (DeepSeek-R1 runs that PyTorch backend:
``CoreType.TRTLLM_ENDPOINT``, llmlib/config.py ``trtllm_backend`` 'pytorch'); (7) the DeepSeek-R1 rows at one length
per request (the dataset's mean prompt, the run's generated tokens per sample) in place of the dataset's lengths.

Held out: nothing is fitted on these rows. Error = predicted / published tokens/s per GPU - 1 (positive: ironlaw
too fast).
"""
from __future__ import annotations

import argparse
import csv
import statistics
import sys
import time
from pathlib import Path

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
# benchmark: its dataset's per-request (prompt, output) lengths, priced through ``serve --lengths`` in place of one length
# per request (the header names the source: openshift-psap/performance-dashboard's summary of the 4,388 samples, outputs
# capped at the runs' max_output_len 20,000)
LENGTHS = {"deepseek-r1": Path("tests/data/mlperf_deepseek_r1_lengths.csv")}
RELEASE_GPUS = frozenset(p.stem for p in (ROOT / "src/ironlaw/machine/catalog/engine/trtllm-1.0").glob("*.toml"))


def load(benchmarks=tuple(BENCHMARKS)) -> list[dict]:
    """The extracts' rows (``#`` lines are their headers), numbers as numbers, each with its ``benchmark``, ``spec``
    and ``prompt`` and what the benchmark derives: generated tokens per sample, engine instances, requests per
    instance and the published tokens/s per GPU."""
    rows = []
    for name in benchmarks:
        path, spec, prompt = BENCHMARKS[name]
        with open(path, newline="") as f:
            rows += [dict(r, benchmark=name, spec=spec, prompt=prompt)
                     for r in csv.DictReader(line for line in f if not line.startswith("#"))]
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


def serve_kwargs(r: dict) -> dict:
    """``ironlaw.serve``'s keywords for one engine instance of row ``r``."""
    lengths = {"lengths": str(LENGTHS[r["benchmark"]])} if r["benchmark"] in LENGTHS and not r.get("one_length") else \
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
    return kw


def command(r: dict) -> str:
    """The ``ironlaw serve`` command line that prices row ``r`` (one instance)."""
    flags = {"on": r["gpu"], **serve_kwargs(r)}
    parts = [f"ironlaw serve {r['spec']}"]
    for k, v in flags.items():
        flag = "--" + k.replace("_", "-")
        parts.append(flag if v is True else f"{flag} {v}")
    return " ".join(parts)


def predict(r: dict, **given) -> float:
    """Predicted generated tokens/s per GPU of row ``r``: one instance's, over its TP x PP GPUs (``given``: keywords
    in place of the row's)."""
    import ironlaw
    spec = r["spec"].replace("hf:", "hf:" + str(ROOT) + "/", 1) if r["spec"].startswith("hf:") else r["spec"]
    kw = {**serve_kwargs(r), **given}
    if "lengths" in kw:
        kw["lengths"] = str(ROOT / kw["lengths"])
    est = ironlaw.serve(spec, r["gpu"], **kw)
    return est.output_tokens_per_s / (r["tp"] * r["pp"])


def scored(rows: list[dict] | None = None) -> list[dict]:
    """Every row with ``pred`` (tokens/s per GPU), ``err`` (predicted / published - 1) and ``seconds``."""
    out = []
    for r in rows if rows is not None else load():
        t0 = time.perf_counter()
        pred = predict(r)
        out.append(dict(r, pred=pred, err=pred / r["published"] - 1.0, seconds=time.perf_counter() - t0))
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


def without_launches(r: dict) -> float:
    """What-if: row ``r`` priced with no eager kernel launches on the host (``step.host.host_launches`` 0), as a
    TensorRT engine's step runs under TensorRT-LLM's C++ executor."""
    from unittest import mock

    from ironlaw.models.serving.step import host
    with mock.patch.object(host, "host_launches", lambda g, constants, eager: 0):
        return predict(r)


def at_one_length(r: dict) -> float:
    """What-if: row ``r`` of a benchmark priced through its dataset's lengths (``LENGTHS``) priced instead at one
    length per request: the dataset's mean prompt and the run's generated tokens per sample."""
    return predict(dict(r, one_length=True))


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
    """``--what-if``: the AMD, H200 NVL, TensorRT-LLM and DeepSeek-R1 rows under each what-if (module docstring),
    per benchmark and GPU."""
    import tempfile
    amd = [r for r in rows if r["engine"] == "vllm" and r["gpu"].startswith("mi")]
    gfx942 = [r for r in amd if r["gpu"] != "mi355x"]
    nvl = [r for r in rows if r["gpu"] == "h200-nvl"]
    with tempfile.TemporaryDirectory() as tmp:
        def on(r, **kw):
            return predict(dict(r, gpu=gfx942_terms(r, Path(tmp), **kw)))
        cases = (("vLLM at its default gpu_memory_utilization (0.9)", at_default_memory_fraction, amd),
                 ("vLLM V0 without chunked prefill (prompts in steps of their own)", unmixed, amd),
                 ("MI325X on the MI300X's gfx942 terms at factor 1 (not CARRIED_GEMM's 1.193)",
                  lambda r: on(r, factor=False), [r for r in amd if r["gpu"] == "mi325x"]),
                 ("MI300X and MI325X on those terms without their grid", lambda r: on(r, grid=False), gfx942),
                 ("H200 NVL on the H200 SXM's kernel calibration",
                  lambda r: predict(dict(r, gpu=h200_carried(r, Path(tmp)))), nvl),
                 ("TensorRT-LLM's C++ executor: no eager kernel launches on the host", without_launches,
                  [r for r in rows if r["engine"] == "trtllm" and r["benchmark"] not in LENGTHS]),
                 ("DeepSeek-R1 at one length per request (not its dataset's lengths)", at_one_length,
                  [r for r in rows if r["benchmark"] in LENGTHS]))
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


def p90(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(0.9 * (len(xs) - 1))))]


def summary(rows: list[dict]) -> list[tuple[str, str, int, float, float, float]]:
    """(benchmark, GPU, rows, median |err|, p90 |err|, signed median) per benchmark and GPU, then over each
    benchmark's rows."""
    out = []
    for bench in BENCHMARKS:
        for label in (*GPUS, "all"):
            errs = [r["err"] for r in rows if r["benchmark"] == bench and label in ("all", r["gpu"])]
            if errs:
                mag = [abs(e) for e in errs]
                out.append((bench, label, len(errs), statistics.median(mag), p90(mag), statistics.median(errs)))
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
    ap.add_argument("--what-if", action="store_true", help="the AMD, H200 NVL, TensorRT-LLM and DeepSeek-R1 rows "
                                                           "under seven what-ifs (nothing stored)")
    ap.add_argument("--benchmark", action="append", choices=sorted(BENCHMARKS), help="one benchmark (default: all)")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    rows = scored(load(args.benchmark or tuple(BENCHMARKS)))
    if args.rows:
        print_rows(rows)
    print(f"\n{len(rows)} MLPerf Inference v5.1 Offline results (tests/data/mlperf_inference_v5.1_*_offline.csv); "
          f"error = predicted / published generated tokens/s per GPU - 1; held out: nothing fitted on them")
    print(f"{'benchmark':<13} {'gpu':<14} {'n':>3} {'median |err|':>12} {'p90 |err|':>10} {'signed median':>14}")
    for bench, label, n, med, hi, signed in summary(rows):
        print(f"{bench:<13} {label:<14} {n:>3} {100 * med:>11.1f}% {100 * hi:>9.1f}% {100 * signed:>+13.1f}%")
    if args.what_if:
        what_if(rows)
    secs = [r["seconds"] for r in rows]
    print(f"time per prediction: median {statistics.median(secs):.3f} s, max {max(secs):.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
