"""The α and η of the collective model, each with its source.

    α: a fixed software cost per call (``launch_s``, by family) plus a latency per hop (``hop_s``, by
       link kind; the catalog's link latency when a calibration does not set it);
    η: the fraction of a link's catalog bandwidth a family of collectives reaches (``eta``);
    node ceiling: what one node moves over a network link kind in all, whatever its port count
       (``node_Bps``, bytes/s per direction; none: the node's ports add up).
Families: ``collective`` (ring/tree all-reduce, all-gather, reduce-scatter) and ``p2p`` (send/recv,
all-to-all, which NCCL runs as grouped point-to-point transfers).

``DEFAULT`` holds estimates for any device. ``A100_VIDUR`` was fitted by
``benchmarks/fit_nccl_a100.py`` on the NCCL measurements of microsoft/vidur on DGX A100: α and η on the
*two-rank* curves only (all-reduce and send/recv, NVLink pair and InfiniBand pair); the InfiniBand node
ceiling — which a two-rank curve cannot show, one GPU per node uses one port — on ONE multi-node curve,
all-reduce over 2 nodes × 4 GPUs. Held out and reported, never fitted: 4 and 8 GPUs on one node, 2 nodes
× 2 and 2 nodes × 8 GPUs.

A hardware file's ``[network]`` table names one of these for what no measurement covers, and may add
measured curves for groups on one node (``[[network.curve]]``, curves.py): fitted on measured NCCL tables,
they time those groups in place of the α-β model.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from ...core.errors import IronlawError, unknown
from .curves import check_curves

FAMILIES = ("collective", "p2p")


@dataclass(frozen=True)
class NetworkCalibration:
    name: str
    launch_s: dict[str, float]                       # family -> seconds per call
    eta: dict[tuple[str, str], float]                # (family, link kind) -> fraction of link bandwidth
    hop_s: dict[str, float] = field(default_factory=dict)   # link kind -> seconds per hop (else catalog)
    node_Bps: dict[str, float] = field(default_factory=dict)  # network link kind -> bytes/s a node moves in all
    eta_default: float = 0.8
    source: str = ""
    curves: dict = field(default_factory=dict)     # (collective, gpus on one node) -> ((α_s, bus_Bps), …)

    def efficiency(self, family: str, link_kind: str) -> float:
        return self.eta.get((family, link_kind), self.eta_default)

    def node_ceiling(self, link_kind: str) -> float:
        """Bytes/s per direction one node moves over ``link_kind`` in all; inf where the ports add up."""
        return self.node_Bps.get(link_kind, math.inf)

    def hop(self, link) -> float:
        return self.hop_s.get(link.kind, link.latency_s)


DEFAULT = NetworkCalibration(
    name="default",
    launch_s={"collective": 20e-6, "p2p": 10e-6},
    eta={("collective", "nvlink"): 0.75, ("collective", "xgmi"): 0.7, ("collective", "pcie"): 0.8,
         ("collective", "infiniband"): 0.85, ("collective", "ethernet"): 0.7,
         ("p2p", "nvlink"): 0.85, ("p2p", "pcie"): 0.85, ("p2p", "infiniband"): 0.9, ("p2p", "ethernet"): 0.75},
    eta_default=0.75,
    source="estimate: NCCL launch ≈ 10–20 µs; nccl-tests bus bandwidth ≈ 75–90% of the per-direction link rate "
           "(e.g. ≈ 230 of 300 GB/s all-reduce on DGX A100 NVLink); per-hop latency from the catalog link; "
           "no node ceiling: a node's network ports add up (rail-optimised fabric, GPUDirect RDMA)",
)

# fitted: benchmarks/fit_nccl_a100.py (robust relative least squares, two-rank curves only, sizes 2 KB–64 MB;
# node_Bps: least relative |error| on the 2 nodes × 4 GPUs all-reduce curve only, the α/η above held fixed)
A100_VIDUR = NetworkCalibration(
    name="a100-vidur",
    launch_s={"collective": 39.6e-6, "p2p": 11.6e-6},
    hop_s={"infiniband": 16.3e-6},
    eta={("collective", "nvlink"): 0.566, ("collective", "infiniband"): 0.237,
         ("p2p", "nvlink"): 1.0, ("p2p", "infiniband"): 0.310},
    node_Bps={"infiniband": 19.85e9},
    source="measured: fitted by benchmarks/fit_nccl_a100.py to microsoft/vidur NCCL profiles on DGX A100 (MIT), "
           "two-rank all-reduce and send/recv only, over NVLink3 (catalog: 300 GB/s per direction, 2 µs hop) and "
           "InfiniBand HDR (catalog: 25 GB/s per port); p2p NVLink η clipped at 1.0 (fit 1.02); "
           "InfiniBand node ceiling fitted on the 2 nodes × 4 GPUs all-reduce curve only (its ports do not add "
           "up: 4 and 8 GPUs per node reach ≈ 21 and ≈ 17.5 GB/s bus bandwidth at 64 MB, 3.5× and 3× the "
           "one-port rate, not 4× and 8×); 2 nodes × 2 and × 8 GPUs held out",
)

BY_NAME = {c.name: c for c in (DEFAULT, A100_VIDUR)}


TABLE_FIELDS = ("calibration", "source", "fitted", "held_out", "curve")


def check_table(t: object, where: str) -> dict:
    """A hardware file's ``[network]`` table: ``calibration`` names a fitted one (``a100-vidur``), with its
    ``source``; measured curves for groups on one node may follow (``curve``, curves.py, with the ``fitted``
    and ``held_out`` lists that say what they were fitted on). A device without the table gets ``default``
    (the sourced estimates)."""
    if not isinstance(t, dict):
        raise IronlawError(f"{where}: expected a table with 'calibration' and 'source'")
    extra = sorted(set(t) - set(TABLE_FIELDS))
    if extra:
        raise IronlawError(f"{where}: unknown field '{extra[0]}' (expected {', '.join(TABLE_FIELDS)})")
    name = t.get("calibration")
    if not isinstance(name, str) or name not in BY_NAME:
        raise unknown(f"network calibration in {where}", str(name), tuple(BY_NAME))
    if not isinstance(t.get("source"), str) or not t["source"].strip():
        raise IronlawError(f"{where}: 'source' must say where the calibration comes from")
    for key in ("fitted", "held_out"):
        v = t.get(key, [])
        if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
            raise IronlawError(f"{where}.{key}: expected a list of strings")
    if "curve" in t:
        check_curves(t["curve"], f"{where}.curve")
        if not t["source"].startswith("measured") or not t.get("fitted"):
            raise IronlawError(f"{where}: measured curves need a 'source' starting with 'measured' and the "
                               f"'fitted' list of what they were fitted on")
    return dict(t)


_WITH_CURVES: dict = {}         # id of a [network] table -> (the table, its calibration with curves)


def for_hardware(hw) -> NetworkCalibration:
    """The calibration ``hw``'s file names in ``[network]`` (the a100 entry: the fit to vidur's NCCL runs on
    DGX A100), else the sourced estimates, which assume a node's network ports add up; with the file's
    measured curves for groups on one node where it has them."""
    table = hw.extra.get("network", {})
    base = BY_NAME[table.get("calibration", DEFAULT.name)]
    if "curve" not in table:
        return base
    hit = _WITH_CURVES.get(id(table))
    if hit is None or hit[0] is not table:
        cal = replace(base, curves=check_curves(table["curve"], "network.curve"), source=table["source"])
        hit = _WITH_CURVES[id(table)] = (table, cal)
    return hit[1]


def with_network(hw, name: str):
    """``hw`` with its collectives modelled by the calibration ``name`` (``ironlaw analyze --network``, the
    ``network=`` what-if): ``default`` for a fabric whose ports add up, ``a100-vidur`` for vidur's cluster."""
    table = check_table({"calibration": name, "source": f"chosen for this run (network={name})"}, "--network")
    return replace(hw, extra={**hw.extra, "network": table})
