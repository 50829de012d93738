"""The one evaluated efficiency table of a graph on a device (``Terms``, ``evaluate``).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core.graph import Columns, KINDS
from ...machine.cache import pack_limit_bytes
from ...machine.calibration import Calibration
from ...machine.hardware import Hardware
from .eta import compute_eta, memory_eta
from .framework import with_framework_share
from .grid import kernel_grid, key_block_share
from .latency import class_latency_s, op_latency
from .launches import walk_eta
from .mmatile import MMA_TILE_ROWS, mma_tile_eta
from .overlap import epilogue_share, overlap_floor_s, serial_share
from .splits import split_blocks
from .tiles import causal_tiles, chunk_waves, query_waves
from .variants import vector_overlap, with_variants
from .weights import extra_weight_bytes


@dataclass(frozen=True)
class Terms:
    """Per op of one graph on one device: what the law divides and adds by (arrays over ops × configurations)."""
    compute_eta: np.ndarray           # (n_ops, *cfg) fraction of the unit's peak each op reaches
    memory_eta: np.ndarray            # (n_ops, 1… | *cfg) fraction of a tier's bandwidth each op's traffic reaches
    memory_eta_base: np.ndarray | None   # the same without the ops' own values (kind, op class, kernel): the
                                         # plain reuse patterns' η (``slow_tier_eta``); None uncalibrated
    latency_s: np.ndarray             # (n_ops, 1…) fixed seconds per invocation (launch / dispatch, framework)
    serial: np.ndarray                # (n_ops, *cfg) share of min(data, compute) not overlapped (0 = overlapped)
    epilogue: np.ndarray              # (n_ops, *cfg) share of the data time stored after the main loop
    vector_eta: float                 # η of the vector unit for an op's added vector work (what-ifs)
    extra_bytes: np.ndarray           # (n_ops, *cfg) device-memory bytes a calibrated CPU GEMM reads beyond
                                      # its weights once (packed copies that spill, GEMV passes and rows)
    vector_overlap: np.ndarray | bool = False   # (n_ops, 1…) whether an op's vector work runs beside its matrix
    floor_s: np.ndarray | float = 0.0   # (n_ops, 1…) seconds a call takes at least, its work overlapping them
    floor_share: np.ndarray | float = 0.0   # (n_ops, 1…) share of the shorter of floor and work not overlapped


def evaluate(cols: Columns, hw: Hardware, resident=None) -> Terms:
    """The efficiency table of ``cols`` on ``hw``: the flat defaults, refined by ``hw.calibration`` where it
    has one. ``resident`` (1 | n_ops, *cfg): ops whose weights stay in the last cache level (a GEMV's cost
    per stored row applies only to weights read from device memory)."""
    per_kind = np.array([hw.eta(k) for k in KINDS])          # the device, read once
    eta_mem, lat_s, vector_eta, cal = hw.efficiency["memory"], hw.op_latency_s, hw.eta("elementwise"), hw.calibration
    tile = MMA_TILE_ROWS.get(hw.maker) if hw.kind == "gpu" else None
    limit = pack_limit_bytes(hw) if cal is not None else None
    lead = (len(cols.kind_idx),) + (1,) * len(cols.cfg_shape)
    shape = cols.flops.shape
    eta_c = per_kind[cols.kind_idx].reshape(lead)
    eta_m, lat = np.full(lead, eta_mem), np.full(lead, lat_s)
    epilogue = epilogue_share(hw.kind, cols)
    if cal is None:
        return Terms(np.broadcast_to(eta_c, shape), eta_m, None, lat, np.zeros(shape), epilogue, vector_eta,
                     np.zeros(shape))
    cols, math = with_variants(cal, cols, hw)
    split = split_blocks(cal, cols, hw)
    grid = kernel_grid(cal, cols, split) * query_waves(cal, cols, hw) * chunk_waves(cal, cols, hw, split)
    eta_walk = with_framework_share(cal, walk_eta(cal, cols, hw), cols.frontend)
    eta_comp = np.minimum(compute_eta(cal, cols, eta_c, grid, split) * math, eta_walk)
    keys_read, bytes_read = key_block_share(cal, cols)
    floor_s, floor_share = overlap_floor_s(cal, cols)
    eta_comp, kept = tile_bound(np.broadcast_to(eta_comp / keys_read / causal_tiles(cal, cols), shape), tile,
                                 cal, cols)
    return Terms(compute_eta=eta_comp,
                 memory_eta=memory_eta(cal, cols, eta_m, grid=grid) / bytes_read,
                 memory_eta_base=memory_eta(cal, cols, np.full(lead, eta_mem), own=False, grid=grid) / bytes_read,
                 latency_s=op_latency(cal, cols, lat) + class_latency_s(cal, cols, getattr(hw, "sms", None), split),
                 serial=np.broadcast_to(serial_share(cal, cols) * kept, shape),
                 epilogue=epilogue, vector_eta=vector_eta,
                 extra_bytes=np.broadcast_to(extra_weight_bytes(cal, cols, limit, resident), shape),
                 vector_overlap=vector_overlap(cal, cols), floor_s=floor_s, floor_share=floor_share)


def tile_bound(eta_comp: np.ndarray, tile: float | None, cal: Calibration,
               cols: Columns) -> tuple[np.ndarray, np.ndarray]:
    """(η, kept): the compute η at most the MMA tile's filled rows (``mma_tile_eta``), and per op the share of its
    fitted compute η the bound keeps. A shape table fitted where the weights' streaming binds (small M) leaves the
    compute η unidentified; the bound makes the compute term physical, and the serial share, multiplied by ``kept``,
    keeps the seconds the table fitted (serial × the table's compute term) wherever the data term still binds. Only a
    calibrated device's: there M is already read from the op's bytes (``gemm_dims``); a device without a table keeps
    its flat per-kind η, bytes never changing its compute (tests/test_law_properties.py)."""
    tile_eta = mma_tile_eta(tile, cal, cols)      # 1 for an op no tile bounds, whose η may exceed 1 (work counted
    bound = np.where(tile_eta < 1.0, np.minimum(eta_comp, tile_eta), eta_comp)    # over work done): left as it is
    with np.errstate(divide="ignore", invalid="ignore"):
        kept = np.where(eta_comp > 0, bound / eta_comp, 1.0)
    return bound, kept
