"""A table's rows as kernel classes (``groups``), the rows a class keeps (one backend per shape or head dim, the
framework's own kernel, without spikes) and their split into fitted and held-out rows.
"""
from __future__ import annotations

import numpy as np

from ....core.errors import IronlawError
from ....core.gemmshape import XQA_MLA_HEADS, attention_kernel, attention_regime
from ..kerneltable import KernelTable
from .rules import (GLOBAL_WINDOW_KERNELS, GLOBAL_WINDOW_ROWS, GLOBAL_WINDOW_SIZE, HEAD_DIM_BACKEND_CLASSES,
                    HEAD_DIM_BACKEND_OPS, HEAD_DIM_CLASS, MAIN_BACKEND_CLASSES, SPIKY_GEMMS,
                    HEAD_DIM_BACKEND_GPU_CLASSES, MODULE_FRAMEWORKS, MODULE_OPT_IN, TILE_REGIMES, XQA_MLA_GPUS, holds,
                    switches)
from .vocabulary import (ATTENTION_DTYPES, DECODE_KERNELS, FIT_ROWS, GEMM_DTYPES, Group, MLA_BMM_AS_FP8,
                         MLA_BMM_DTYPES, MLA_BMM_PRODUCTS, MODULE_GEMM_DTYPES, MODULE_PHASES, PHASES, REGIMES,
                         SCORE_ROWS, SHAPE_COLUMNS, SKIPPED)

SPIKE_RATIO, SPIKE_AGREE = 1.5, 1.25
# the column whose every value the split must put on both sides, per op: context attention's head dim. Sorted by shape,
# the vLLM and SGLang tables hold blocks of two head dims per batch, sequence and heads, so the even/odd split fitted
# one and held out the other (SGLang L40S, over 32 heads per KV head: 96% of head dim 128 held out, 65-74% median
# |error|; vLLM B200: all of head dim 128 held out); TensorRT-LLM's tables put 21-79% of each head dim's rows on each
# side and keep their split
STRATA = {"context_attention": "head_dim", "generation_attention": "head_dim"}
# per op of ``STRATA``, the share of a value's rows on one side past which the split alternates within each value.
# Context attention: 0.9, the head-dim blocks above. Generation attention: 2/3, one side holding twice the other:
# sorted by shape, the one-head decode tables put head dims 128 and 256 at 77-87% held out and 64, 192 (and 512)
# at 15-30% (vLLM H100 … RTX PRO 6000, SGLang B200 and B300, TensorRT-LLM 1.3 B200's head dim 512 at 70%), every row
# of a head dim at up to 16 sequences × KV heads on one side, the held-out rows' grid nodes filled from another head
# dim's; every other generation class of the three table sets holds 38-62% of each head dim out
# (docs/accuracy.md, "A held-out split by head dim for generation attention")
ONE_SIDED = {"context_attention": 0.9, "generation_attention": 2.0 / 3.0}
# ops whose split alternates within each value of a shape column its even rows hold one value of, where the class
# holds several (``single_valued``; after the split within each head dim, ``STRATA``): a GEMM table timing every M and
# N at an even count of K values (a user's own, K = 1024 and 4096) puts every even row at one K and every odd row at
# the other, so the shape model never sees K vary and the held-out rows score its extrapolation alone. So do
# TensorRT-LLM 1.0's B200 and GB200 context tables over 32 heads per KV head (64 and 96 heads under each batch and
# sequence length: every fitted row at 64) and SGLang 0.5.14's H100 and H200 context class bf16, KV fp8 (its even rows
# at one KV head). Every other class of aiconfigurator-core 0.12.0's and 0.8.0's (1.0 release) tables fits several
# values of each column it varies and keeps its split (docs/accuracy.md, "A held-out split within each head count")
SPREAD_OPS = tuple(SHAPE_COLUMNS)


