"""Predicted vs measured: join the estimate's op rows to the measured records by op key, sum by
kind and in total, score.

Join key: the recorder's record index and op name — the fake capture that the prediction reads and
the real run that is timed record the same op sequence (checked op by op in ``measure``).

What is compared
- per op: the predicted time of the op's kernel (the law's op time minus the calibrated framework
  share ``framework_s``, which is spent between ops, not inside them) against the median measured
  time of that op;
- per kind: sums of the same; plus a 'framework' row: the calibrated framework share of every op
  against end to end minus the sum of the measured ops;
- in total: the law's time against the median end-to-end time.
Naive baseline (design notes): per op max(FLOPs / R, bytes / BW) + L with R the device's fp32 matrix
rate at its flat matmul efficiency, BW its main memory at its flat memory efficiency, L its per-op
latency — no calibration, no caches, every op on the same roof.
"""
from __future__ import annotations

import json

import numpy as np

from ...core.gemmshape import attention_nk, conv_groups, conv_nk
from ...core.graph import DTYPE_BYTES

TOLERANCE = 0.25          # an op is 'within' when |predicted / measured - 1| <= this


def framework_s(hw, frontend: str = "torch") -> float:
    """The calibration's seconds per op between ops for a graph of ``frontend`` (0 uncalibrated)."""
    from ...law.efficiency import framework_terms
    return framework_terms(hw.calibration, frontend)[0]


def naive_times(graph, hw) -> np.ndarray:
    """Per graph op (× count): the design notes' naive per-op roofline on ``hw``'s flat numbers."""
    dev = hw.memory[hw.device_tier]
    bw = dev.bw_Bps * hw.efficiency["memory"]
    out = []
    for op in graph.ops:
        rate = hw.peak_flops.get(op.dtype, hw.peak_flops.get("fp32", max(hw.peak_flops.values()))) * hw.eta("matmul")
        t = max(float(op.flops + op.vector_flops) / rate, float(op.total_bytes) / bw) + hw.op_latency_s
        out.append(t * op.count)
    return np.array(out)


def op_rows(est, measured: list[dict], stat: str = "median") -> list[dict]:
    """One row per graph op: what it is, its predicted terms and kernel time, its measured time.

    ``measured[i]`` (for graph op i): {index, median_s, min_s, cv, spread_s, out_shapes}; ``stat`` picks
    the measured time compared (median, or min: the least disturbed run on a busy machine).
    """
    fw = framework_s(est.hw, est.cols.frontend)
    rows = []
    for row, op, m in zip(est.rows(), est.graph.ops, measured):
        pred = max(row["time_s"] - fw * row["count"], 0.0)
        meas = m["min_s"] if stat == "min" else m["median_s"]
        rows.append({
            "index": int(m["index"]), "name": op.name, "kind": op.kind, "module": op.module, "shapes": op.shapes,
            "dtype": op.dtype, "count": int(op.count), "flops": float(op.flops),
            "bytes": {c: float(b) for c, b in op.bytes.items()}, "bytes_written": float(op.bytes_written),
            "out_shapes": m.get("out_shapes", []),
            "predicted_s": pred, "data_s": row["data_s"], "compute_s": row["compute_s"],
            "latency_s": max(row["latency_s"] - fw * row["count"], 0.0), "bound": row["bound"],
            "measured_s": meas, "median_s": m["median_s"], "min_s": m["min_s"], "measured_cv": m["cv"],
            "spread_s": m["spread_s"], "error": pred / meas - 1.0 if meas > 0 else None,
            **({"weights_kn": True} if op.attrs.get("weights_kn") else {}),
            **({"nk": list(op.attrs["nk"])} if op.attrs.get("nk") else {}),
            **{k: int(op.attrs[k]) for k in ("groups", "group_channels") if k in op.attrs},
        })
    return rows


def row_attrs(r: dict) -> dict:
    """The op attributes a row carries (``weights_kn``, ``nk``, a grouped conv's ``groups`` and
    ``group_channels``), for an op rebuilt from it; a row saved before rows carried them gets them from its
    shapes text: a forward conv's (input, weight, …), an attention's (query, keys, values), a product's with
    a weight matrix (mm: x, W; addmm: bias, x, W; bmm over one matrix: x, [1, K, N] — W passed as K×N, its
    bytes among the row's weights)."""
    attrs = {"weights_kn": True} if r.get("weights_kn") else {}
    attrs.update({k: int(r[k]) for k in ("groups", "group_channels") if k in r})
    nk = r.get("nk")
    if (not nk or (r.get("kind") == "conv" and "groups" not in r)) and "(" not in r.get("name", ""):
        try:
            shapes = json.loads("[" + r.get("shapes", "").rstrip("…") + "]")
            if r.get("kind") == "conv":
                nk = nk or conv_nk(shapes[1])
                attrs.update(conv_groups(shapes[0], shapes[1]))
            elif r.get("kind") == "attention":
                nk = attention_nk(shapes[1])
            elif r.get("name") in ("aten::mm", "aten::addmm", "aten::bmm") and (
                    len(shapes[-1]) == 2 or (len(shapes[-1]) == 3 and shapes[-1][0] == 1)):
                k, n = (int(x) for x in shapes[-1][-2:])
                b = DTYPE_BYTES.get(r.get("dtype"), 0.0)
                nk = (n, k) if b and r.get("bytes", {}).get("weights", 0.0) >= k * n * b else None
        except (ValueError, IndexError, TypeError):
            nk = r.get("nk")
    if nk:
        attrs["nk"] = tuple(int(x) for x in nk)
    return attrs


def by_kind(rows: list[dict]) -> dict[str, dict]:
    agg: dict[str, dict] = {}
    for r in rows:
        a = agg.setdefault(r["kind"], {"ops": 0, "predicted_s": 0.0, "measured_s": 0.0, "spread_s": 0.0})
        a["ops"] += 1
        a["predicted_s"] += r["predicted_s"]
        a["measured_s"] += r["measured_s"]
        a["spread_s"] += r["spread_s"]
    for a in agg.values():
        a["error"] = a["predicted_s"] / a["measured_s"] - 1.0 if a["measured_s"] > 0 else None
    return dict(sorted(agg.items(), key=lambda kv: -kv[1]["measured_s"]))


def within_share(rows: list[dict], tol: float = TOLERANCE) -> float:
    """Share of measured op time in ops predicted within ±tol."""
    tot = sum(r["measured_s"] for r in rows)
    ok = sum(r["measured_s"] for r in rows if r["error"] is not None and abs(r["error"]) <= tol)
    return ok / tot if tot > 0 else 0.0


def within_2x_count(rows: list[dict]) -> float:
    n = [r for r in rows if r["measured_s"] > 0]
    ok = [r for r in n if 0.5 <= r["predicted_s"] / r["measured_s"] <= 2.0]
    return len(ok) / len(n) if n else 0.0
