"""Which op classes of a prediction its device's calibration measured, and which borrow another class's numbers.

An op class (``graph.op_class``) is *calibrated* where the ``[calibration]`` table holds an η of its own
(a latency alone leaves its rate borrowed): a split class (conv-depthwise, conv-grouped, pool-max, pool-avg)
in ``[calibration.kernel."<class>"]``; a matmul, dense conv or attention its shape table at every dtype its
ops run at, or its kind's η; any other kind its kind's compute or memory η. Every other class is priced with someone else's numbers
and *borrows* them: a split conv the dense conv's (or what that borrows), a pooling variant the pool
kind's, a kind without values the plain memory patterns fitted on copies (``copy``) or, without those,
the hardware file's ``[efficiency]`` defaults. Collectives are calibrated where every one of them is timed by
the hardware file's measured curves (a group on one node, ``[[network.curve]]``), else they borrow the α-β
network model's numbers. ``coverage`` says which, with each borrower's share of the predicted time, and which
GEMM classes the calibration carries from another GPU's fit (``carried``: the provenance's ``carried_from``).
"""
from __future__ import annotations

from ..machine.calibration import Calibration
from ..core.gemmshape import mla_bmm_kernel
from ..core.graph import SPLIT_CLASSES, op_class

EFFICIENCY = "[efficiency] defaults"
SHAPED = ("matmul", "conv", "attention")      # kinds with a GEMM shape table
LINE_MIN_SHARE = 0.005     # the text line names borrowers from this share of the time (the JSON lists all)


def coverage(est) -> dict:
    """{"calibrated": [class …], "borrowed": [{"class", "borrows", "share_of_time"} …]} over the op classes
    of one configuration's estimate (borrowers by share, largest first), and ``carried`` ([{"class",
    "carried_from"} …]) where the calibration carries a GEMM class from another GPU's fit; with no calibration,
    empty lists and a ``note`` saying so."""
    cal = est.hw.calibration
    shares, dtypes, kernels = _shares(est)
    if cal is None:
        return {"calibrated": [], "borrowed": [],
                "note": f"{est.hw.name} carries no [calibration] table: no measured kernel tables, every op class "
                        f"is priced with its {DATASHEET_NUMBERS}, none was measured on this device ({remedy(est.hw)})",
                "datasheet_only": list(DATASHEET_ONLY)}
    calibrated, borrowed = [], []
    for cls in sorted(shares, key=lambda c: -shares[c]):
        if cls == "collective":
            net = _network(est)
            if net is None:
                calibrated.append(cls)
            else:
                borrowed.append({"class": cls, "borrows": net, "share_of_time": round(shares[cls], 4)})
        elif own_values(cal, cls, dtypes[cls]) or _own_kernels(cal, kernels[cls]):
            calibrated.append(cls)
        else:
            borrowed.append({"class": cls, "borrows": borrows(cal, cls, dtypes[cls]),
                             "share_of_time": round(shares[cls], 4)})
    borrowed += [{"class": want, "borrows": used, "share_of_time": round(share, 4)}
                 for (want, used), share in _kernels_for(est).items()]
    borrowed += _gemm_priced_kernels(est, cal)
    out = {"calibrated": calibrated, "borrowed": sorted(borrowed, key=lambda b: -b["share_of_time"])}
    carried = [{"class": g, "carried_from": p["carried_from"]} for g, p in cal.provenance.items()
               if "carried_from" in p]
    return {**out, "carried": carried} if carried else out


# kernel classes fitted on their own measured tables whose ops, on a device whose calibration lacks the class, keep
# their dtype's GEMM terms: MLA's per-head decode products (``workloads.attention.per_head``)
GEMM_PRICED_KERNELS = {"mla_bmm": mla_bmm_kernel}