def skipped(tables: list[KernelTable], fp8_block_as: str | None = None) -> list[dict]:
    """The GEMM rows ``groups`` leaves out (a dtype ironlaw does not run, ``SKIPPED``): per table and dtype,
    how many rows and why, so that a fit can say what it did not use."""
    out = []
    for t in tables:
        if t.op != "gemm":
            continue
        for src, rows in t.rows.groupby("gemm_dtype", sort=True):
            if src in SKIPPED and not (src == "fp8_block" and fp8_block_as):
                out.append({"table": str(t.path), "gemm_dtype": src, "rows": len(rows), "why": SKIPPED[src]})
    return out


def groups(tables: list[KernelTable], float16_as: str | None = None, fp8_block_as: str | None = None) -> list[Group]:
    """The kernel classes of ``tables`` (one GPU's), with their rows; a dtype ironlaw does not run is left
    out (``SKIPPED``), any other unknown dtype is an error. ``float16_as='bf16'`` fits float16 rows as the bf16
    classes (aiconfigurator 0.8.0's 1.0-line tables time the 16-bit kernels in float16 only; FP16 and BF16 run at
    one tensor-core peak on every catalog GPU the tables cover), and the provenance says so. ``fp8_block_as='fp8'``
    fits 128-element block-scaled FP8 rows as the fp8 class, said so alike (AMD MI300X: its only public FP8 GEMM
    timings are aiter's block-scaled ones, the kernels FP8 DeepSeek-V3 and Qwen3 checkpoints run)."""
    if float16_as not in (None, "bf16"):
        raise IronlawError(f"float16 rows can stand for bf16 only, not '{float16_as}'")
    if fp8_block_as not in (None, "fp8"):
        raise IronlawError(f"fp8_block rows can stand for fp8 only, not '{fp8_block_as}'")
    half = {"float16": float16_as} if float16_as else {}
    note = lambda srcs: f"float16 rows, for {float16_as}" if half and "float16" in srcs else ""  # noqa: E731
    out = []
    for t in tables:
        if t.op == "gemm":
            for src, rows in t.rows.groupby("gemm_dtype", sort=True):
                if src == "fp8_block" and fp8_block_as:
                    out.append(Group(f"gemm {fp8_block_as}", ("matmul", fp8_block_as), t.op, t,
                                     sorted_rows(rows, t.op), f"fp8_block rows (1x128 / 128x128 scales), for "
                                                              f"{fp8_block_as}", dtype=fp8_block_as))
                    continue
                if src in SKIPPED:
                    continue
                if src not in GEMM_DTYPES:
                    raise IronlawError(f"{t.path}: unknown gemm_dtype '{src}' (known: "
                                       f"{', '.join(list(GEMM_DTYPES) + list(SKIPPED))})")
                dt = half.get(src, GEMM_DTYPES[src])
                out.append(Group(f"gemm {dt}", ("matmul", dt), t.op, t, sorted_rows(rows, t.op), note((src,)),
                                 dtype=dt))
            continue
        if t.op.endswith("_mla"):
            out.extend(_mla_groups(t, half, note))
            continue
        if t.op == "mla_bmm":
            out.extend(mla_bmm_groups(t, half))
            continue
        if t.op in MODULE_PHASES:
            out.extend(module_groups(t))
            continue
        phase, chunked = PHASES[t.op], chunked_as_global(t)
        table = t.rows[~chunked]
        regimes = [attention_regime(w > 0, h, kv, d, phase == "decode") for w, h, kv, d in
                   zip(table.window_size, table.num_heads, table.num_key_value_heads, table.head_dim)]
        every = table.assign(regime=regimes)
        once = one_backend(every, t.op)
        alone = one_backend_per_head_dim(once, t.op, t)
        kept = own_kernel(alone, t.op)
        for (a, kv, regime), rows in main_backend(kept, t.framework).groupby(["attn_dtype", "kv_cache_dtype", "regime"],
                                                                             sort=True):
            dt, kvd = (half.get(x) or _attention_dtype(x, t.path) for x in (a, kv))
            name = f"{t.op.replace('_', ' ')} {dt}, KV {kvd}" + (f", {REGIMES[regime]}" if regime else "")
            n = [int(((x.attn_dtype == a) & (x.kv_cache_dtype == kv) & (x.regime == regime)).sum())
                 for x in (every, once, alone, kept)]
            left, dims, decode, other = n[0] - n[1], n[1] - n[2], n[2] - n[3], n[3] - len(rows)
            main = once.kernel_source.value_counts().index[0] if left or dims else ""
            timed = "; ".join(x for x in (note((a, kv)), left and f"{left} rows of other backends at shapes "
                                          f"{main} times left out",
                                          dims and f"{dims} rows of other backends at head dims {main} times left "
                                          f"out",
                                          decode and f"{decode} one-token rows the framework runs on its decode "
                                          f"kernel left out",
                                          other and f"{other} rows of other attention backends left out") if x)
            same = (t.rows.attn_dtype == a).to_numpy() & (t.rows.kv_cache_dtype == kv).to_numpy()
            gone = int((chunked & same).sum()) if regime.startswith("_window") else 0
            timed = "; ".join(x for x in (timed, gone and f"{gone} rows at window {GLOBAL_WINDOW_SIZE} its kernel "
                                          f"times as global attention left out") if x)
            out.append(Group(name, ("kernel", attention_kernel(phase, dt, kvd, regime)), t.op, t,
                             sorted_rows(rows, t.op), timed, dtype=dt))
    return out


