"""vLLM and SGLang serving against published results: gpustack's performance lab, scored through ``ironlaw.serve``.

    python benchmarks/vllm_sglang_published.py             # every row: published vs predicted, median / p90
    python benchmarks/vllm_sglang_published.py --rows      # … and the per-row table
    python benchmarks/vllm_sglang_published.py --fit       # what-if: each framework's fixed seconds per step fitted
                                                           # on its H100 rows (nothing stored), leave-one-model-out
    python benchmarks/vllm_sglang_published.py --mxfp4     # … and the gpt-oss rows the summary leaves out, priced
                                                           # in the checkpoint's format (MXFP4 experts), apart
    python benchmarks/vllm_sglang_published.py --latency   # … and the capped-concurrency (latency) runs, apart
    python benchmarks/vllm_sglang_published.py --async     # … and each --async-scheduling run beside its serial
                                                           # twin (also printed by --rows)

Source: tests/data/vllm_sglang_gpustack_perflab.csv (gpustack/gpustack docs/performance-lab, Apache-2.0; its header
names the commit, the client command and which results were kept). Each row is one ``vllm bench serve`` run against
``vllm serve`` (v0.11.0) or ``sglang.launch_server`` (v0.5.3 – v0.5.5.post1) on H100 SXM, H200 SXM or A100 SXM 80GB,
every request sent at once; the published figure is the run's duration, compared here as total tokens/s
((input + output tokens) / duration, as the page prints it).

Each row is priced by ``ironlaw.serve(model, gpu, max_throughput=True, engine=vllm|sglang, requests=N, ...)``: the
N requests queued at once, at the row's mean lengths (input_tokens / N, output_tokens / N), the checkpoint's weight
dtype (and format: ``CHECKPOINTS``, Qwen3-235B-A22B's block-scaled FP8), the KV cache in BF16 (both engines'
kv_cache_dtype "auto" follows the model dtype, BF16 for these FP8 checkpoints), TP / EP / attention DP as the command sets them, and the framework's scheduler defaults
(``ironlaw.models.serving.frameworks``) for the OpenAI server the page started — vLLM's ``vllm serve`` budget
(8192 batched tokens on a ≥ 70 GiB GPU, not the offline LLM class's 16384) unless the command sets
``--max-num-batched-tokens``.

The same pages' TensorRT-LLM runs are priced too, as a control (ironlaw's TensorRT-LLM path as it is: trtllm-bench's
limits); ``--rows`` also prints each vLLM / SGLang row's tokens/s ratio to its TensorRT-LLM twin (same page, model,
weights and workload), which cancels what the page's machine and harness cost every engine alike.

Scored only: end-to-end rows check, they do not calibrate. ``--fit`` asks whether the H100 rows would support fitting
the one engine cost no kernel sees that a vLLM / SGLang step pays serially (``ServingConstants.step_s``: the
scheduler, input preparation, sampling and output handling — neither engine overlaps them by default), on H100 rows
only, leave-one-model-out, and what that value does to the framework's other rows; it stores nothing. ShareGPT rows
are priced at the dataset's mean lengths: ironlaw has no length distribution, so they are listed and summarised
apart from the fixed-length random rows. Rows whose serving mode ironlaw lacks (weight-only quantized GEMMs, MXFP4 experts on
Hopper, TP above the KV heads) are printed with the reason (the CSV's ``modelled``), not priced.
Error = predicted / published tokens/s − 1 (positive: ironlaw too fast). ``--mxfp4`` prices the gpt-oss rows
(MXFP4 experts on Hopper, which the summary leaves out) with no --dtype, so that ``serve`` stores the routed experts
as the checkpoint does (MXFP4, weight-only in bf16: ``serving.step.StoredExperts``), beside the same rows with every
weight in bf16 (``dtype="bf16"``); scored apart, never in the summary's groups. ``--latency`` prices the runs at
``--max-concurrency C`` (dataset ``sharegpt-concurrency-C``: C streams, each running its N / C requests one after
another) through ``ironlaw.serve(..., concurrency=C)`` without max_throughput: duration N / C × the request's
latency at the mean lengths; their steps carry a few sequences, so they check the small-batch step the throughput
rows hide. Scored apart, never in the summary's groups. A row whose command adds ``--async-scheduling`` is priced
with ``ironlaw.serve(..., async_scheduling=True)`` (vLLM's host work overlapped with the device); ``--async`` (and
``--rows``) sets each beside the serial row of the same page, model, weights, layout and workload: the published
async / serial tokens/s ratio against ironlaw's is the direct test of the serial host ordering, priced as the
checkpoint stores its weights (``--mxfp4``'s pricing for the gpt-oss rows, which the summary leaves out).
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from bench import ERRORS_HEAD, csv_rows, errors, header, keyed, line, percent, print_columns  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CSV = ROOT / "tests/data/vllm_sglang_gpustack_perflab.csv"
# the rows' models as ironlaw names them (built-ins; Qwen3-14B from its Hugging Face config)
SPECS = {"qwen3-14b": "hf:" + str(ROOT / "tests/data/llm_configs/qwen3-14b.json"), "qwen3-32b": "qwen3-32b",
         "deepseek-r1": "deepseek-r1", "gpt-oss-20b": "gpt-oss-20b", "qwen3-235b-a22b": "qwen3-235b-a22b"}
# a checkpoint whose format the built-in does not state: (model, dtype) -> its config (Qwen3-235B-A22B's FP8 checkpoints
# are block-scaled, 128 x 128 weight blocks, as the CSV header says: their routed experts run the fp8_block MoE layer)
CHECKPOINTS = {("qwen3-235b-a22b", "fp8"): "hf:" + str(ROOT / "tests/data/llm_configs/qwen3-235b-a22b-fp8.json")}
ASYNC = "--async-scheduling"      # a command with it runs vLLM's async scheduler
PROVENANCE = ("framework", "version", "gpu", "serve_command", "dataset", "source_url", "source_section",
              "source_date", "license")


def load(path: Path = CSV) -> list[dict]:
    """The CSV's rows (``#`` lines are its header), numbers as numbers; mean lengths per request added."""
    rows = csv_rows(path)
    for r in rows:
        for k in ("row", "gpus", "tp", "ep", "attention_dp", "num_prompts", "input_tokens", "output_tokens"):
            r[k] = int(r[k])
        for k in ("duration_s", "total_tok_s", "output_tok_s"):
            r[k] = float(r[k])
        r["prompt"] = round(r["input_tokens"] / r["num_prompts"])
        r["output"] = max(1, round(r["output_tokens"] / r["num_prompts"]))
    return rows


