"""Candidate terms for the fused MoE layer's held-out tail, scored per GPU × dtype class.

The classes of benchmarks/kernel_moe.py (aiconfigurator-core 0.12.0's TensorRT-LLM 1.3.0rc20 ``moe_perf`` tables,
NVIDIA, Apache-2.0; balanced routing; fitted on every other layer shape, scored on the rest) — or, with
``--release 1.0``, the TensorRT-LLM 1.0 classes (aiconfigurator 0.8.0's tables, power_law_1.01 routing,
``kernel_moe.release_groups``) — with the law's base form (``kernel_moe.fitted`` without the costs per touched
expert and per token that ``kernel_moe.STORED_TOUCHED``'s and ``OWN_KEY``'s classes store) and with one change each,
fitted by least relative squares within the bounds (moefit.bounded_lstsq, reweighted as moefit.fit) on the fit half
(U+t is the form those classes store, and ``--touched`` fits on ``kernel_moe.TOUCHED``):

    U      + a cost per touched expert (the local experts the step's rows reach, under the table's routing)
    t      + a cost per token the layer takes in (routed to the rank or not: the router's and the permute's work)
    tiles  + a cost per 128 × 128 output tile of the two grouped GEMMs, each touched expert's rows padded to 128,
           over the device's SMs (a fixed cost per CTA: prologue, epilogue, scale loads)
    U+t    + both of the first two
    roof   the grouped GEMMs as a roofline instead of a sum: max(W/η_w, F/η_c) + σ·min(W/η_w, F/η_c) — their
           weights stream under their MMAs but for the share σ (the law's ``serial``, efficiency.composed), η_c
           fitted beside that overlap (in the sum it runs into its bound 1); σ the best of ``SIGMAS`` on the fit half
    roof+waves     roof, the compute side gaining a cost per wave of output tiles (the tiles above over the SMs):
                   a cost per touched expert that scales with its GEMMs' N tiles (2i'/128 up, h/128 down)
    roof+waves+U   roof+waves and a cost per touched expert outside the roofline
    U+t+pad        U+t, and the FLOPs of each touched expert's rows padded to whole 128-row M blocks (the padding
                   rows' FLOPs at the matrix peak, their own coefficient: DeepGEMM's m-grouped GEMMs on SM100 run one
                   layout, block M 128, csrc/jit_kernels/heuristics/sm100.hpp ``get_layout_candidates``); its η_w
                   printed last (in the layer's sum the padded MMAs can stand in for the weights' stream they overlap)
and, with ``--release 1.0`` (``RELEASE_FORMS``), the router's top-k on PyTorch where the layer routes on it
(``core.routing.torch_router``: a fixed cost and its logits' bytes, moefit.terms' last two columns) alone (R), with
U and t (U+t+R: ``kernel_moe.RELEASE_FORM``, stored) and with a cost per local expert slot (E+R)

    python benchmarks/moe_forms.py --data DIR [--only DTYPE] [--gpu GPU] [--tail | --tuning]
    python benchmarks/moe_forms.py --data DIR08 --release 1.0 [--gpu GPU]
    (DIR: aiconfigurator-core 0.12.0's aiconfigurator_core/systems/data; DIR08: aiconfigurator 0.8.0's
    aiconfigurator/systems/data)

``--tail``: per class, the share of the held-out rows whose layer shape times fewer tokens slower than more
(a row ≥ 10% under the slowest row of fewer tokens at the same shape: a kernel tactic changing with the token
count, not a law term), and the base form's held-out median / p90 on the other rows; and the rows the law's
terms cannot tell apart ("twins": the same hidden, inter/TP, top-k, tokens, routed rows R and touched experts U,
at different local expert counts — the autotuner's cache key, TensorRT-LLM's tactic per (dtype, hidden,
inter/TP, local experts), aiconfigurator collector/trtllm/collect_moe.py), with the |deviation| of each from its
twins' median: the error no form without the local slots can go under, and the share of twin groups where
more local slots run ≥ 20% faster (no cost per slot explains that either).

``--tuning``: per class, the held-out rows whose autotuner cache file (dtype, hidden, inter/TP, local experts) another
collected case writes or loads (``kernel_moe.groups``' ``shared_key``, ``moefit.shared_tuning``: the collector tunes
each file once and a later case of the file runs the tactics tuned for the first, or the fallback), and
``TUNING_FORMS`` fitted on every fit row and on the fit rows of their own key alone, scored on all held-out rows and
on the own-key ones.
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
from kernel_tables import RELEASE_GPUS  # noqa: E402

FORMS = ("base", "U", "t", "tiles", "U+t", "roof", "roof+waves", "roof+waves+U", "U+t+pad")
RELEASE_FORMS = ("R", "U+t+R", "E+R")     # --release: the forms with the router's PyTorch top-k
TILE = 128.0          # rows and columns of one grouped-GEMM output tile
SIGMAS = (0.0, 0.25, 0.5, 0.75, 1.0)
INIT_US = 2.0         # the alternating fit's starting µs per unit of a compute-side column (0 would never leave
                      # the weights' branch)
MONOTONE_TOL = 0.10   # --tail: a row this far under the slowest row of fewer tokens at its shape is flagged


def extra_columns(gpu: str, rows: dict, x: np.ndarray, routing: str = kernel_moe.ROUTING) -> dict:
    """Per row the candidate columns (seconds per unit at coefficient 1e-6: a fitted coefficient is µs per unit)."""
    from ironlaw.core.routing import padded_rows, routing_of
    from ironlaw.machine import hardware
    route = routing_of(routing)
    key = zip(*(np.asarray(rows[c], int) for c in ("num_tokens", "num_experts", "topk", "moe_ep_size")))
    cache: dict = {}
    ru = np.array([cache.setdefault(k, route(*k)) for k in key], float)
    r, u = ru[:, 0], ru[:, 1]
    h = np.asarray(rows["hidden_size"], float)
    i = np.asarray(rows["inter_size"], float) / np.asarray(rows["moe_tp_size"], float)
    m_tiles = np.maximum(u, 1) * np.ceil(r / np.maximum(u, 1) / TILE)
    tiles = m_tiles * (np.ceil(2 * i / TILE) + np.ceil(h / TILE)) / (hardware.get(gpu).sms or 132)
    pad = np.where(r > 0, padded_rows(r, u, TILE) / np.maximum(r, 1.0) - 1.0, 0.0) * x[:, 2]
    return {"U": u * 1e-6, "t": x[:, 6] * 1e-6, "tiles": tiles * 1e-6, "waves": tiles * 1e-6, "E": x[:, 5] * 1e-6,
            "R": x[:, 8:10], "pad": pad}


def base(dtype: str) -> list[int]:
    """The columns of moefit.terms the class's base form fits (L, the η terms, and L_e / L_t where it has them)."""
    return [0, 1, 2, 3] + [5] * (dtype in kernel_moe.PER_EXPERT) + [6] * (dtype in kernel_moe.PER_TOKEN)