def chunked_as_global(t: KernelTable):
    """Per row of attention table ``t``, whether it is a row at ``GLOBAL_WINDOW_SIZE`` on a kernel of
    ``GLOBAL_WINDOW_KERNELS`` that its framework runs as global attention on its GPU (``GLOBAL_WINDOW_ROWS``: Llama 4's
    chunked layers on SGLang's Blackwell decode), left out of the window classes; none elsewhere, nor in a table
    without the columns."""
    rows = t.rows
    if rows is None or not holds(GLOBAL_WINDOW_ROWS, (t.framework, t.op), t.gpu) or "kernel_source" not in rows.columns:
        return np.zeros(0 if rows is None else len(rows), bool)
    return ((rows["window_size"] == GLOBAL_WINDOW_SIZE) & rows["kernel_source"].isin(GLOBAL_WINDOW_KERNELS)).to_numpy()


def one_backend(rows, op: str):
    """``rows`` with each shape timed once: where several attention backends (``kernel_source``) time the same shape
    and dtypes, the row of the backend that times most of the table, the engine's default there. aiconfigurator-core
    0.12.0's SGLang 0.5.14 tables of B200, B300, GB200 and GB300 time 3,876 context shapes twice — TRT-LLM's MHA
    kernels (``trtllm_mha``, SGLang's default attention backend on SM100/SM103: python/sglang/srt/server_args.py,
    ``ServerArgs._handle_attention_backend_compatibility``) and FlashInfer (head dim 128) or Triton (head dim 256)
    as alternatives — the two 1.65× apart at the median, 6.1× at p90 (B200), which no single time per shape fits
    (docs/accuracy.md). A table without the column, or with one backend per shape, is returned as it is."""
    if "kernel_source" not in rows.columns or rows["kernel_source"].nunique() < 2:
        return rows
    key = list(SHAPE_COLUMNS[op]) + [c for c in ("attn_dtype", "mla_dtype", "kv_cache_dtype") if c in rows.columns]
    key = list(dict.fromkeys(key))
    main = rows["kernel_source"].value_counts().index[0]
    twice = rows.duplicated(key, keep=False)
    return rows[~twice | (rows["kernel_source"] == main)]