def async_scheduling(r: dict) -> bool:
    """Whether the row's server ran vLLM's async scheduling (its command adds ``--async-scheduling``)."""
    return ASYNC in r["serve_command"].split()


def server_budget(r: dict) -> int | None:
    """The batched-token budget the row's server ran with: the command's, else vLLM's OpenAI-server default on
    that GPU (``frameworks.vllm(hw, offline=False)``); SGLang's chunk is the same online and offline (None)."""
    if r["max_num_batched_tokens"]:
        return int(r["max_num_batched_tokens"])
    if r["framework"] != "vllm":
        return None
    from ironlaw.machine import hardware
    from ironlaw.models.serving import frameworks
    return frameworks.vllm(hardware.get(r["gpu"]), offline=False).max_num_batched_tokens


def predict(r: dict, step_s: float | None = None) -> float:
    """Predicted total tokens/s of row ``r`` through the library's front door; ``step_s`` (``--fit``'s what-if): the
    engine's fixed seconds per step in place of the TensorRT-LLM-fitted one the framework carries."""
    import ironlaw
    if step_s is not None:
        from dataclasses import replace
        from unittest import mock

        from ironlaw.models.serving import throughput
        with mock.patch.object(throughput, "FITTED", replace(throughput.FITTED, step_s=step_s)):
            return predict(r)
    spec = CHECKPOINTS.get((r["model"], r["dtype"]), SPECS[r["model"]])
    est = ironlaw.serve(spec, r["gpu"], prompt=r["prompt"], output=r["output"], tp=r["tp"],
                        ep=r["ep"], attention_dp=bool(r["attention_dp"]), dtype=r["dtype"], kv_dtype="bf16",
                        max_throughput=True, requests=r["num_prompts"], max_num_tokens=server_budget(r),
                        engine=r["framework"], async_scheduling=async_scheduling(r))
    return r["num_prompts"] * (r["prompt"] + r["output"]) / est.time_s


