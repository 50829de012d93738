"""Candidate terms for the fused MoE layer's held-out tail, scored per GPU × dtype class (none of them stored).

The classes of benchmarks/kernel_moe.py (aiconfigurator-core 0.12.0's TensorRT-LLM 1.3.0rc20 ``moe_perf`` tables,
NVIDIA, Apache-2.0; balanced routing; fitted on every other layer shape, scored on the rest) with the law's form as
stored (``kernel_moe.fitted``) and with one more term each, fitted by least relative squares within the bounds
(moefit.bounded_lstsq, reweighted as moefit.fit) on top of the stored form's own:

    U      a cost per touched expert (the local experts the step's rows reach, balanced routing)
    t      a cost per token the layer takes in (routed to the rank or not: the router's and the permute's work)
    tiles  a cost per 128 × 128 output tile of the two grouped GEMMs, each touched expert's rows padded to 128,
           over the device's SMs (a fixed cost per CTA: prologue, epilogue, scale loads)
    U+t    both of the first two

    python benchmarks/moe_forms.py --data DIR [--only DTYPE] [--gpu GPU]   # DIR: aiconfigurator-core 0.12.0's
                                                                           # aiconfigurator_core/systems/data
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))
import kernel_moe  # noqa: E402
from kernel_rows import median_p90  # noqa: E402

FORMS = ("stored", "U", "t", "tiles", "U+t")
TILE = 128.0          # rows and columns of one grouped-GEMM output tile


def extra_columns(gpu: str, rows: dict, x: np.ndarray) -> dict:
    """Per row the candidate columns (seconds per unit at coefficient 1e-6: a fitted coefficient is µs per unit)."""
    from ironlaw.core.routing import balanced_local
    from ironlaw.machine import hardware
    key = zip(*(np.asarray(rows[c], int) for c in ("num_tokens", "num_experts", "topk", "moe_ep_size")))
    cache: dict = {}
    ru = np.array([cache.setdefault(k, balanced_local(*k)) for k in key], float)
    r, u = ru[:, 0], ru[:, 1]
    h = np.asarray(rows["hidden_size"], float)
    i = np.asarray(rows["inter_size"], float) / np.asarray(rows["moe_tp_size"], float)
    m_tiles = np.maximum(u, 1) * np.ceil(r / np.maximum(u, 1) / TILE)
    tiles = m_tiles * (np.ceil(2 * i / TILE) + np.ceil(h / TILE)) / (hardware.get(gpu).sms or 132)
    return {"U": u * 1e-6, "t": x[:, 6] * 1e-6, "tiles": tiles * 1e-6}


def base(dtype: str) -> list[int]:
    """The columns of moefit.terms the class's stored form fits (L, the η terms, and L_e / L_t where it has them)."""
    return [0, 1, 2, 3] + [5] * (dtype in kernel_moe.PER_EXPERT) + [6] * (dtype in kernel_moe.PER_TOKEN)


def fit_extra(x: np.ndarray, t: np.ndarray, extra: np.ndarray, dtype: str, iters: int = 20) -> np.ndarray:
    """Coefficients of T = [x's stored-form columns, extra]·c + G, reweighted least relative squares in bounds."""
    from ironlaw.measure.calibrate.moefit import bounded_lstsq
    X = np.column_stack([x[:, base(dtype)], extra])
    lower = np.array([0.0, 1 / 1.5, 1.0, 1.0] + [0.0] * (len(base(dtype)) - 4 + extra.shape[1]))
    y, w = 1 - x[:, 4] / t, np.ones_like(t)
    for _ in range(iters):
        c = bounded_lstsq(X / t[:, None] * w[:, None], y * w, lower)
        w = 1 / np.sqrt(np.maximum(np.abs((X @ c + x[:, 4]) / t - 1), 0.02))
    return c


def scores(gpu: str, dtype: str, rows: dict) -> dict:
    """{form: (median, p90)} of the held-out rows."""
    from ironlaw.measure.calibrate import moefit
    x, t, keep = kernel_moe.layer_terms(gpu, dtype, rows)
    f = kernel_moe.fitted(x[keep], t[keep], dtype)
    out = {"stored": median_p90(np.abs(moefit.predict_s(f, x[~keep]) / t[~keep] - 1))}
    cols = extra_columns(gpu, rows, x)
    for form in FORMS[1:]:
        extra = np.column_stack([cols[n] for n in form.split("+")])
        c = fit_extra(x[keep], t[keep], extra[keep], dtype)
        pred = np.column_stack([x[~keep][:, base(dtype)], extra[~keep]]) @ c + x[~keep, 4]
        out[form] = median_p90(np.abs(pred / t[~keep] - 1))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="aiconfigurator-core 0.12.0's aiconfigurator_core/systems/data")
    ap.add_argument("--only", action="append", help="this ironlaw MoE dtype class only (repeatable)")
    ap.add_argument("--gpu", action="append", help="this GPU only (repeatable)")
    a = ap.parse_args()
    print("held-out median / p90 per form (benchmarks/kernel_moe.py's split); " + ", ".join(FORMS))
    print(f"{'GPU':14s} {'dtype':12s} " + " ".join(f"{f:>13s}" for f in FORMS))
    for gpu, dt, _, rows in kernel_moe.groups(Path(a.data)):
        if (a.only and dt not in a.only) or (a.gpu and gpu not in a.gpu):
            continue
        s = scores(gpu, dt, rows)
        print(f"{gpu:14s} {dt:12s} " + " ".join(f"{100 * s[f][0]:5.1f}/{100 * s[f][1]:5.1f}%" for f in FORMS),
              flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
