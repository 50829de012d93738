"""CUDA only: kernel-launch latency and host↔device bandwidth, timed with CUDA events.

Launch latency: an empty-ish kernel (add on one element) back to back, device time per launch;
host↔device: pinned-memory copies across sizes, fit t = overhead + bytes/BW like the memory levels.
"""
from __future__ import annotations

from .memory import fit
from .timing import Budget, stable

SIZES = (1 << 22, 1 << 24, 1 << 26)


def available() -> bool:
    try:
        import torch
        return bool(torch.cuda.is_available())
    except ImportError:
        return False


def launch(budget: Budget) -> dict:
    import torch
    x = torch.zeros(1, device="cuda")
    st = stable(lambda: x.add_(1.0), budget, "cuda", graph=False)   # the launch itself is measured
    return {"what": "launch", "bytes": 4.0, "time_s": st.time_s, "cv": st.cv, "_ok": st.ok, "_tries": st.tries}


def copy(direction: str, nbytes: int, budget: Budget) -> dict:
    import torch
    host = torch.empty(nbytes // 4, dtype=torch.float32, pin_memory=True)
    dev = torch.empty(nbytes // 4, dtype=torch.float32, device="cuda")
    if direction == "h2d":
        fn = lambda: dev.copy_(host, non_blocking=True)  # noqa: E731
    else:
        fn = lambda: host.copy_(dev, non_blocking=True)  # noqa: E731
    st = stable(fn, budget, "cuda", graph=False)
    return {"what": direction, "bytes": float(nbytes), "time_s": st.time_s, "cv": st.cv, "_ok": st.ok,
            "_tries": st.tries}


def link_bw(rows: list[dict], direction: str) -> tuple[float, float]:
    return fit([{"level": direction, **r} for r in rows if r["what"] == direction])