def one_backend_per_head_dim(rows, op: str, table=None):
    """``rows`` (with their ``regime``) with each kernel class's head dim timed by one backend: where the table's
    main backend (the engine's default, ``one_backend``) times a head dim of a class, its rows there alone, for an op
    of ``HEAD_DIM_BACKEND_OPS``; a head dim only other backends time keeps theirs (SGLang 0.5.14's head dim 192, on
    Triton). aiconfigurator's SGLang collector runs each model on the backend SGLang picks for it (the
    ``sglang_backends`` of its model cases, collector/cases/models/*_cases.yaml): Qwen3.5's head dim 256 on Triton on
    SM100/103, beside ``trtllm_mha``'s 256 of the other models: at batch 1, 131,071 cached tokens and 1-2 KV heads,
    2.0-2.2 ms on Triton, 47-60 µs on ``trtllm_mha`` (B200, bf16 cache), which one grid node per head dim cannot
    hold both (docs/accuracy.md). ironlaw prices the engine's default backend; a table without the column is returned
    as it is. The context rows of a class of ``HEAD_DIM_BACKEND_CLASSES`` or ``HEAD_DIM_BACKEND_GPU_CLASSES``
    (``table``'s framework and GPU, the rows' dtypes; without a window, ``TILE_REGIMES``) alike, the others as they
    are."""
    framework, gpu = getattr(table, "framework", None), getattr(table, "gpu", None)
    keyed = HEAD_DIM_BACKEND_CLASSES.get((framework, op))
    keyed = keyed if keyed and gpu in keyed[0] else None
    if keyed is None and (framework, op, gpu) in HEAD_DIM_BACKEND_GPU_CLASSES:
        keyed = ((gpu,), HEAD_DIM_BACKEND_GPU_CLASSES[(framework, op, gpu)])
    if op not in HEAD_DIM_BACKEND_OPS and not keyed or "kernel_source" not in rows.columns or \
            rows["kernel_source"].nunique() < 2:
        return rows
    rank = {k: i for i, k in enumerate(rows["kernel_source"].value_counts().index)}
    order = rows["kernel_source"].map(rank)
    best = order.groupby([rows[c] for c in HEAD_DIM_CLASS]).transform("min")
    if op in HEAD_DIM_BACKEND_OPS:
        return rows[order == best]
    own = [(a, kv) in keyed[1] and r in TILE_REGIMES
           for a, kv, r in zip(rows["attn_dtype"], rows["kv_cache_dtype"], rows["regime"])]
    return rows[(order == best) | ~np.asarray(own, bool)]


def own_kernel(rows, op: str):
    """``rows`` without the context rows the framework runs on its decode kernel (``DECODE_KERNELS``): vLLM's
    FlashInfer backend treats a request of at most ``reorder_batch_threshold`` = 1 query token as a decode
    (vllm/v1/attention/backends/flashinfer.py, ``FlashInferMetadataBuilder``; ``split_decodes_and_prefills``), so its
    context tables' one-token rows (``isl`` 1) time the decode kernel, whose whole time (B200, 9-10 µs at 40-64
    heads on one KV head, batch 4) is about the prefill class's fixed latency: held out 25% too slow at the median
    (B300, every head dim; docs/accuracy.md). A table without the column is returned as it is."""
    if op != "context_attention" or "kernel_source" not in rows.columns:
        return rows
    return rows[~rows["kernel_source"].isin(DECODE_KERNELS)]


def main_backend(rows, framework: str):
    """``rows`` (with their ``regime``) without, in a class of ``MAIN_BACKEND_CLASSES``, the rows of any backend
    (``kernel_source``) but the one that times most of the table, the framework's default: such a class names one
    kernel of that backend (TensorRT-LLM's MMHA window class, not FlashInfer's trtllm-gen FMHA beside it). A table
    without the column, or of another framework, is returned as it is."""
    regimes = [r for f, r in MAIN_BACKEND_CLASSES if f == framework]
    if not regimes or "kernel_source" not in rows.columns or rows["kernel_source"].nunique() < 2:
        return rows
    main = rows["kernel_source"].value_counts().index[0]
    return rows[~rows["regime"].isin(regimes) | (rows["kernel_source"] == main)]


def split(rows, op: str = "") -> tuple[object, object]:
    """(fit rows, held-out rows): the even and the odd rows of the shape-sorted group; for an op of ``STRATA``, where
    that leaves over ``ONE_SIDED`` of some value of its column (a head dim) on one side (``one_sided``), the even and
    the odd rows of each value's own rows, so that every head dim is fitted and held out alike; where the even rows
    then hold one value of a shape column the group varies (``single_valued``), alike within each value of that
    column too, each value starting on the other side from the one before it (``odd_rows``)."""
    odd = odd_rows(rows, stratum(rows, op), op)
    return rows.iloc[~odd], rows.iloc[odd]