def lower_bounds(dtype: str, n_extra: int) -> np.ndarray:
    return np.array([0.0, 1 / 1.5, 1.0, 1.0] + [0.0] * (len(base(dtype)) - 4 + n_extra))


def fit_extra(x: np.ndarray, t: np.ndarray, extra: np.ndarray, dtype: str, iters: int = 20) -> np.ndarray:
    """Coefficients of T = [x's base-form columns, extra]·c + G, reweighted least relative squares in bounds."""
    from ironlaw.measure.calibrate.moefit import bounded_lstsq
    X = np.column_stack([x[:, base(dtype)], extra])
    lower = lower_bounds(dtype, extra.shape[1])
    y, w = 1 - x[:, 4] / t, np.ones_like(t)
    for _ in range(iters):
        c = bounded_lstsq(X / t[:, None] * w[:, None], y * w, lower)
        w = 1 / np.sqrt(np.maximum(np.abs((X @ c + x[:, 4]) / t - 1), 0.02))
    return c


def roof_design(x: np.ndarray, c: np.ndarray, sigma: float, dtype: str, inner: np.ndarray,
                outer: np.ndarray) -> np.ndarray:
    """The design matrix of the roofline form at coefficients ``c``: per row the weights' column (1) and the
    compute side's (2, and ``inner``) scaled by 1 on the longer side and σ on the shorter; ``outer`` added."""
    cols = base(dtype)
    n_in = inner.shape[1]
    at = len(cols)
    compute = x[:, 2] * c[2] + (inner @ c[at:at + n_in] if n_in else 0.0)
    weights_bind = x[:, 1] * c[1] >= compute
    on_w, on_c = np.where(weights_bind, 1.0, sigma), np.where(weights_bind, sigma, 1.0)
    X = x[:, cols].copy()
    X[:, 1] *= on_w
    X[:, 2] *= on_c
    return np.column_stack([X, inner * on_c[:, None], outer])


