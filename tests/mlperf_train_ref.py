"""MLPerf Training v5.0 and v5.1 closed-division results (tests/data/mlperf_training_v5.0_v5.1_llama31.csv),
held out: the rows, and the training step ironlaw predicts for one, shared by tests/test_mlperf_training.py
(the extract parses, every row builds a valid command) and benchmarks/mlperf_training.py (the table).

A row is one submitted system and benchmark (Llama 3.1 8B or 405B pre-training), with the layout its
submitter's published config sets (TP, PP, VP, CP, micro-batch; DP = GPUs / (TP·PP·CP)), the global batch
its logs print, and the throughput derived from its logs' training blocks (the CSV's header says how). What a
config sets that a row does not print, the same for every row (the submitters' NeMo configs share
config_common.sh): Megatron's distributed optimizer (ZeRO-1), sequence parallelism whenever TP > 1, the stage
sends overlapped with interleaving, bf16 gradients (``nemo_ref``'s rule), no activation recomputation (no Llama
3.1 config sets ACT_CKPT_* or ACG; a LoRA row's ``recompute_layers`` N > 0 runs ``--recompute full --recompute-layers
N``: its config's ACG=full, ACM=block, ACL=N, the extract's header). A row's
NVL72 job spreads over NVLink domains of ``nemo_ref.NVL_JOB_DOMAIN`` GPUs (64 of each rack's 72: 512 GPUs on
8 racks, 2,560 on 40), as the Blackwell NeMo rows do. A row with ``fp8_attention`` 1 runs ``--fp8-attention``
where its device's catalog entry can price it (``fp8_attention.unpriced``: not MI355X, which has no FP8 context
attention class; its rows keep bf16 attention); a row ``GRAPHS`` lists runs ``--cuda-graph`` with its scope.
The Llama 2 70B LoRA rows (``LORA_TABLE``, ``table(LORA_TABLE)``) fine-tune with ``--lora-rank`` ``LORA_RANK`` on
NeMo's default targets (``ironlaw.models.lora``), the rest as above.
"""
from __future__ import annotations

import csv
import json
import statistics
from pathlib import Path

from ironlaw.models import parallel
from ironlaw.models.analysis import training_graph
from nemo_ref import NVL_JOB_DOMAIN          # GPUs of a job per NVL72 rack, as the NeMo rows place them

DATA = Path(__file__).parent / "data"
TABLE = DATA / "mlperf_training_v5.0_v5.1_llama31.csv"
LORA_TABLE = DATA / "mlperf_training_v5.0_v5.1_llama2_70b_lora.csv"
GRAPHS = DATA / "mlperf_training_cuda_graphs.csv"       # (release, system, benchmark) → Megatron-Core graph scope
INT = ("gpus", "seq", "global_batch", "micro_batch", "tp", "pp", "vp", "cp", "tp_comm_overlap", "fp8_attention",
       "runs")
MODELS = {"llama3.1-8b": "llama3.1-8b", "llama3.1-405b": "llama3.1-405b", "llama2-70b-lora": "llama2-70b"}
LORA_RANK = {"llama2-70b-lora": 16}      # every run's log: lora_rank 16 (lora_alpha 32)


def table(path: Path = TABLE) -> list[dict]:
    """The extract's rows, numbers as numbers (``recompute_layers`` 0 where the extract has no such column)."""
    with path.open() as fh:
        rows = list(csv.DictReader(l for l in fh if not l.startswith("#")))
    for r in rows:
        for k in INT:
            r[k] = int(r[k])
        r["recompute_layers"] = int(r.get("recompute_layers") or 0)
        r["samples_per_s"] = float(r["samples_per_s"])
        r["tokens_per_s_per_gpu"] = float(r["tokens_per_s_per_gpu"])
    return rows


def graphs(path: Path = GRAPHS) -> dict:
    """The CUDA graph scope of each row its configs capture: (release, system, benchmark) → scope."""
    with path.open() as fh:
        return {(r["release"], r["system"], r["benchmark"]): r["cuda_graph"]
                for r in csv.DictReader(l for l in fh if not l.startswith("#"))}


def fp8_attention(row: dict) -> bool:
    """Whether the row's step runs ``--fp8-attention``: its config's FP8 attention, where the device prices it."""
    from ironlaw.machine import hardware
    from ironlaw.models.fp8_attention import unpriced
    return bool(row["fp8_attention"]) and not unpriced(hardware.get(row["gpu"]))


