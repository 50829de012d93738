"""How close real kernels come to the peaks, per op: the one evaluated efficiency table of a graph on a device.

``evaluate(cols, hw)`` reads the hardware file's flat defaults (``[efficiency]``: one fraction per op kind,
'other' for the rest, 'memory' for bandwidth; ``[latency] op_s``) and, where the device carries one, its
``[calibration]`` (per kind, op class, kernel and op name; the GEMM and conv shape tables of
``ironlaw.core.gemmshape``; the framework's share) once, and returns ``Terms``: per op, compute η, memory η,
fixed latency, serial share, epilogue share and extra weight bytes. The law reads only that table; the
formulas and the fields are in docs/how-it-models.md.

One concept a module, each importing only those below it (the "inside efficiency" import contract):
``table`` (``Terms``, ``evaluate``) < ``latency`` (an op's fixed latency and its class's per-call terms) <
``eta`` (compute and memory η), ``grid`` (a class's grid and key blocks), ``splits`` (split-KV launches),
``tiles`` (query tiles and CTAs in waves), ``launches`` (a launch's per-CTA and walking costs), ``moe`` (an MoE
launch's setup costs), ``overlap`` (epilogue, serial share, composition), ``variants`` (the kernel an op runs) <
``weights`` (weight traffic), ``framework`` (the framework's terms), ``coords`` (an op as its kernel launches it) <
``shared`` (the per-op readers of a calibration's classes and shape tables).
"""
from .coords import grid_coords, past_first_wave
from .eta import compute_eta, memory_eta, within_peak
from .framework import framework_terms, with_framework_share
from .grid import kernel_coords, kernel_grid
from .latency import class_latency_s, op_latency
from .launches import walk_s
from .moe import expert_setup_s, touched_setup_s
from .overlap import composed, floored
from .splits import split_blocks, split_reduce_s
from .table import Terms, evaluate
from .tiles import chunk_waves, tile_share
from .variants import with_variants
from .weights import extra_weight_bytes, slow_tier_eta, streamed_table

__all__ = [
    "Terms", "chunk_waves", "class_latency_s", "composed", "compute_eta", "evaluate", "expert_setup_s",
    "extra_weight_bytes", "floored", "framework_terms", "grid_coords", "kernel_coords", "kernel_grid", "memory_eta",
    "op_latency", "past_first_wave", "slow_tier_eta", "split_blocks", "split_reduce_s", "streamed_table", "tile_share",
    "touched_setup_s", "walk_s", "with_framework_share", "with_variants", "within_peak",
]