def fit_roof(x: np.ndarray, t: np.ndarray, dtype: str, sigma: float, inner: np.ndarray, outer: np.ndarray,
             iters: int = 25) -> np.ndarray:
    """The roofline form's coefficients at overlap share ``sigma``: which side binds is re-decided each step from
    the last coefficients, then the reweighted bounded least squares as ``fit_extra``."""
    from ironlaw.measure.calibrate.moefit import bounded_lstsq
    lower = lower_bounds(dtype, inner.shape[1] + outer.shape[1])
    c = np.concatenate([[3e-5, 1.1, 1.5, 3.0], lower[4:len(base(dtype))],
                        [INIT_US] * inner.shape[1], lower[len(base(dtype)) + inner.shape[1]:]])
    y, w = 1 - x[:, 4] / t, np.ones_like(t)
    for _ in range(iters):
        X = roof_design(x, c, sigma, dtype, inner, outer)
        c = bounded_lstsq(X / t[:, None] * w[:, None], y * w, lower)
        X = roof_design(x, c, sigma, dtype, inner, outer)
        w = 1 / np.sqrt(np.maximum(np.abs((X @ c + x[:, 4]) / t - 1), 0.02))
    return c


def roof_predict(x, c, sigma, dtype, inner, outer) -> np.ndarray:
    return roof_design(x, c, sigma, dtype, inner, outer) @ c + x[:, 4]


def roof_scores(x, t, keep, dtype, inner, outer) -> tuple[tuple[float, float], float, np.ndarray]:
    """((median, p90) held out, σ, coefficients) of the roofline form, σ the one of least mean |error| on the
    fit half."""
    best = None
    for sigma in SIGMAS:
        c = fit_roof(x[keep], t[keep], dtype, sigma, inner[keep], outer[keep])
        fit_err = float(np.mean(np.abs(roof_predict(x[keep], c, sigma, dtype, inner[keep], outer[keep]) / t[keep] - 1)))
        if best is None or fit_err < best[0]:
            best = (fit_err, sigma, c)
    _, sigma, c = best
    held = np.abs(roof_predict(x[~keep], c, sigma, dtype, inner[~keep], outer[~keep]) / t[~keep] - 1)
    return median_p90(held), sigma, c


def scores(gpu: str, dtype: str, rows: dict, routing: str = kernel_moe.ROUTING) -> dict:
    """{form: (median, p90)} of the held-out rows, and {roofline form: (σ, η_c)}."""
    from ironlaw.measure.calibrate import moefit
    release = routing == kernel_moe.RELEASE_ROUTING
    x, t, keep = kernel_moe.layer_terms(gpu, dtype, rows, routing, kernel_moe.RELEASE_ROUTER["1.0"] if release else None)
    f = kernel_moe.fitted(x[keep], t[keep], dtype)
    out = {"base": median_p90(np.abs(moefit.predict_s(f, x[~keep]) / t[~keep] - 1))}
    cols = extra_columns(gpu, rows, x, routing)
    for form in FORMS[1:5] + FORMS[8:] + (RELEASE_FORMS if release else ()):
        extra = np.column_stack([cols[n] for n in form.split("+")])
        c = fit_extra(x[keep], t[keep], extra[keep], dtype)
        pred = np.column_stack([x[~keep][:, base(dtype)], extra[~keep]]) @ c + x[~keep, 4]
        out[form] = median_p90(np.abs(pred / t[~keep] - 1))
        out[f"{form} η_w"] = 1 / c[1]
    roof = {}
    none = np.zeros((len(t), 0))
    for form, inner, outer in (("roof", none, none), ("roof+waves", cols["waves"][:, None], none),
                               ("roof+waves+U", cols["waves"][:, None], cols["U"][:, None])):
        out[form], sigma, c = roof_scores(x, t, keep, dtype, inner, outer)
        roof[form] = (sigma, 1 / c[2])
    return out, roof