def mxfp4_rows(rows: list[dict] | None = None) -> list[dict]:
    """The rows of an MXFP4-expert checkpoint (gpt-oss) but the ``--async-scheduling`` runs (``async_pairs`` prices
    those beside their serial twins), priced as the checkpoint stores its experts (``pred``, no --dtype) and with
    every weight in bf16 (``pred_bf16``), each with its error against the published tokens/s."""
    out = []
    for r in rows if rows is not None else load():
        if r["dtype"] != "mxfp4" or async_scheduling(r):      # the async runs: ``async_pairs``
            continue
        pred, wide = predict(dict(r, dtype=None)), predict(dict(r, dtype="bf16"))
        out.append(dict(r, pred=pred, err=pred / r["total_tok_s"] - 1.0, pred_bf16=wide,
                        err_bf16=wide / r["total_tok_s"] - 1.0))
    return out


def async_twins(rows: list[dict]) -> list[tuple[dict, dict]]:
    """(async row, serial row) for each ``--async-scheduling`` row with a serial twin: the same page, model, weights,
    layout and workload, its command the same without the flag."""
    def key(r):
        cmd = " ".join(w for w in r["serve_command"].split() if w != ASYNC)
        return r["source_url"], r["model"], r["dtype"], r["tp"], r["ep"], r["dataset"], r["isl"], r["osl"], cmd
    serial = {key(r): r for r in rows if r["framework"] == "vllm" and not async_scheduling(r)}
    return [(r, serial[key(r)]) for r in rows if async_scheduling(r) and key(r) in serial]


def async_pairs(rows: list[dict] | None = None) -> list[dict]:
    """Each ``--async-scheduling`` row beside the serial row of the same page, model, weights, layout and workload
    (its command without the flag): published and predicted tokens/s of both, priced as the checkpoint stores its
    weights (no --dtype for an MXFP4 checkpoint, as ``mxfp4_rows``), their errors, and the async / serial ratios,
    which cancel everything but the host ordering."""
    out = []
    for a, s in async_twins(rows if rows is not None else load()):
        pa, ps = (predict(dict(r, dtype=None) if r["dtype"] == "mxfp4" else r) for r in (a, s))
        out.append({"row": a["row"], "serial": s["row"], "model": a["model"], "gpu": a["gpu"],
                    "dataset": a["dataset"], "prompt": a["prompt"], "output": a["output"],
                    "published": (a["total_tok_s"], s["total_tok_s"]), "pred": (pa, ps),
                    "err": (pa / a["total_tok_s"] - 1.0, ps / s["total_tok_s"] - 1.0),
                    "ratio_published": a["total_tok_s"] / s["total_tok_s"], "ratio_pred": pa / ps})
    return out


def print_async(pairs_: list[dict]) -> None:
    print("\n--async-scheduling rows beside their serial twins (same page, model, weights, workload; tokens/s)")
    print(f"{'row':>3} {'ser':>3} {'gpu':<4} {'model':<12} {'dataset':<8} {'ISL':>6} {'OSL':>4} {'pub async':>9} {'pub ser':>8} "
          f"{'ironlaw a':>9} {'ironlaw s':>9} {'err a':>7} {'err s':>7} {'pub a/s':>7} {'ironlaw a/s':>11}")
    for p in pairs_:
        print(f"{p['row']:>3} {p['serial']:>3} {p['gpu']:<4} {p['model']:<12} {p['dataset'][:8]:<8} {p['prompt']:>6} "
              f"{p['output']:>4} {p['published'][0]:>9.0f} {p['published'][1]:>8.0f} {p['pred'][0]:>9.0f} "
              f"{p['pred'][1]:>9.0f} {100 * p['err'][0]:>+6.1f}% {100 * p['err'][1]:>+6.1f}% "
              f"{p['ratio_published']:>7.3f} {p['ratio_pred']:>11.3f}")
    for gpu in sorted({p["gpu"] for p in pairs_}):
        ps = [p for p in pairs_ if p["gpu"] == gpu]
        print(f"{gpu}: {len(ps)} pairs, async / serial tokens/s median published "
              f"{statistics.median(p['ratio_published'] for p in ps):.3f}, ironlaw "
              f"{statistics.median(p['ratio_pred'] for p in ps):.3f}; median |err| async "
              f"{100 * statistics.median(abs(p['err'][0]) for p in ps):.1f}%, serial "
              f"{100 * statistics.median(abs(p['err'][1]) for p in ps):.1f}%")
