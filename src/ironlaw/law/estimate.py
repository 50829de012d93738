"""The Estimate: one table (a row per op, columns = terms, tier, bound, time) plus totals.

Every reader — text/markdown/JSON reports, what-if comparisons, sweeps, validation — reads this
table. Arrays have shape (n_ops, *cfg); with a single configuration ``cfg`` is ().
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..core import units
from ..machine.capacity import Placement
from ..core.graph import Columns, Graph
from ..machine.hardware import Hardware
from .efficiency import Terms

SCHEMA = "ironlaw.estimate/1"


@dataclass
class Estimate:
    graph: Graph
    hw: Hardware
    composition: str
    cols: Columns
    placement: Placement
    traffic_bytes: np.ndarray  # (n_tiers, n_ops, *cfg) bytes per invocation served by each tier
    data_tier_s: np.ndarray   # (n_tiers, n_ops, *cfg) per invocation
    data_s: np.ndarray        # (n_ops, *cfg) per invocation
    compute_s: np.ndarray
    latency_s: np.ndarray
    network_s: np.ndarray
    op_time_s: np.ndarray     # composed time of one invocation
    terms: Terms              # the per-op efficiency table the terms were priced at

    def __repr__(self) -> str:                  # the per-op arrays run to 100 kB: the answer, as a person reads it
        g = self.graph
        return (f"{type(self).__name__}({g.name!r}, {g.phase!r}, {g.dtype!r} on {self.hw.name!r}: "
                f"time_s={self.time_s!r})")

    # ------------------------------------------------------------------ totals
    @cached_property
    def op_total_s(self) -> np.ndarray:
        return self.op_time_s * self.cols.count

    @cached_property
    def total_s(self) -> np.ndarray:
        t = self.op_total_s.sum(axis=0)
        return np.where(self.placement.fits, t, np.inf)

    @property
    def time_s(self):
        return _scalar(self.total_s)

    def term(self, name: str):
        arr = {"data_s": self.data_s, "compute_s": self.compute_s, "latency_s": self.latency_s,
               "network_s": self.network_s}[name]
        return _scalar((arr * self.cols.count).sum(axis=0))

    # ------------------------------------------------------------------ who owns the critical path
    @cached_property
    def resources(self) -> list[tuple[str, str | None]]:
        return [("compute", None), ("latency", None), ("network", None)] + \
               [("bandwidth", t.name) for t in self.hw.memory]

    @cached_property
    def shares_s(self) -> np.ndarray:
        """(n_resources, n_ops, *cfg): seconds of each op's composed time owned by each resource."""
        n_t = len(self.hw.memory)
        out = np.zeros((3 + n_t, *self.data_s.shape))
        c = self.cols.count
        out[1] = self.latency_s * c
        out[2] = self.network_s * c
        if self.composition == "overlap":
            # the stores of a GPU GEMM's epilogue follow its main loop: always on the path (data)
            epi = np.broadcast_to(self.terms.epilogue, self.data_s.shape)
            read = self.data_s * (1.0 - epi)
            data_wins = read >= self.compute_s
            # the shorter term still counts for the share of it that the kernel does not overlap
            # (a calibrated CPU GEMM packs its weights first; llama.cpp's mmq on GB10)
            ser = self.terms.serial
            out[0] = np.where(data_wins, ser, 1.0) * self.compute_s * c
            # the data part of the critical path is owned by tiers in proportion to their time
            on_path = np.where(data_wins, 1.0, ser + (1.0 - ser) * epi)     # share of data_s on the path
            out[3:] = on_path[None] * self.data_tier_s * c
        else:
            out[0] = self.compute_s * c
            out[3:] = self.data_tier_s * c
        return out

    @cached_property
    def op_bound_idx(self) -> np.ndarray:
        """(n_ops, *cfg) index into ``resources`` of what owns most of each op's time."""
        return np.argmax(self.shares_s, axis=0)

    @cached_property
    def workload_shares_s(self) -> np.ndarray:
        return self.shares_s.sum(axis=1)

    @cached_property
    def bottleneck_idx(self) -> np.ndarray:
        return np.argmax(self.workload_shares_s, axis=0)

    @property
    def capacity_bound(self) -> np.ndarray:
        return (self.placement.spilled_bytes > 0) | ~self.placement.fits

    def one(self, what: str) -> None:
        """A per-op view ``what`` of one configuration: refused in one line on an estimate of many (arrays of
        batch or seq), which carries its times as arrays (``time_s``, ``term``) instead."""
        shape = self.cols.cfg_shape
        if shape != ():
            from ..core.errors import OneConfiguration
            raise OneConfiguration(f"{what}() describes one configuration; this estimate holds {int(np.prod(shape))} "
                                   f"(batch or seq given as arrays, shape {shape}): read its arrays (time_s, "
                                   f"term(...)) or analyze one batch and one seq for it")

    def bottleneck(self) -> dict:
        """{'resource', 'tier', 'why'} for a single configuration."""
        self.one("bottleneck")
        from .explain import why
        return why(self)

    # ------------------------------------------------------------------ rows
    def rows(self) -> list[dict]:
        """One dict per op (single configuration), with totals over the op's ``count``."""
        self.one("rows")
        c = self.cols.count[:, 0] if self.cols.count.ndim > 1 else self.cols.count
        tier_idx = np.argmax(self.data_tier_s, axis=0)
        tiers = [t.name for t in self.hw.memory]
        out = []
        for i, op in enumerate(self.graph.ops):
            res, tier = self.resources[int(self.op_bound_idx[i])]
            n = float(c[i])
            has_data = float(self.data_s[i]) > 0
            out.append({
                "name": op.name, "kind": op.kind, "module": op.module, "count": int(n), "dtype": op.dtype,
                "flops": (float(self.cols.flops[i]) + (0.0 if self.cols.vector_flops is None
                                                       else float(self.cols.vector_flops[i]))) * n,
                "bytes": float(sum(b[i] for b in self.cols.bytes.values())) * n if self.cols.bytes else 0.0,
                "tier": tiers[int(tier_idx[i])] if has_data else None,
                "data_s": float(self.data_s[i]) * n, "compute_s": float(self.compute_s[i]) * n,
                "latency_s": float(self.latency_s[i]) * n, "network_s": float(self.network_s[i]) * n,
                "time_s": float(self.op_total_s[i]),
                "bound": res,
            })
        return out

    def top_ops(self, n: int = 10) -> list[dict]:
        self.one("top_ops")
        return sorted(self.rows(), key=lambda r: -r["time_s"])[:n]

    def by_kind(self) -> dict[str, dict]:
        self.one("by_kind")
        agg: dict[str, dict] = {}
        for r in self.rows():
            a = agg.setdefault(r["kind"], {"count": 0, "flops": 0.0, "bytes": 0.0, "data_s": 0.0, "compute_s": 0.0,
                                           "latency_s": 0.0, "time_s": 0.0})
            for k in a:
                a[k] += r[k]
        return dict(sorted(agg.items(), key=lambda kv: -kv[1]["time_s"]))

    def to_frame(self):
        """The per-op table as a pandas DataFrame: one row per op, the columns of ``rows()`` (totals over
        each op's count; the time columns sum to ``term(...)`` and ``time_s``). pandas is imported here only."""
        self.one("to_frame")
        try:
            import pandas as pd
        except ImportError:
            raise ImportError("Estimate.to_frame() needs pandas (pip install pandas)") from None
        rows = self.rows()
        df = pd.DataFrame(rows, columns=list(rows[0]))
        df.attrs.update({"workload": self.graph.name, "hardware": self.hw.name, "composition": self.composition,
                         "time_s": float(self.total_s)})
        return df

    def _repr_html_(self) -> str:
        """Rich display in Jupyter: summary, terms, roofline and the slowest ops (ironlaw.report.html)."""
        from ..report.html import fragment
        return fragment(self)

    # ------------------------------------------------------------------ footprint
    def footprint(self) -> dict:
        self.one("footprint")
        fp = {k: float(v) for k, v in self.graph.footprint.items() if float(v) > 0}
        tiers = []
        for i, t in enumerate(self.hw.memory):
            used = {k: float(b[i]) for k, b in self.placement.bytes.items() if float(b[i]) > 0}
            tiers.append({"name": t.name, "role": t.role, "capacity_bytes": t.capacity_bytes,
                          "used_bytes": sum(used.values()), "holds": used})
        return {"total_bytes": sum(fp.values()), "by_class": fp, "tiers": tiers,
                "fits": bool(self.placement.fits), "spilled_bytes": float(self.placement.spilled_bytes)}

    # ------------------------------------------------------------------ document
    def to_dict(self, top: int | None = None) -> dict:
        self.one("to_dict")
        from . import coverage, fresh, timerange
        g = self.graph
        rows = self.rows()
        return {
            "schema": SCHEMA,
            "workload": {"name": g.name, "phase": g.phase, "dtype": g.dtype,
                         **{k: _plain(v) for k, v in g.meta.items()}},
            "hardware": {"name": self.hw.name, "title": self.hw.title, "path": self.hw.path},
            "composition": self.composition,
            "time_s": float(self.total_s),
            "time_range_s": timerange.time_range(self),       # None (null) on a device that was not probed
            "time_range_source": timerange.source(self),
            "fresh_memory_max_s": fresh.fresh_memory_max_s(self),  # None (null) but on a probed CPU
            "calibration_coverage": coverage.coverage(self),
            "bottleneck": self.bottleneck(),
            "terms": {k: float(self.term(k)) for k in ("data_s", "compute_s", "latency_s", "network_s")},
            "totals": {"flops": float(g.flops), "bytes": float(sum(r["bytes"] for r in rows)), "ops": len(rows),
                       "op_invocations": int(sum(r["count"] for r in rows))},
            "footprint": self.footprint(),
            "by_kind": self.by_kind(),
            "uncounted_ops": dict(g.uncounted_ops),
            "ops": rows if top is None else sorted(rows, key=lambda r: -r["time_s"])[:top],
        }


def _scalar(a):
    a = np.asarray(a)
    return float(a) if a.shape == () else a


def _plain(v):
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, (np.floating, np.integer)):
        return v.item()
    return v


def fmt_terms(est: Estimate) -> str:
    return ", ".join(f"{k[:-2]} {units.fmt_time(float(est.term(k)))}" for k in ("data_s", "compute_s", "latency_s"))