def non_monotone(rows: dict, tol: float = MONOTONE_TOL) -> np.ndarray:
    """Per row, whether its layer shape has a row ≥ ``tol`` under the slowest row of fewer tokens (the table's
    kernel tactic, not the work, changing with the token count)."""
    keys = list(zip(*(np.asarray(rows[c]) for c in kernel_moe.SHAPE)))
    tokens, lat = np.asarray(rows["num_tokens"]), np.asarray(rows["latency_s"], float)
    shapes: dict = {}
    for j, k in enumerate(keys):
        shapes.setdefault(k, []).append(j)
    out = np.zeros(len(tokens), bool)
    for idx in shapes.values():
        idx = np.asarray(idx)[np.argsort(tokens[idx], kind="stable")]
        if np.any(lat[idx] < (1 - tol) * np.maximum.accumulate(lat[idx])):
            out[idx] = True
    return out


def tail(gpu: str, dtype: str, rows: dict, routing: str = kernel_moe.ROUTING) -> tuple[float, tuple, tuple]:
    """(share of held-out rows in non-monotone shapes, the base form's (median, p90) on the other held-out
    rows, its (median, p90) on all held-out rows)."""
    from ironlaw.measure.calibrate import moefit
    x, t, keep = kernel_moe.layer_terms(gpu, dtype, rows, routing)
    f = kernel_moe.fitted(x[keep], t[keep], dtype)
    err = np.abs(moefit.predict_s(f, x) / t - 1)
    flagged = non_monotone(rows)
    return float(flagged[~keep].mean()), median_p90(err[~keep & ~flagged]), median_p90(err[~keep])


def tail_line(gpu: str, dtype: str, rows: dict, routing: str) -> str:
    share, rest, every = tail(gpu, dtype, rows, routing)
    dev, faster = twins(rows, routing)
    tw = dev[~np.isnan(dev)]
    med, p90 = median_p90(tw) if len(tw) else (0.0, 0.0)
    return (f"{gpu:14s} {dtype:12s} {100 * share:5.1f}%  rest {100 * rest[0]:5.1f}/{100 * rest[1]:5.1f}%  "
            f"all {100 * every[0]:5.1f}/{100 * every[1]:5.1f}%   twins {100 * len(tw) / len(dev):4.1f}% of rows, "
            f"|dev| {100 * med:4.1f}/{100 * p90:5.1f}%, more slots faster in {100 * faster:4.1f}% of groups")


TWIN_KEY = ("hidden_size", "inter", "topk", "num_tokens", "R", "U")
TWIN_FASTER = 0.20    # --tail: a twin with more local slots this much faster than one with fewer


def twins(rows: dict, routing: str = kernel_moe.ROUTING) -> tuple[np.ndarray, float]:
    """(per row its |deviation| from the median of its twins — NaN without one —, the share of twin groups
    where more local slots run ≥ ``TWIN_FASTER`` faster)."""
    from ironlaw.core.routing import routing_of
    route = routing_of(routing)
    n = len(rows["num_tokens"])
    ru = [route(*k) for k in zip(*(np.asarray(rows[c], int) for c in ("num_tokens", "num_experts", "topk",
                                                                         "moe_ep_size")))]
    cols = {"hidden_size": np.asarray(rows["hidden_size"]), "topk": np.asarray(rows["topk"]),
            "inter": np.asarray(rows["inter_size"]) // np.asarray(rows["moe_tp_size"]),
            "num_tokens": np.asarray(rows["num_tokens"]), "R": [r for r, _ in ru], "U": [u for _, u in ru]}
    local = np.asarray(rows["num_experts"]) // np.asarray(rows["moe_ep_size"])
    lat = np.asarray(rows["latency_s"], float)
    groups: dict = {}
    for j in range(n):
        groups.setdefault(tuple(cols[c][j] for c in TWIN_KEY), []).append(j)
    dev, faster, multi = np.full(n, np.nan), 0, 0
    for idx in (np.asarray(g) for g in groups.values() if len(g) > 1):
        multi += 1
        dev[idx] = np.abs(lat[idx] / np.median(lat[idx]) - 1)
        by_slots = lat[idx][np.argsort(local[idx], kind="stable")]
        faster += bool(np.any(by_slots < (1 - TWIN_FASTER) * np.maximum.accumulate(by_slots)))
    return dev, faster / multi if multi else 0.0


TUNING_FORMS = ("base", "U+t")   # --tuning: the forms fitted on every fit row, then on the own-key fit rows only


