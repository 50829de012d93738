"""How a split-KV decode class launches each op over the SMs (``Split``): XQA's, MMHA's and a window's split
of the whole sequence, FlashInfer's chunks, FlashAttention 2's and 3's splits; and the seconds a split's
reduction adds.
"""
from __future__ import annotations

import numpy as np

from ...core.errors import IronlawError
from ...core.gemmshape import SPLIT_KERNEL_TOKENS, SPLIT_KV, gemm_dims, grid_units
from ...core.graph import Columns
from ...core.keyblocks import fa3_block_n
from ...core.splitkv import (FA3_SPLITS_MAX, MMHA_THREADS, blocks_per_sequence, chunks_per_sequence, fa2_splits,
                             fa3_sm8x_splits,
                             fa3_dynamic_splits, in_whole_waves, mmha_blocks_per_sequence, mmha_tokens_per_loop,
                             mmha_tuned_launch, prefill_query_tiles)
from ...machine.calibration import Calibration
from ...machine.hardware import Hardware
from .coords import Split
from .shared import at_chunk_head_dims, classes_with, launch_sms, op_names, per_op, split_kind


def split_blocks(cal: Calibration, cols: Columns, hw: Hardware | None) -> Split | None:
    """How each op of a split-KV kernel class launches (``Split``) on ``hw``'s SMs: ``history_split`` (the ops that
    state the whole sequence), ``chunk_split`` (FlashInfer's decode plan), ``heuristic_split`` (FlashAttention 2's
    split, and FlashAttention 3's on SM 8.x) and ``fa3_split`` (FlashAttention 3's scheduler) together; None where
    no op is such."""
    if not cal.kernel:
        return None
    splits = [x for x in (history_split(cal, cols, hw), chunk_split(cal, cols, hw),
                          heuristic_split(cal, cols, hw, "fa2"), heuristic_split(cal, cols, hw, "fa3_sm8x"),
                          fa3_split(cal, cols, hw))
              if x is not None]
    if len(splits) < 2:
        return splits[0] if splits else None
    return Split(np.prod([x.blocks for x in splits], axis=0), np.prod([x.fold for x in splits], axis=0),
                 np.any([x.splits for x in splits], axis=0))


def heuristic_split(cal: Calibration, cols: Columns, hw: Hardware | None, kind: str) -> Split | None:
    """How the ops of a kernel class whose split-KV decode picks its splits by its kernel's own heuristic launch on
    ``hw``'s SMs, ``kind`` the class's ``split_kv``: "fa2", FlashAttention 2's (``splitkv.fa2_splits`` of the op's
    keys per sequence and KV head, its M the swapped query rows); "fa3_sm8x", FlashAttention 3's on SM 8.x
    (``splitkv.fa3_sm8x_splits``, its M the packed query rows); every other op 1 split. None where no op is such."""
    launch = _split_launch(cal, cols, hw, kind, "FlashAttention 2's split-KV decode" if kind == "fa2" else
                           "FlashAttention 3's SM 8.x split-KV decode")
    if launch is None:
        return None
    own, sms, (m, n, k), units = launch
    heuristic = fa2_splits if kind == "fa2" else fa3_sm8x_splits
    splits = np.broadcast_to(np.where(own, heuristic(n, m, units / 2.0, sms, k), 1.0), units.shape)
    return Split(splits, np.ones(units.shape), splits > 1.0)