def odd_rows(rows, cols: tuple[str, ...], op: str = "") -> np.ndarray:
    """Which rows ``split`` holds out when it alternates within each value of ``cols`` (of them all, where none).
    Each value of a column ``single_valued`` names starts on the other side from the value before it (its rank in
    the column), so that the rows of one shape fall on both sides across its values: a table timing every batch and
    sequence length at 64 and 96 heads (TensorRT-LLM 1.0's B200 and GB200 context tables over 32 heads per KV head,
    16 sequence lengths per batch) alternated within each head count alone fitted both at the same sequence lengths
    and held the longest three (6,144, 10,240 and 16,384 tokens) out at both."""
    if not cols:
        return np.arange(len(rows)) % 2 == 1
    n = rows.groupby(list(cols), sort=False).cumcount().to_numpy()
    for c in cols:
        if c != STRATA.get(op):
            n = n + rows[c].rank(method="dense").to_numpy().astype(int)
    return n % 2 == 1


def stratum(rows, op: str = "") -> tuple[str, ...]:
    """The columns within each of whose values ``split`` alternates: ``STRATA``'s, where the plain even/odd split is
    ``one_sided``, then, for an op of ``SPREAD_OPS``, each column of which that split's even rows hold one value
    (``single_valued``); () where it alternates over the whole group."""
    col = STRATA.get(op)
    cols = (col,) if col is not None and col in rows.columns and one_sided(
        rows[col].to_numpy(), np.arange(len(rows)) % 2 == 1, ONE_SIDED[op]) else ()
    while op in SPREAD_OPS and (more := single_valued(rows, op, cols)) is not None:
        cols += (more,)
    return cols


def single_valued(rows, op: str, within: tuple[str, ...] = ()) -> str | None:
    """The first shape column of ``op`` (not of ``within``) of which the even rows of ``rows`` (of each value of
    ``within``, ``split``'s) hold one value and ``rows`` several, each value in two rows at least (so that each has
    one on either side); None where the even rows vary every column the rows vary."""
    even = rows.iloc[~odd_rows(rows, within, op)]
    return next((c for c in SHAPE_COLUMNS[op] if c in rows.columns and c not in within and even[c].nunique() == 1
                 and rows[c].nunique() > 1 and rows.groupby(c).size().min() >= 2), None)


def split_names(rows, op: str = "") -> tuple[str, str]:
    """What ``split`` fits and holds out of ``rows``, as the provenance names them: ("even rows", "odd rows"), or
    where it alternates within each value of columns ("even rows of each head dim", "odd rows of each k", "odd rows
    of each head dim and num heads")."""
    cols = stratum(rows, op)
    each = "" if not cols else f" of each {' and '.join(c.replace('_', ' ') for c in cols)}"
    return f"even rows{each}", f"odd rows{each}"


def one_sided(values: np.ndarray, odd: np.ndarray, limit: float) -> bool:
    """Whether some value of ``values`` has more than ``limit`` of its rows on one side of the split ``odd``."""
    for v in np.unique(values):
        share = float(odd[values == v].mean())
        if share > limit or share < 1.0 - limit:
            return True
    return False


def main_kernel(rows) -> str:
    """The kernel most of ``rows`` time (their ``kernel_source``); "" where they name none."""
    if "kernel_source" not in rows.columns or not len(rows):
        return ""
    return str(rows["kernel_source"].value_counts().index[0])


def despiked(g: Group, rows):
    """``rows`` (a GEMM class's fit rows) without their isolated spikes where the class is one of ``SPIKY_GEMMS``: a
    row whose time is over ``SPIKE_RATIO`` times, or under 1 / ``SPIKE_RATIO`` of, both its neighbours in M among
    ``rows`` at the same N and K, those two within ``SPIKE_AGREE`` of each other; ``rows`` as given otherwise."""
    if not switches(g, SPIKY_GEMMS):
        return rows
    s = rows.sort_values(["n", "k", "m"], kind="stable")
    t = s["latency_s"].to_numpy()
    same = (s["n"].to_numpy()[:-2] == s["n"].to_numpy()[2:]) & (s["k"].to_numpy()[:-2] == s["k"].to_numpy()[2:])
    lo, hi = np.minimum(t[:-2], t[2:]), np.maximum(t[:-2], t[2:])
    spike = same & (hi <= SPIKE_AGREE * lo) & ((t[1:-1] > SPIKE_RATIO * hi) | (t[1:-1] < lo / SPIKE_RATIO))
    drop = s.index[1:-1][spike]
    return rows.drop(index=drop)