# the columns of the printed row tables (bench.header, bench.line)
ROW, ENGINE, GPU = keyed("row", ">3", "row"), keyed("engine", "<6", "framework"), keyed("gpu", "<4", "gpu")
DATASET = ("dataset", "<8", lambda r: r["dataset"][:8])
PUBLISHED = keyed("published", ">9", "total_tok_s", ".0f")
MXFP4_COLUMNS = [ROW, ENGINE, GPU, keyed("model", "<12", "model"), DATASET, keyed("ISL", ">6", "prompt"),
                 keyed("OSL", ">4", "output"), keyed("N", ">5", "num_prompts"), PUBLISHED,
                 keyed("mxfp4", ">8", "pred", ".0f"), percent("error", "err"), keyed("bf16", ">8", "pred_bf16", ".0f"),
                 percent("error", "err_bf16")]


def print_mxfp4(rows: list[dict]) -> None:
    print("\nMXFP4-expert rows (gpt-oss, not in the summary): the checkpoint's format vs every weight in bf16")
    print_columns(MXFP4_COLUMNS, rows)
    if rows:
        mag = [abs(r["err"]) for r in rows]
        print(f"{len(rows)} rows: median |err| {100 * statistics.median(mag):.1f}% (MXFP4 experts), "
              f"{100 * statistics.median(abs(r['err_bf16']) for r in rows):.1f}% (all bf16)")


LATENCY = "sharegpt-concurrency-"   # the dataset name of a run at --max-concurrency C


def latency_rows(rows: list[dict] | None = None) -> list[dict]:
    """The capped-concurrency runs, each with ``concurrency``, ``pred`` (total tokens/s: N requests in C streams,
    each stream's requests back to back at ``ironlaw.serve``'s request latency), ``itl_s`` and ``err``."""
    import ironlaw
    out = []
    for r in rows if rows is not None else load():
        if not r["dataset"].startswith(LATENCY):
            continue
        c = int(r["dataset"].removeprefix(LATENCY))
        spec = CHECKPOINTS.get((r["model"], r["dtype"]), SPECS[r["model"]])
        est = ironlaw.serve(spec, r["gpu"], prompt=r["prompt"], output=r["output"], concurrency=c, tp=r["tp"],
                            dtype=r["dtype"], kv_dtype="bf16", engine=r["framework"]).estimate
        duration_s = r["num_prompts"] / c * est.request_latency_s
        pred = r["num_prompts"] * (r["prompt"] + r["output"]) / duration_s
        out.append(dict(r, concurrency=c, pred=pred, itl_s=est.itl_s, err=pred / r["total_tok_s"] - 1.0))
    return out


LATENCY_COLUMNS = [ROW, ENGINE, GPU, keyed("model", "<12", "model"), keyed("C", ">2", "concurrency"),
                   keyed("ISL", ">5", "prompt"), keyed("OSL", ">4", "output"), keyed("N", ">4", "num_prompts"),
                   PUBLISHED, keyed("ironlaw", ">8", "pred", ".0f"),
                   ("ITL ms", ">7", lambda r: f"{1e3 * r['itl_s']:.2f}"), percent("error", "err")]


def print_latency(rows: list[dict]) -> None:
    print("\ncapped-concurrency (latency) runs, not in the summary: C streams of back-to-back requests")
    print_columns(LATENCY_COLUMNS, rows)


def scored(rows: list[dict] | None = None) -> list[dict]:
    """Every row with ``pred`` (tokens/s) and ``err`` (predicted / published − 1), None where not modelled."""
    out = []
    for r in rows if rows is not None else load():
        r = dict(r, pred=None, err=None, seconds=None)
        if r["modelled"] == "yes":
            t0 = time.perf_counter()
            r["pred"] = predict(r)
            r["seconds"] = time.perf_counter() - t0
            r["err"] = r["pred"] / r["total_tok_s"] - 1.0
        out.append(r)
    return out