def tuning_line(gpu: str, dtype: str, rows: dict, routing: str = kernel_moe.ROUTING) -> str:
    """``--tuning``: the class's held-out rows split by whether their autotuner key is shared
    (``moefit.shared_tuning``); per form of ``TUNING_FORMS``, fitted on every fit row and on the fit rows of their
    own key alone, the held-out median / p90 of all rows and of the own-key rows, and the signed median error of the
    shared-key rows (negative: measured slower than the form)."""
    from ironlaw.measure.calibrate import moefit
    x, t, keep = kernel_moe.layer_terms(gpu, dtype, rows, routing)
    shared = np.asarray(rows["shared_key"], bool) if "shared_key" in rows else moefit.shared_tuning(rows)
    cols = extra_columns(gpu, rows, x, routing)
    out = f"{gpu:13s} {dtype:9s} {100 * shared[~keep].mean():5.1f}%"
    for form in TUNING_FORMS:
        extra = (np.column_stack([cols[n] for n in form.split("+")]) if form != "base"
                 else np.zeros((len(t), 0)))
        for fit_rows in (keep, keep & ~shared):
            c = fit_extra(x[fit_rows], t[fit_rows], extra[fit_rows], dtype)
            err = (np.column_stack([x[:, base(dtype)], extra]) @ c + x[:, 4]) / t - 1
            every, own = median_p90(np.abs(err[~keep])), median_p90(np.abs(err[~keep & ~shared]))
            signed = float(np.median(err[~keep & shared])) if np.any(~keep & shared) else 0.0
            out += (f" | {100 * every[0]:4.1f}/{100 * every[1]:5.1f} {100 * own[0]:4.1f}/{100 * own[1]:5.1f} "
                    f"{100 * signed:+5.1f}%")
    return out


CROSS_BINS = (1.05, 1.10, 1.20, 1.40)   # --cross-check: the shape ratios the held-out rows are split at
CROSS_PAST = 1.15                        # --cross-check: the share of shapes past this ratio is printed


def cross_check(groups: list[tuple], asked=lambda gpu, dtype: True) -> list[str]:
    """``--cross-check``: per class of a GPU with an SM 103 reference (``kernelfit.rules.MOE_CROSS_REFERENCE``) and
    dtype, the per-shape ratio of its rows to the reference's at the same shape (``moefit.shape_ratios``) over the
    shapes whose cache file no other case shares and over those the min-latency layer alone shares (the classes of
    ``MOE_CROSS_CHECK``): shapes, median, p90, largest, share past ``CROSS_PAST``; and for those classes the signed
    median error of the held-out rows under the base form fitted on every row, by their shape's ratio."""
    from ironlaw.measure.calibrate import moefit
    from ironlaw.measure.calibrate.kernelfit import rules
    by = {(g, dt): rows for g, dt, _, rows in groups}
    out = []
    for (gpu, dt), rows in by.items():
        ref = by.get((rules.MOE_CROSS_REFERENCE.get(gpu), dt))
        if ref is None or not asked(gpu, dt):
            continue
        ratio = moefit.shape_ratios(rows, ref)
        shared = np.asarray(rows.get("shared_file", rows["shared_key"]), bool)
        sets = [("own", ~shared)] + ([("min-latency alone", shared & ~np.asarray(rows["shared_other"], bool))]
                                     if "shared_other" in rows else [])
        for name, on in sets:
            shapes = zip(*(np.asarray(rows[c]).tolist() for c in kernel_moe.SHAPE))
            per_shape = np.array(list({k: r for k, r, o in zip(shapes, ratio, on) if o and not np.isnan(r)}.values()))
            if len(per_shape):
                out.append(f"{gpu:6s} {dt:11s} / {rules.MOE_CROSS_REFERENCE[gpu]:6s} {name:18s} {len(per_shape):4d} shapes: "
                           f"median {np.median(per_shape):.3f}, p90 {np.percentile(per_shape, 90):.3f}, largest "
                           f"{per_shape.max():.3f}, past {CROSS_PAST}: {100 * np.mean(per_shape > CROSS_PAST):4.1f}%")
        if "shared_other" in rows:
            x, t, keep = kernel_moe.layer_terms(gpu, dt, rows)
            err = moefit.predict_s(kernel_moe.fitted(x[keep], t[keep], dt), x) / t - 1
            edges = (0.0,) + CROSS_BINS + (np.inf,)
            parts = []
            for lo, hi in zip(edges, edges[1:]):
                on = ~keep & (ratio > lo) & (ratio <= hi)
                parts.append(f"({lo:.2f}, {hi:.2f}] {int(on.sum())} rows {100 * np.median(err[on]):+5.1f}%" if on.any()
                             else f"({lo:.2f}, {hi:.2f}] 0 rows")
            out.append(f"{gpu:6s} {dt:11s} held-out rows, base form on every row, signed median by shape ratio: "
                       + "; ".join(parts))
    return out