def fa3_split(cal: Calibration, cols: Columns, hw: Hardware | None) -> Split | None:
    """Whether the windowed decode ops (``op.attrs['history']``) of a kernel class that runs FlashAttention 3 under
    vLLM (``split_kv = "fa3"``) split on ``hw``'s SMs (``splitkv.fa3_dynamic_splits``: its scheduler splits the whole
    sequence's blocks of BLOCK_N keys, ``keyblocks.fa3_block_n`` at the op's head dim and cache dtype, up to
    ``FA3_SPLITS_MAX`` where the call's tokens, one per sequence, are at most ``SPLIT_KERNEL_TOKENS``, and not
    beyond). The splits before the window exit at once, so the op keeps its window's keys and its CTAs (1 block, no
    fold) and only pays the split's reduction (``split_reduce_s``). None where no op is such; such an op on a device
    without an SM count, or that states no sequences (``cache_writes``), is an error."""
    if cols.history is None:
        return None
    launch = _split_launch(cal, cols, hw, "fa3", "FlashAttention 3's split-KV scheduler", cols.history > 0)
    if launch is None:
        return None
    own, sms, (m, n, k), units = launch
    if cols.cache_writes is None:
        raise IronlawError("a windowed decode on FlashAttention 3's split-KV scheduler (split_kv = \"fa3\") needs its "
                           "sequences (op.attrs['cache_writes'])")
    sequences = np.maximum(np.broadcast_to(cols.cache_writes, units.shape), 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):    # the cache's bytes per key element: 1 for an FP8 cache
        per_element = cols.bytes.get("kv_cache", np.zeros(units.shape)) / (units * n * k)
    static = np.where(sequences <= SPLIT_KERNEL_TOKENS + 1e-9, float(FA3_SPLITS_MAX), 1.0)
    splits = fa3_dynamic_splits(np.broadcast_to(cols.history, units.shape), sequences, units / 2.0 / sequences, m,
                                fa3_block_n(k, per_element < 1.5), sms, static)
    ones = np.ones(units.shape)
    return Split(ones, ones, np.broadcast_to(own, units.shape) & (splits > 1.0))


def chunk_split(cal: Calibration, cols: Columns, hw: Hardware | None) -> Split | None:
    """How the ops of a kernel class that splits each sequence's keys into chunks (``split_kv = "chunks"``,
    FlashInfer's decode plan) launch on ``hw``'s SMs: ``splitkv.chunks_per_sequence`` of the op's keys per sequence
    and KV head at the class's ``chunk_occupancy`` CTAs per SM, at its ``chunk_head_dims`` only where it states them;
    every other op 1 chunk. None where no op is such;
    such an op on a device without an SM count is an error."""
    launch = _split_launch(cal, cols, hw, "chunks", "a chunked decode attention's split-KV launch")
    if launch is None:
        return None
    own, sms, (m, n, k), units = launch
    names = op_names(cols, "kernels")
    lead = (-1,) + (1,) * len(cols.cfg_shape)
    occupancy = per_op(cal, names, "chunk_occupancy", 1.0, lead)
    own = own & at_chunk_head_dims(cal, names, k, lead)   # a class's other head dims: another backend, unsplit
    tiles = np.broadcast_to(np.where(own, plan_query_tiles(cal, names, m, k, lead), 1.0), units.shape)
    chunks = np.broadcast_to(np.where(own, chunks_per_sequence(n, units / 2.0 * tiles, sms, occupancy), 1.0),
                             units.shape)
    return Split(chunks, tiles, chunks > 1.0)


def plan_query_tiles(cal: Calibration, names: np.ndarray, m, k, lead: tuple) -> np.ndarray:
    """Per op, the query tiles each sequence and KV head of a chunked class planned as a prefill (``chunk_plan =
    "prefill"``) launches (``splitkv.prefill_query_tiles`` of its M rows at its head dim K); 1 for every other op."""
    planned = np.isin(names, [nm for nm, p in cal.kernel.items() if p.get("chunk_plan") == "prefill"]).reshape(lead)
    return np.where(planned, prefill_query_tiles(m, k), 1.0)


