"""The α and η of the collective model, each with its source.

    α: a fixed software cost per call (``launch_s``, by family) plus a latency per hop (``hop_s``, by
       link kind; the catalog's link latency when a calibration does not set it);
    η: the fraction of a link's catalog bandwidth a family of collectives reaches (``eta``).
Families: ``collective`` (ring/tree all-reduce, all-gather, reduce-scatter) and ``p2p`` (send/recv,
all-to-all, which NCCL runs as grouped point-to-point transfers).

``DEFAULT`` holds estimates for any device. ``A100_VIDUR`` was fitted by
``benchmarks/fit_nccl_a100.py`` on the *two-rank* NCCL measurements of microsoft/vidur on DGX A100
(all-reduce and send/recv, NVLink pair and InfiniBand pair) only; every larger group (4, 8, 16 ranks,
one and two nodes) is held out and reported, never fitted.
"""
from __future__ import annotations

from dataclasses import dataclass, field

FAMILIES = ("collective", "p2p")


@dataclass(frozen=True)
class NetworkCalibration:
    name: str
    launch_s: dict[str, float]                       # family -> seconds per call
    eta: dict[tuple[str, str], float]                # (family, link kind) -> fraction of link bandwidth
    hop_s: dict[str, float] = field(default_factory=dict)   # link kind -> seconds per hop (else catalog)
    eta_default: float = 0.8
    source: str = ""

    def efficiency(self, family: str, link_kind: str) -> float:
        return self.eta.get((family, link_kind), self.eta_default)

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
           "(e.g. ≈ 230 of 300 GB/s all-reduce on DGX A100 NVLink); per-hop latency from the catalog link",
)

# fitted: benchmarks/fit_nccl_a100.py (robust relative least squares, two-rank curves only, sizes 2 KB–64 MB)
A100_VIDUR = NetworkCalibration(
    name="a100-vidur",
    launch_s={"collective": 39.6e-6, "p2p": 11.6e-6},
    hop_s={"infiniband": 16.3e-6},
    eta={("collective", "nvlink"): 0.566, ("collective", "infiniband"): 0.237,
         ("p2p", "nvlink"): 1.0, ("p2p", "infiniband"): 0.310},
    source="measured: fitted by benchmarks/fit_nccl_a100.py to microsoft/vidur NCCL profiles on DGX A100 (MIT), "
           "two-rank all-reduce and send/recv only, over NVLink3 (catalog: 300 GB/s per direction, 2 µs hop) and "
           "InfiniBand HDR (catalog: 25 GB/s per port); p2p NVLink η clipped at 1.0 (fit 1.02)",
)

BY_HARDWARE = {"a100": A100_VIDUR}


def for_hardware(hw) -> NetworkCalibration:
    """The fitted calibration of ``hw`` where one exists, else the sourced estimates."""
    return BY_HARDWARE.get(hw.name, DEFAULT)