def _mla_groups(t: KernelTable, half: dict, note) -> list[Group]:
    """An MLA table's kernel classes: one per math and KV dtype (regime '_mla'); ``half`` as ``groups``. On a GPU
    of ``XQA_MLA_GPUS`` the FP8-cache generation rows at ``XQA_MLA_HEADS`` heads are a class of their own (regime
    '_mla_xqa'), TensorRT-LLM's XQA MLA kernel."""
    out = []
    for (a, kv), rows in t.rows.groupby(["mla_dtype", "kv_cache_dtype"], sort=True):
        dt, kvd = (half.get(x) or _attention_dtype(x, t.path) for x in (a, kv))
        name = f"{t.op.replace('_', ' ')} {dt}, KV {kvd}"
        xqa = rows.num_heads == XQA_MLA_HEADS if xqa_mla(t, kvd) else np.zeros(len(rows), bool)
        out.append(Group(name, ("kernel", attention_kernel(PHASES[t.op], dt, kvd, "_mla")), t.op, t,
                         sorted_rows(rows[~xqa], t.op), note((a, kv)), dtype=dt))
        if xqa.any():               # its math in FP8 (``supportConfigMLA``: an E4M3 query), whatever the model's
            out.append(Group(f"{name}, {REGIMES['_mla_xqa']}", ("kernel", attention_kernel(PHASES[t.op], "fp8", kvd,
                                                                                            "_mla_xqa")),
                             t.op, t, sorted_rows(rows[xqa], t.op),
                             "; ".join(x for x in (note((a, kv)), f"{a} model, the kernel's math in fp8") if x),
                             dtype="fp8"))
    return out


def xqa_mla(t: KernelTable, kv_dtype: str) -> bool:
    """Whether ``t``'s rows of a ``kv_dtype`` cache run TensorRT-LLM's XQA MLA kernel at ``XQA_MLA_HEADS`` heads:
    a TensorRT-LLM generation MLA table of a GPU of ``XQA_MLA_GPUS``, on an FP8 cache."""
    return t.op == "generation_mla" and t.framework == "trtllm" and holds(XQA_MLA_GPUS, t.gpu) and kv_dtype == "fp8"


def _attention_dtype(x: str, where: str) -> str:
    if x not in ATTENTION_DTYPES:
        raise IronlawError(f"{where}: unknown attention dtype '{x}' (known: {', '.join(ATTENTION_DTYPES)})")
    return ATTENTION_DTYPES[x]


def sorted_rows(rows, op: str):
    """A table's rows in shape order (the order the even/odd split follows)."""
    return rows.sort_values(list(SHAPE_COLUMNS[op]), kind="stable").reset_index(drop=True)


def held_out(g: Group):
    """The rows ``score`` times for ``g``: at most ``SCORE_ROWS`` of its held-out side of ``split``, evenly spaced."""
    return _spaced(split(g.rows, g.op)[1], SCORE_ROWS)


def shape_rows(rows):
    """The rows of a group's fit half its shape model is fitted on: at most ``FIT_ROWS``, evenly spaced."""
    return _spaced(rows, FIT_ROWS)


def _spaced(rows, n: int):
    """At most ``n`` of ``rows``, evenly spaced."""
    if len(rows) <= n:
        return rows
    return rows.iloc[np.linspace(0, len(rows) - 1, n).round().astype(int)]