def _gemm_priced_kernels(est, cal: Calibration) -> list[dict]:
    """A borrower per kernel class of ``GEMM_PRICED_KERNELS`` and dtype whose ops ``cal`` holds no table of: priced
    with that dtype's GEMM terms (``matmul <dtype>``), or the [efficiency] defaults where there are none either."""
    def lacking(op):
        name = str(op.attrs.get("kernel", ""))
        return next(((cls, op.dtype) for cls, kernel in GEMM_PRICED_KERNELS.items()
                     if name == kernel(op.dtype) and "eta_max" not in cal.kernel.get(name, {})), None)
    return [{"class": f"{cls} {dt}", "borrows": f"matmul {dt}" if dt in cal.shape("matmul") else EFFICIENCY,
             "share_of_time": round(s, 4)} for (cls, dt), s in time_shares(est, lacking).items()]


def time_shares(est, key) -> dict:
    """{key(op): its ops' share of the predicted time} over the ops of ``est`` whose ``key`` is not None."""
    total = float(est.op_total_s.sum()) or 1.0
    out: dict = {}
    for op, t in zip(est.graph.ops, est.op_total_s):
        k = key(op)
        if k is not None:
            out[k] = out.get(k, 0.0) + float(t) / total
    return out


# what prices every op of a device without a [calibration] table: its hardware file's datasheet numbers
DATASHEET_ONLY = ("peak FLOP/s per dtype", "memory bandwidths", "link bandwidths and latencies",
                  "[efficiency] defaults")
DATASHEET_NUMBERS = "datasheet peaks, memory and link bandwidths and [efficiency] defaults"


def remedy(hw) -> str:
    """How a device without measured kernels gets them: the probe where torch runs on it (CUDA, ROCm, a CPU),
    kernel tables measured on it otherwise (a TPU, Trainium, Gaudi or an Apple GPU: the probe cannot run there)."""
    kernels = "ironlaw calibrate --kernels DIR with kernel tables measured on it"
    if hw.kind == "cpu" or hw.title.startswith("NVIDIA"):
        return f"ironlaw probe on it, or {kernels}"
    if hw.title.startswith("AMD"):
        return f"ironlaw probe on it with a ROCm build of torch, or {kernels}"
    return f"{kernels}; ironlaw probe runs on CUDA, ROCm and CPUs, not on {hw.name}"


def own_values(cal: Calibration, cls: str, dtypes: set[str]) -> bool:
    """Whether ``cal`` holds numbers of the class's own for ops of ``dtypes``."""
    if cls in SPLIT_CLASSES and cls != "conv-dense":
        return any(f in cal.kernel.get(cls, {}) for f in ("compute", "memory"))
    kind = SPLIT_CLASSES.get(cls, cls)
    if kind in SHAPED and dtypes <= set(cal.shape(kind)):
        return True
    return kind in cal.compute or kind in cal.memory_kind


def borrows(cal: Calibration, cls: str, dtypes: set[str]) -> str:
    """The class (or table) whose numbers price ``cls`` where it has none of its own."""
    kind = SPLIT_CLASSES.get(cls, cls)
    if kind == "conv" and cls != "conv-dense":
        return "conv-dense" if own_values(cal, "conv-dense", dtypes) else borrows(cal, "conv-dense", dtypes)
    if kind == "pool" and own_values(cal, "pool", dtypes):
        return "pool"
    if kind in SHAPED:
        return EFFICIENCY
    return "copy" if cal.memory_produced is not None or cal.memory_streamed is not None else EFFICIENCY


def line(cov: dict) -> str | None:
    """One short line for a text report: the borrowers and their share, or None when every class is calibrated."""
    if cov.get("note"):
        return "uncalibrated: " + cov["note"]
    carried = "; ".join(f"{c['class']} carried from {c['carried_from'].split(' (')[0]} (measured on that GPU)"
                        for c in cov.get("carried", ()))
    shown = [b for b in cov["borrowed"] if b["share_of_time"] >= LINE_MIN_SHARE]
    if not shown:
        return f"calibration: {carried}" if carried else None
    parts = [f"{b['class']} {b['share_of_time']:.0%} of the predicted time (borrows "
             + (b["borrows"] if b["borrows"] == EFFICIENCY or b["class"] == "collective" else f"{b['borrows']}'s η")
             + ")" for b in shown]
    rest = len(cov["borrowed"]) - len(shown)
    return (f"calibration: {carried}; " if carried else "") + "uncalibrated: " + "; ".join(parts) + (
        f"; {rest} more under {LINE_MIN_SHARE:.1%} each" if rest else "")