def dp(row: dict) -> int:
    """The data-parallel size the row's layout leaves."""
    return row["gpus"] // (row["tp"] * row["pp"] * row["cp"])


def options(row: dict) -> dict:
    """The training plan's options of a row (the module docstring's rules)."""
    tp, vp = row["tp"], row["vp"]
    nodes = ({"nodes": -(-row["gpus"] // NVL_JOB_DOMAIN)}
             if row["gpu"].startswith("gb") and row["gpus"] > 72 else {})
    return dict(gpus=row["gpus"], **nodes, tp=tp, pp=row["pp"], cp=row["cp"], ep=1,
                global_batch=row["global_batch"], micro_batch=row["micro_batch"], interleave=vp, zero=1,
                sequence_parallel=tp > 1, tp_comm_overlap=bool(row["tp_comm_overlap"]), overlap_p2p=vp > 1,
                grad_fp32=False, moe_a2a_overlap=False, param_gather_exposed=False,
                cuda_graph=graphs().get((row["release"], row["system"], row["benchmark"])),
                fp8_attention=fp8_attention(row), lora_rank=LORA_RANK.get(row["benchmark"]),
                **(dict(recompute="full", recompute_layers=row["recompute_layers"]) if row["recompute_layers"] else {}))


def command(row: dict) -> str:
    """The ``ironlaw analyze`` line that predicts the row."""
    o = options(row)
    flags = ([f"--nodes {o['nodes']}"] if "nodes" in o else []) + [f"--gpus {o['gpus']}", f"--tp {o['tp']}",
                                                                   f"--pp {o['pp']}"]
    flags += [f"--{k} {o[k]}" for k in ("cp", "interleave") if o[k] > 1]
    flags += ["--zero 1"]
    flags += [f for f, on in (("--sequence-parallel", o["sequence_parallel"]),
                              ("--tp-comm-overlap", o["tp_comm_overlap"]), ("--overlap-p2p", o["overlap_p2p"]),
                              ("--fp8-attention", o["fp8_attention"])) if on]
    flags += [f"--cuda-graph {o['cuda_graph']}"] if o["cuda_graph"] else []
    flags += [f"--lora-rank {o['lora_rank']}"] if o["lora_rank"] else []
    flags += [f"--recompute full --recompute-layers {o['recompute_layers']}"] if "recompute_layers" in o else []
    return (f"ironlaw analyze {MODELS[row['benchmark']]} --phase train --on {row['gpu']} --dtype {row['dtype']} "
            f"--seq {row['seq']} --global-batch {row['global_batch']} --micro-batch {row['micro_batch']} "
            + " ".join(flags))


def predict(row: dict, hw):
    """ironlaw's training step (parallel.StepEstimate) of one row on ``hw``."""
    opts = options(row)
    g = training_graph(MODELS[row["benchmark"]], hw, row["seq"], row["dtype"], opts)
    return parallel.train_step(g, hw, parallel.make_plan(opts, g, hw))


def block_rates(log: str) -> list[float]:
    """Samples per second of each training block of one mllog result file: the block's samples (the cumulative
    ``samples_count`` of the ``eval_start`` after it, less that of the one before, 0 at the start) over its
    ``block_start`` → ``block_stop`` seconds (``time_ms``); a block with no evaluation after it is left out.
    An ``:::MLLOG`` line may carry a rank prefix."""
    mark = ":::MLLOG "                  # after a rank prefix ("0: ") in some submitters' logs
    events = [json.loads(line[line.index(mark) + len(mark):]) for line in log.splitlines() if mark in line]
    blocks, start, counts = [], None, [0]
    for e in events:
        if e["key"] == "block_start":
            start = e["time_ms"]
        elif e["key"] == "block_stop" and start is not None:
            blocks.append((start, e["time_ms"]))
            start = None
        elif e["key"] == "eval_start":
            counts.append(e["metadata"]["samples_count"])
    return [(counts[k + 1] - counts[k]) / ((b - a) / 1e3) for k, (a, b) in enumerate(blocks) if k + 1 < len(counts)]


def samples_per_s(logs: list[str]) -> float:
    """A row's throughput: the median over its result files of the median of their blocks' rates (a file with
    no complete block, a run that stopped before its first evaluation, is left out)."""
    return statistics.median(statistics.median(b) for b in map(block_rates, logs) if b)