def mla_bmm_groups(t: KernelTable, half: dict | None = None) -> list[Group]:
    """A mla_bmm table's kernel classes: one per dtype (``gemmshape.mla_bmm_kernel``), both products in it (the
    grid's K axis, 128 or 512, tells them apart); ``half`` ({'float16': 'bf16'}, ``groups``' ``float16_as``) fits
    the 1.0 line's float16 rows as the bf16 class, said so; any other dtype the catalog's ops do not run is an
    error."""
    from ....core.gemmshape import mla_bmm_kernel
    unknown_names = sorted(set(t.rows.op_name) - set(MLA_BMM_PRODUCTS))
    if unknown_names:
        raise IronlawError(f"{t.path}: unknown op_name '{unknown_names[0]}' for a mla_bmm table (known: "
                           f"{', '.join(MLA_BMM_PRODUCTS)})")
    out = []
    for src, rows in t.rows.groupby("bmm_dtype", sort=True):
        dt = (half or {}).get(src) or MLA_BMM_DTYPES.get(src)
        if dt is None:
            raise IronlawError(f"{t.path}: unknown bmm_dtype '{src}' (known: {', '.join(MLA_BMM_DTYPES)})")
        kernels = sorted(map(str, set(rows.kernel_source))) if "kernel_source" in rows.columns else []
        runs = [f"{k}: {what}" for k in kernels for mark, what in MLA_BMM_AS_FP8.items() if mark in k]
        timed = f"{src} rows on {'; '.join(runs)}, for {dt}" if runs else \
            f"{src} rows, for {dt}" if src not in MLA_BMM_DTYPES else ""
        out.append(Group(f"mla bmm {dt}", ("kernel", mla_bmm_kernel(dt)), t.op, t, sorted_rows(rows, t.op), timed,
                         dtype=dt))
    return out


def module_groups(t: KernelTable) -> list[Group]:
    """A MLA module table's kernel classes (``MODULE_FRAMEWORKS``' tables; none for another framework's): one per
    projection dtype (``gemm_type``) and KV dtype, named ``serving.step.mla_module.module_kernel``. Each shape is
    timed once, on the backend the collector's vLLM ran it on (vllm/platforms/cuda.py ``get_attn_backend_cls``), as
    the table's ``kernel_source`` names it per row: aiconfigurator-core 0.12.0's tables hold one decode backend per
    dtype pair and GPU (H100, H200: FLASH_ATTN_MLA on a bf16 cache, FlashMLA on fp8; B200, B300, GB200, GB300:
    FlashInfer MLA; L40S, RTX PRO 6000: Triton MLA) and, in a context table, FlashAttention's prefill past the
    prompts the decode backend runs; a shape an opt-in backend times beside another (``MODULE_OPT_IN``) is kept on
    the other. A dtype a table names that ironlaw does not run is an error."""
    from ....models.serving.step.mla_module import module_kernel
    if t.framework not in MODULE_FRAMEWORKS:
        return []
    phase, out = MODULE_PHASES[t.op], []
    for (g, kv), rows in t.rows.groupby(["gemm_type", "kv_cache_dtype"], sort=True):
        if g not in MODULE_GEMM_DTYPES:
            raise IronlawError(f"{t.path}: unknown gemm_type '{g}' (known: {', '.join(MODULE_GEMM_DTYPES)})")
        gd, kvd = MODULE_GEMM_DTYPES[g], _attention_dtype(kv, t.path)
        key = list(SHAPE_COLUMNS[t.op])
        twice = rows.duplicated(key, keep=False).to_numpy()
        opt_in = rows["kernel_source"].isin(MODULE_OPT_IN).to_numpy() if "kernel_source" in rows.columns else \
            np.zeros(len(rows), bool)
        kept = rows[~(twice & opt_in)]
        left = len(rows) - len(kept)
        kernels = ", ".join(f"{k} {n}" for k, n in kept["kernel_source"].value_counts().items()) \
            if "kernel_source" in kept.columns else ""
        timed = "; ".join(x for x in (g != "bfloat16" and f"{g} projections, for {gd}",
                                      kernels and f"rows of {kernels}",
                                      left and f"{left} rows of opt-in {', '.join(MODULE_OPT_IN)} at shapes another "
                                               f"backend times left out") if x)
        out.append(Group(f"{t.op.replace('_', ' ')} {gd}, KV {kvd}", ("kernel", module_kernel(phase, gd, kvd)),
                         t.op, t, sorted_rows(kept.drop_duplicates(key), t.op), timed, dtype="bf16"))
    return out