def _own_kernels(cal: Calibration, kernels: set[str]) -> bool:
    """Whether every op of a class names a kernel class the calibration holds a GEMM shape table of (measured
    attention kernels: ``gemmshape.attention_kernel``)."""
    return bool(kernels) and "" not in kernels and all("eta_max" in cal.kernel.get(k, {}) for k in kernels)


def _network(est) -> str | None:
    """None where every collective of ``est`` is timed by curves measured at its own group size; else what they
    borrow, each once: the α-β model, the curve of another measured group size (``curves.nearest``), or for
    DeepEP's exchange how it was carried (``_deepep_carried``)."""
    from ..machine.network.calibration import for_hardware
    from ..machine.network.curves import DEEPEP_LABELS, nearest
    cal = for_hardware(est.hw)
    out: list[str] = []
    for op in est.graph.ops:
        if op.kind == "collective" and op.collective:
            ranks, nodes = int(op.group[0]), int(op.group[1])
            name, why = op.collective, None
            if name in DEEPEP_LABELS and ranks > 1 and (nodes > 1 or (name, ranks) not in cal.curves):
                why = _deepep_carried(cal, name, ranks, nodes)
            elif ranks > 1 and (nodes > 1 or nearest(cal.curves, name, ranks) is None):
                why = f"the α-β network model ({cal.name})"
            elif ranks > 1 and (name, ranks) not in cal.curves:
                why = f"the measured {name} curve of another group size (none measured on {ranks} GPUs)"
            if why and why not in out:
                out.append(why)
    return "; ".join(out) or None


def _kernels_for(est) -> dict[tuple[str, str], float]:
    """{(kernel class an op stands in for, the class that prices it): share of the predicted time} over the ops
    priced on another format's measured kernels (``attrs["kernel_for"]``: block-scaled FP8 experts on a device
    fitted on per-tensor FP8 alone, ``serving.step.moe_kernels``) or on the dense GEMM (``matmul``) where the
    device's measured MoE layer lacks their dtype or format (``routed.routed_experts``)."""
    return time_shares(est, lambda op: (op.attrs["kernel_for"], str(op.attrs.get("kernel") or "matmul"))
                       if op.attrs.get("kernel_for") else None)      # "matmul": a grouped launch on the dense GEMM


def _deepep_carried(cal, name: str, ranks: int, nodes: int) -> str:
    """How DeepEP's ``name`` (dispatch or combine) over ``ranks`` on ``nodes`` is priced where its curves (one
    node's, ``curves.nearest``) lack that group: across nodes as the α-β all-to-all (collectives.py), on one node
    on the curve of another measured EP size."""
    from ..machine.network.curves import DEEPEP_LABELS, nearest
    sizes = sorted(g for c, g in cal.curves if c == name)
    owner, phase = DEEPEP_LABELS[name]
    measured = f"EP {'/'.join(map(str, sizes))} on one node" if sizes else "none on this device"
    if nodes > 1 or not sizes:
        return f"the α-β all-to-all for {owner}'s {phase} over EP {ranks} on {nodes} nodes (measured: {measured})"
    lines = nearest(cal.curves, name, ranks)
    size = next(g for g in sizes if cal.curves[(name, g)] is lines)
    return f"{owner}'s {phase} curve measured at EP {size}, carried to EP {ranks}"


def _shares(est) -> tuple[dict[str, float], dict[str, set], dict[str, set]]:
    """Per op class, its share of the predicted time, the dtypes its ops run at and the kernel classes they name."""
    total = float(est.op_total_s.sum()) or 1.0
    shares: dict[str, float] = {}
    dtypes: dict[str, set] = {}
    kernels: dict[str, set] = {}
    for op, t in zip(est.graph.ops, est.op_total_s):
        cls = op_class(op)
        shares[cls] = shares.get(cls, 0.0) + float(t) / total
        dtypes.setdefault(cls, set()).add(op.dtype)
        kernels.setdefault(cls, set()).add(str(op.attrs.get("kernel", "")))
    return shares, dtypes, kernels