def chosen_groups(a) -> list[tuple]:
    """[(gpu, dtype, rows, routing)] of the classes asked for."""
    if a.release:
        got = [(g, dt, rows, kernel_moe.RELEASE_ROUTING) for folder in RELEASE_GPUS
               for g, dt, _, rows in kernel_moe.release_groups(Path(a.data), folder, a.release)]
    else:
        got = [(g, dt, rows, kernel_moe.ROUTING) for g, dt, _, rows in kernel_moe.groups(Path(a.data))]
    return [c for c in got if (not a.only or c[1] in a.only) and (not a.gpu or c[0] in a.gpu)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="aiconfigurator-core 0.12.0's aiconfigurator_core/systems/data "
                                                  "(with --release: aiconfigurator 0.8.0's aiconfigurator/systems/data)")
    ap.add_argument("--only", action="append", help="this ironlaw MoE dtype class only (repeatable)")
    ap.add_argument("--gpu", action="append", help="this GPU only (repeatable)")
    ap.add_argument("--release", choices=("1.0",), help="the TensorRT-LLM release's own MoE classes")
    ap.add_argument("--tail", action="store_true", help="the held-out rows of non-monotone shapes, per class")
    ap.add_argument("--tuning", action="store_true", help="the held-out rows whose autotuner cache file another "
                                                          "case shares, per class (moefit.shared_tuning)")
    ap.add_argument("--cross-check", action="store_true", help="the SM 100 classes' shapes against SM 103's same "
                                                              "shapes (kernelfit.rules.MOE_CROSS_CHECK)")
    a = ap.parse_args()
    if a.cross_check:
        print("per-shape ratio of each class's rows to the SM 103 reference's at the same shape (median over the token "
              "counts), over the shapes of their own key and those only the min-latency layer shares")
        asked = lambda gpu, dt: (not a.only or dt in a.only) and (not a.gpu or gpu in a.gpu)  # noqa: E731
        for line in cross_check(kernel_moe.groups(Path(a.data)), asked):
            print(line, flush=True)
        return 0
    if a.tuning:
        print("held-out rows whose autotuner cache file (dtype, hidden, inter/TP, local experts) another case shares; "
              "per form (" + ", ".join(TUNING_FORMS) + "), fitted on every fit row, then on the own-key fit rows: "
              "held-out median/p90 all rows, own-key rows, signed median of the shared-key rows")
        for gpu, dt, rows, routing in chosen_groups(a):
            print(tuning_line(gpu, dt, rows, routing), flush=True)
        return 0
    if a.tail:
        print(f"held-out rows whose shape is non-monotone in tokens (≥ {MONOTONE_TOL:.0%} under a row of fewer "
              f"tokens); the base form's median / p90 without them, and with; twins (all rows): their share, "
              f"median / p90 |deviation| from their twins' median, groups where more local slots run "
              f"≥ {TWIN_FASTER:.0%} faster")
        for gpu, dt, rows, routing in chosen_groups(a):
            print(tail_line(gpu, dt, rows, routing), flush=True)
        return 0
    forms = FORMS + (RELEASE_FORMS if a.release else ())
    print("held-out median / p90 per form (benchmarks/kernel_moe.py's split); " + ", ".join(forms) +
          "; then σ, η_c of roof+waves, η_w of U+t+pad")
    print(f"{'GPU':14s} {'dtype':12s} " + " ".join(f"{f:>13s}" for f in forms))
    for gpu, dt, rows, routing in chosen_groups(a):
        s, roof = scores(gpu, dt, rows, routing)
        sigma, eta_c = roof["roof+waves"]
        print(f"{gpu:14s} {dt:12s} " + " ".join(f"{100 * s[f][0]:5.1f}/{100 * s[f][1]:5.1f}%" for f in forms) +
              f"  {sigma:.2f} {eta_c:.2f}" + (f"  {s['U+t+pad η_w']:.2f}" if "U+t+pad η_w" in s else ""), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