def history_split(cal: Calibration, cols: Columns, hw: Hardware | None) -> Split | None:
    """How the ops that state the whole sequence (``op.attrs['history']``, a windowed decode) of a kernel class that
    splits it launch (``Split``) on ``hw``'s SMs: ``split_kv = "history"``, TensorRT-LLM's XQA
    (``splitkv.blocks_per_sequence``, per sequence and KV head); ``"mmha"``, its MMHA kernel, one CTA per sequence
    and query head, split by ``splitkv.mmha_blocks_per_sequence`` (blocks of the class's ``mmha_threads``), or, for a
    class that states its kernel's CTAs per SM (``mmha_occupancy``), launched as ``splitkv.mmha_tuned_launch``;
    ``"heads"``, one CTA per sequence and query head, unsplit (FlashAttention 2 under a window). Every
    other op: 1 block, no fold; None where no op is such. Such an op on a device without an SM count is an error:
    its launch cannot be placed."""
    if cols.history is None:
        return None
    names = op_names(cols, "kernels")
    lead = (-1,) + (1,) * len(cols.cfg_shape)
    kinds = {kind: split_kind(cal, names, kind, lead) for kind in SPLIT_KV}
    history = np.where(kinds["history"] | kinds["mmha"] | kinds["heads"], cols.history, 0.0)
    if not np.any(history > 0):
        return None
    sms = launch_sms(hw, "a sliding-window decode attention's split-KV launch")
    m, n, k = gemm_dims(cols)
    units = np.broadcast_to(grid_units(cols.flops, m, n, k), cols.flops.shape)
    history = np.broadcast_to(history, units.shape)
    xqa = np.broadcast_to(kinds["history"], units.shape) & (history > 0)
    mmha = np.broadcast_to(kinds["mmha"], units.shape) & (history > 0)
    blocks = np.where(xqa, blocks_per_sequence(history, units / 2.0, sms), 1.0)
    heads = units / 2.0 * np.maximum(m, 1.0)           # sequences × KV heads × heads per KV head
    threads = per_op(cal, names, "mmha_threads", max(MMHA_THREADS), lead)
    tiles = mmha_blocks_per_sequence(history, heads, sms, mmha_tokens_per_loop(k, threads))
    slots = in_whole_waves(tiles, heads, sms, threads)
    occupancy = np.broadcast_to(per_op(cal, names, "mmha_occupancy", 0.0, lead), units.shape)
    for c in np.unique(occupancy[mmha & (occupancy > 0)]):
        tuned = mmha & (occupancy == c)
        slots, tiles = (np.where(tuned, x, y) for x, y in zip(mmha_tuned_launch(history, heads, sms, k, int(c)),
                                                              (slots, tiles)))
    splits = np.where(mmha, tiles > 1.0, blocks > 1.0)
    fold = mmha | (np.broadcast_to(kinds["heads"], units.shape) & (history > 0))
    return Split(np.where(mmha, slots, blocks), np.where(fold, np.maximum(m, 1.0), 1.0), splits)


def _split_launch(cal: Calibration, cols: Columns, hw: Hardware | None, kind: str, launch: str, where=True):
    """For the split-KV launches: the ops whose kernel class splits as ``kind`` (and ``where``), ``hw``'s SM count
    (``launch_sms``, naming ``launch``), the ops' (M, N, K) and grid units; None where no op is such."""
    names = op_names(cols, "kernels")
    own = split_kind(cal, names, kind, (-1,) + (1,) * len(cols.cfg_shape)) & where
    if not np.any(own):
        return None
    sms = launch_sms(hw, launch)
    m, n, k = gemm_dims(cols)
    return own, sms, (m, n, k), np.broadcast_to(grid_units(cols.flops, m, n, k), cols.flops.shape)


def split_reduce_s(cal: Calibration, cols: Columns, split: Split | None) -> np.ndarray | float:
    """Per op, the seconds a split-KV kernel class (``split_kv``) adds once its launch splits the op's sequences
    (``split``'s blocks > 1, ``split_blocks``): its class's ``split_s``, the blocks' partial results (a row of
    outputs and the softmax's max and sum each) written out and reduced once the last block of a sequence is done,
    and, for XQA ("history"), ``merge_s`` per block: that last block merges the blocks' partial results one after
    another; 0 for every other op and for a launch that does not split. aiconfigurator-core 0.12.0's H100 table,
    window 128, 2 heads on 1 KV head × 64, batch 1: 8.6 µs at 255 cached tokens (one block), 13.3 µs at 1,023 (7
    blocks of 18 keys each, fewer keys than one block of 128 read), 13.5, 16.3 and 19.0 µs at 16,383, 65,535 and
    131,071 (32, 64 and 90 blocks, one wave on 132 SMs, the window's keys the same)."""
    if split is None:
        return 0.0
    names = op_names(cols, "kernels")
    own = [(name, float(p.get("split_s", 0.0)), float(p.get("merge_s", 0.0)))
           for name, p in classes_with(cal, names, "split_s", "merge_s")]
    if not own:
        return 0.0
    blocks = np.broadcast_to(split.blocks, cols.flops.shape)
    splits = np.broadcast_to(blocks > 1.0 if split.splits is None else split.splits, cols.flops.shape)
    out = np.zeros(cols.flops.shape)
    for name, split_s, merge_s in own:
        r = names == name
        out[r] = np.where(splits[r], split_s + merge_s * blocks[r], 0.0)
    return out
