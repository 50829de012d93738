"""`ironlaw sweep --plot FILE`: throughput against batch, the bound flipping at the ridge points."""
from __future__ import annotations


def save(res, path: str) -> None:
    """Draw a Sweep (``ironlaw.models.sweep``): throughput against batch per device (and seq), the bound of each
    point as its marker, the ridge points as dotted lines; .png, .svg or .pdf by the name."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(7, 4.5))
    seqs = [None] if res.seq is None else list(res.seq)
    markers = {}
    for h, hw in enumerate(res.hardware):
        for j, s in enumerate(seqs):
            y = res.throughput[h, :, j]
            lab = hw + ("" if s is None else f", seq {int(s)}")
            line, = ax.plot(res.batch, y, label=lab)
            for k, b in enumerate(np.unique(res.bottleneck[h, :, j])):
                sel = res.bottleneck[h, :, j] == b
                m = markers.setdefault(b, "osD^vx*+"[len(markers) % 8])
                ax.scatter(res.batch[sel], y[sel], marker=m, color=line.get_color(), s=18)
    for rp in res.ridges:
        ax.axvline(rp["batch"], ls=":", lw=1, color="gray")
        ax.annotate(f"{rp['to']}", (rp["batch"], ax.get_ylim()[1]), fontsize=7, rotation=90, va="top")
    for b, m in markers.items():
        ax.scatter([], [], marker=m, color="black", label=b, s=18)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("batch")
    ax.set_ylabel(res.throughput_unit)
    ax.set_title(f"{res.spec} · {res.phase} · {res.dtype}")
    ax.legend(fontsize=7)
    fig.tight_layout()
    from ..core.files import write_atomic
    try:
        write_atomic(path, lambda f: fig.savefig(f, format=path.rsplit(".", 1)[-1].lower()), "--plot")
    finally:
        plt.close(fig)