STEPS_S = (1e-5, 1e-3, 2e-3, 4e-3, 7e-3, 1e-2, 1.5e-2, 2e-2, 3e-2, 5e-2, 8e-2)   # --fit's grid, seconds per step


def fit_step(rows: list[dict]) -> float:
    """The grid's step_s minimising the mean |log(predicted / published)| over ``rows``."""
    def loss(step_s):
        return statistics.fmean(abs(math.log(predict(r, step_s) / r["total_tok_s"])) for r in rows)
    return min(STEPS_S, key=loss)


def what_if(rows: list[dict]) -> None:
    """``--fit``: per framework, step_s fitted on its H100 fixed-length rows, leave-one-model-out, and that value
    on its other rows and on the TensorRT-LLM control's H100 rows (the same pages' GPUs)."""
    priced = [r for r in rows if r["err"] is not None]
    for fw in ("vllm", "sglang"):
        h100 = [r for r in priced if r["framework"] == fw and r["gpu"] == "h100" and r["dataset"] == "random"]
        if not h100:
            continue
        step = fit_step(h100)
        print(f"\n--fit {fw}: step_s {1e3 * step:g} ms on its {len(h100)} H100 random rows "
              f"({len({r['model'] for r in h100})} models; grid {', '.join(f'{1e3 * x:g}' for x in STEPS_S)} ms)")
        for m in sorted({r["model"] for r in h100}):
            rest = [r for r in h100 if r["model"] != m]
            if not rest:
                continue
            held = [r for r in h100 if r["model"] == m]
            s_m = fit_step(rest)
            errs = [abs(predict(r, s_m) / r["total_tok_s"] - 1.0) for r in held]
            print(f"  without {m}: step_s {1e3 * s_m:g} ms, {m} median |err| {100 * statistics.median(errs):.1f}%")
        for label, sel in ((f"{fw} H100 random (fitted)", h100),
                           (f"{fw} other GPUs, random", [r for r in priced if r["framework"] == fw
                                                         and r["gpu"] != "h100" and r["dataset"] == "random"]),
                           (f"{fw} all ShareGPT", [r for r in priced if r["framework"] == fw
                                                   and r["dataset"] == "sharegpt"])):
            if sel:
                before = [r["err"] for r in sel]
                after = [predict(r, step) / r["total_tok_s"] - 1.0 for r in sel]
                print(f"  {label:<28} n {len(sel):>2}: signed median {100 * statistics.median(before):+.1f}% → "
                      f"{100 * statistics.median(after):+.1f}%, median |err| "
                      f"{100 * statistics.median(abs(e) for e in before):.1f}% → "
                      f"{100 * statistics.median(abs(e) for e in after):.1f}%")


def groups(rows: list[dict]) -> list[tuple[str, list[float]]]:
    """(label, signed errors) per framework × GPU × dataset kind, and per framework and dataset kind."""
    out = []
    for fw in ("vllm", "sglang", "trtllm"):
        for kind in ("random", "sharegpt"):
            for gpu in ("h100", "h200", "a100"):
                errs = [r["err"] for r in rows if r["err"] is not None and r["framework"] == fw
                        and r["gpu"] == gpu and r["dataset"] == kind]
                if errs:
                    out.append((f"{fw} {gpu} {kind}" + (" (control)" if fw == "trtllm" else ""), errs))
            errs = [r["err"] for r in rows if r["err"] is not None and r["framework"] == fw
                    and r["dataset"] == kind]
            if errs:
                out.append((f"{fw} all GPUs {kind}" + (" (control)" if fw == "trtllm" else ""), errs))
    return out


def pairs(rows: list[dict]) -> list[dict]:
    """Each priced vLLM / SGLang row beside the priced TensorRT-LLM row of the same page, model, weights and workload:
    published and predicted tokens/s ratios (framework / TensorRT-LLM). The ratio cancels what the page's GPU and
    harness cost all three engines alike; ``err`` = predicted ratio / published ratio − 1."""
    def key(r):
        return r["source_url"], r["model"], r["dtype"], r["tp"], r["dataset"], r["isl"], r["osl"]
    trt = {key(r): r for r in rows if r["framework"] == "trtllm" and r["err"] is not None}
    out = []
    for r in rows:
        c = trt.get(key(r)) if r["framework"] != "trtllm" and r["err"] is not None else None
        if c is not None:
            pub, pred = r["total_tok_s"] / c["total_tok_s"], r["pred"] / c["pred"]
            out.append({"row": r["row"], "control": c["row"], "framework": r["framework"], "gpu": r["gpu"],
                        "model": r["model"], "dataset": r["dataset"], "prompt": r["prompt"], "output": r["output"],
                        "published": pub, "predicted": pred, "err": pred / pub - 1.0})
    return out


PAIR_COLUMNS = [ROW, keyed("ctl", ">3", "control"), ENGINE, GPU, keyed("model", "<10", "model"), DATASET,
                keyed("ISL", ">6", "prompt"), keyed("OSL", ">4", "output"),
                keyed("published", ">9", "published", ".2f"), keyed("ironlaw", ">8", "predicted", ".2f"),
                percent("error", "err")]
ROW_COLUMNS = [ROW, ENGINE, GPU, keyed("model", "<15", "model"), keyed("dtype", "<5", "dtype"),
               keyed("tp", ">2", "tp"), keyed("ep", ">2", "ep"), keyed("adp", ">3", "attention_dp"), DATASET,
               keyed("ISL", ">6", "prompt"), keyed("OSL", ">4", "output"), keyed("N", ">5", "num_prompts"), PUBLISHED]


def print_pairs(pairs_: list[dict]) -> None:
    print("\nframework / TensorRT-LLM on the same page, model, weights and workload (tokens/s ratios)")
    print_columns(PAIR_COLUMNS, pairs_)


def print_rows(rows: list[dict]) -> None:
    print(f"{header(ROW_COLUMNS)} {'ironlaw':>9} {'error':>7}")
    for r in rows:
        head = line(ROW_COLUMNS, r)
        if r["err"] is None:
            print(f"{head} {'—':>9}  not modelled ({r['modelled'].removeprefix('no: ')})")
        else:
            print(f"{head} {r['pred']:>9.0f} {100 * r['err']:>+6.1f}%")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", action="store_true", help="print every row")
    ap.add_argument("--fit", action="store_true", help="what-if: step_s fitted on each framework's H100 rows")
    ap.add_argument("--mxfp4", action="store_true", help="also the gpt-oss (MXFP4-expert) rows, scored apart")
    ap.add_argument("--latency", action="store_true", help="also the capped-concurrency (latency) runs, scored apart")
    ap.add_argument("--async", dest="async_", action="store_true",
                    help="also each --async-scheduling run beside its serial twin (--rows prints it too)")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    rows = scored()
    if args.rows:
        print_rows(rows)
    n_mod = sum(r["err"] is not None for r in rows)
    print(f"\n{len(rows)} published rows, {n_mod} priced, {len(rows) - n_mod} not modelled "
          f"(tests/data/vllm_sglang_gpustack_perflab.csv); error = predicted / published total tokens/s − 1")
    print(f"{'rows':<36} {ERRORS_HEAD}")
    for label, errs in groups(rows):
        print(f"{label:<36} {errors(errs).cells()}")
    pp = pairs(rows)
    if args.rows:
        print_pairs(pp)
    for fw in ("vllm", "sglang"):
        errs = [p["err"] for p in pp if p["framework"] == fw]
        if errs:
            print(f"{fw} / TensorRT-LLM ratio, {len(errs)} pairs: median |err| "
                  f"{100 * statistics.median(abs(e) for e in errs):.1f}%, signed median "
                  f"{100 * statistics.median(errs):+.1f}%")
    if args.fit:
        what_if(rows)
    if args.mxfp4:
        print_mxfp4(mxfp4_rows())
    if args.latency:
        print_latency(latency_rows())
    if args.rows or args.async_:
        print_async(async_pairs())
    secs = [r["seconds"] for r in rows if r["seconds"] is not None]
    print(f"time per prediction: median {statistics.median(secs):.3f} s, max {max(secs):.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
