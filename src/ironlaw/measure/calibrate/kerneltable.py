"""Measured kernel tables: read, checked and matched to a catalog GPU (only where kernel tables are fitted).

The layout is aiconfigurator-core's (NVIDIA, Apache-2.0; ``aiconfigurator_core/systems/data``):

    <root>/<gpu dir>/<family>/<framework>/<version>/<op>_perf.parquet   (or .csv)

and each file holds one row per timed kernel with the columns ``COLUMNS[op]`` and ``latency`` in
milliseconds (aiconfigurator's collectors write ms). A user's own DIR with the same columns — parquet or
CSV, any folder depth — reads alike; a CSV may name its unit instead (``latency_ms``, ``latency_us``,
``latency_s``, or a ``latency_unit`` column of ms | us | s).

aiconfigurator 0.8.0 (PyPI, NVIDIA, Apache-2.0) ships older TensorRT-LLM releases' tables in an older layout,
read alike: ``<root>/<gpu dir>/trtllm/<version>/<op>_perf.txt`` — CSV text, the same columns, latency in ms. Its
attention tables predate sliding windows and carry no ``window_size`` column, as do aiconfigurator-core 0.12.0's
A100 tables of vLLM 0.14.0 and SGLang 0.5.10: an attention table without the column times global attention and
reads as window 0 (``NO_WINDOW``). A user's own context table without a ``step`` column reads as step 0, a
generation table without ``isl`` as isl 1, the values those phases fix (``PHASE_FIXED``).
``release="1.0"`` keeps the tables of one release line (1.0, 1.0.0rc3, 1.0.0rc6, …) before the newest is picked.

    tables = kerneltable.read(DIR, ops=("gemm",), gpu="h100", framework="trtllm")
    for t in tables:             # KernelTable: op, gpu (catalog name), device (as written), framework,
        t.rows                   # version, path, rows (a pandas DataFrame with ``latency_s`` in seconds)

Any problem — a missing column, an unknown unit, a GPU no catalog entry matches, no table at all — is one
``IronlawError`` line. pandas (and pyarrow for parquet) are imported here only, never on the prediction path.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from ...core.errors import IronlawError, unknown

ATTENTION = ("batch_size", "isl", "num_heads", "num_key_value_heads", "head_dim", "window_size",
             "attn_dtype", "kv_cache_dtype", "step")
COLUMNS = {                                   # op (the file's ``<op>_perf`` stem) -> columns besides latency
    "gemm": ("device", "gemm_dtype", "m", "n", "k"),
    "context_attention": ("device",) + ATTENTION,
    "generation_attention": ("device",) + ATTENTION,
    # multi-head latent attention (DeepSeek-V3's dims): num_heads per GPU, step the cached tokens (generation)
    "context_mla": ("device", "mla_dtype", "kv_cache_dtype", "num_heads", "batch_size", "isl", "tp_size", "step"),
    "generation_mla": ("device", "mla_dtype", "kv_cache_dtype", "num_heads", "batch_size", "isl", "tp_size", "step"),
    # MLA's whole attention module (vLLM's DeepseekV2MLAAttention forward: projections, BMMs, attention, o_proj),
    # gemm_type the projections' dtype (bfloat16 | fp8_block | nvfp4), num_heads per GPU, step the cached tokens
    "mla_context_module": ("device", "mla_dtype", "kv_cache_dtype", "gemm_type", "num_heads", "batch_size", "isl",
                           "tp_size", "step"),
    "mla_generation_module": ("device", "mla_dtype", "kv_cache_dtype", "gemm_type", "num_heads", "batch_size",
                              "isl", "tp_size", "step"),
    # MLA's per-head decode products (DeepSeek-V3's dims): op_name mla_gen_pre ([t,128]x[128,512] per head) or
    # mla_gen_post ([t,512]x[512,128]), num_heads per GPU
    "mla_bmm": ("device", "op_name", "bmm_dtype", "num_tokens", "num_heads"),
    "nccl": ("device", "op_name", "nccl_dtype", "num_gpus", "message_size"),        # message_size: elements
    # Intel's oneCCL collectives (aiconfigurator-core's comm/oneccl/<version>/oneccl_perf, Arc Pro B60): NCCL's columns
    "oneccl": ("device", "op_name", "nccl_dtype", "num_gpus", "message_size"),
    "moe": ("device", "moe_dtype", "num_tokens", "hidden_size", "inter_size", "topk", "num_experts",
            "moe_tp_size", "moe_ep_size", "distribution"),
    "custom_allreduce": ("device", "op_name", "allreduce_dtype", "num_gpus", "message_size"),  # elements
    "moe_a2a": ("device", "comm_backend", "phase", "comm_dtype", "ep_size", "node_num", "hidden_size", "topk",
                "num_experts", "num_tokens"),                     # DeepEP-style dispatch / combine
    # TensorRT-LLM's MNNVL all-to-all (kernel_source NVLinkOneSided | NVLinkTwoSided; op_name alltoall_prepare |
    # alltoall_dispatch | alltoall_combine | alltoall_combine_low_precision)
    "trtllm_alltoall": ("device", "op_name", "kernel_source", "moe_dtype", "num_tokens", "hidden_size", "topk",
                        "num_experts", "moe_ep_size", "distribution"),
}
OPTIONAL = ("framework", "version", "kernel_source", "op_name")
# ops whose ``latency`` column is not in ms: aiconfigurator's moe_a2a collector writes µs (latency = transmit_us +
# notify_us, its own columns beside it)
LATENCY_UNIT = {"moe_a2a": "us"}
UNITS_S = {"ms": 1e-3, "us": 1e-6, "s": 1.0}
LATENCY_COLUMNS = {"latency": "ms", "latency_ms": "ms", "latency_us": "us", "latency_s": "s"}
# the ``device`` strings aiconfigurator-core 0.12.0's tables carry (torch.cuda.get_device_name) -> catalog name
DEVICES = {
    "NVIDIA A100-SXM4-80GB": "a100",
    "NVIDIA H100 80GB HBM3": "h100",
    "NVIDIA H200": "h200",
    "NVIDIA B200": "b200",
    "NVIDIA B300 SXM6 AC": "b300",
    "NVIDIA GB200": "gb200",
    "NVIDIA GB300": "gb300",
    "NVIDIA L40S": "l40s",
    "NVIDIA RTX PRO 6000 Blackwell Server Edition": "rtx-pro-6000",
    # torch.xpu.get_device_name on the Intel Arc Pro B60; the older driver's oneCCL 2021.17.2 table in the same
    # b60/ folder names it by its PCI device id, 0xe211 (BMG-G21, Arc Pro B60)
    "Intel(R) Arc(TM) Pro B60 Graphics": "b60",
    "Intel(R) Graphics [0xe211]": "b60",
}
PROVENANCE = "aiconfigurator-core 0.12.0 (NVIDIA, Apache-2.0)"
SUFFIXES = (".parquet", ".csv", ".txt")        # .txt: aiconfigurator <= 0.8's <op>_perf.txt, CSV text
# the column an attention table that predates sliding windows lacks, and the value it stands for: those collectors
# (TensorRT-LLM's 1.0 line, the .txt layout; vLLM 0.14.0's and SGLang 0.5.10's on the A100) timed global attention
# only, and window 0 is global in the newer tables
NO_WINDOW = {"context_attention": {"window_size": 0}, "generation_attention": {"window_size": 0}}
# the column whose value the phase fixes, read so where a user's own attention table leaves it out: a context kernel
# caches no tokens before its prompt (step 0 on every row of aiconfigurator-core 0.12.0's context tables), a
# generation kernel takes one query token per sequence (isl 1 on every row of its generation tables)
PHASE_FIXED = {"context_attention": {"step": 0}, "generation_attention": {"isl": 1}}
# ironlaw's own names of the 16-bit dtypes (--dtype bf16) in a user's table -> the tables' (torch's) names
TABLE_DTYPES = {"bf16": "bfloat16", "fp16": "float16"}
DTYPE_COLUMNS = ("gemm_dtype", "attn_dtype", "kv_cache_dtype", "mla_dtype", "bmm_dtype")
# the layout's framework folders (``<family>/<framework>/<version>/``); a user's own folder names none of them
FRAMEWORK_FOLDERS = ("trtllm", "sglang", "vllm", "aiter")


@dataclass(frozen=True)
class KernelTable:
    """One file's rows for one GPU: ``rows`` has the op's columns and ``latency_s`` (seconds)."""
    op: str
    gpu: str                 # catalog name (or the --gpu the caller named for a device the catalog lacks)
    device: str              # the device string as the table writes it
    framework: str
    version: str
    path: str                # the file, relative to the root read
    rows: object             # pandas.DataFrame
    assumed: tuple = ()      # the columns the file lacks, read as ``NO_WINDOW`` and ``PHASE_FIXED`` state them


def assumptions(tables: list[KernelTable]) -> list[str]:
    """One line per column the reading assumed of ``tables`` (``NO_WINDOW``, ``PHASE_FIXED``), or none."""
    out = []
    for col, reads in (("window_size", "window 0 (global attention)"),
                       ("step", "step 0 (a context kernel caches no tokens before its prompt)"),
                       ("isl", "isl 1 (a generation kernel takes one query token per sequence)")):
        lacking = sorted({t.path for t in tables if col in t.assumed})
        if lacking:
            out.append(f"no {col} column in {', '.join(lacking)}: read as {reads}")
    return out


def match_gpu(device: str) -> str | None:
    """The catalog name of a table's ``device`` string, or None: the known strings first, then the string
    itself (lower case, 'NVIDIA ' or 'AMD ' dropped, spaces as '-') as a catalog name or alias: ROCm's
    torch.cuda.get_device_name 'AMD Instinct MI300X' is the alias instinct-mi300x."""
    if device in DEVICES:
        return DEVICES[device]
    from ...machine import hardware
    key = re.sub(r"[\s_]+", "-", re.sub(r"^(nvidia|amd)\s+", "", device.strip().lower()))
    try:
        return hardware.get(key).name
    except IronlawError:
        return None


def files(root: str | Path, ops=tuple(COLUMNS), framework: str | None = None) -> list[Path]:
    """The table files under ``root`` (or ``root`` itself) for ``ops``, in a stable order; the framework
    filter matches the folder name as the layout gives it (``.../<framework>/<version>/``) and keeps the files
    under no framework folder (a user's own layout: their ``framework`` column, if any, is checked on reading)."""
    root = Path(root)
    if not root.exists():
        raise IronlawError(f"{root}: no such file or folder")
    if root.is_file():                  # one file: its op from its name or its op_name column (``_read_file``)
        return [root]
    cands = sorted(p for p in root.rglob("*") if p.suffix in SUFFIXES and (p.suffix != ".txt" or
                                                                          p.stem.endswith("_perf")))
    out = []
    for p in cands:
        if _op_of_name(p) not in ops:
            continue
        folders = p.relative_to(root).parts[:-1]
        if framework and framework not in folders and any(f in FRAMEWORK_FOLDERS for f in folders):
            continue
        out.append(p)
    return out


def frameworks_in(root: str | Path, ops=tuple(COLUMNS)) -> tuple[str, ...]:
    """The framework folders (``.../<framework>/<version>/``) the tables of ``ops`` under ``root`` lie in, sorted;
    () for a user's own layout."""
    root = Path(root)
    return tuple(sorted({f for p in files(root, ops) for f in p.relative_to(root).parts[:-1] if f in FRAMEWORK_FOLDERS}
                        if root.is_dir() else ()))


def read(root: str | Path, ops=tuple(COLUMNS), gpu: str | None = None, framework: str | None = None,
         release: str | None = None) -> list[KernelTable]:
    """Every table of ``ops`` under ``root`` (a folder in the wheel's layout, or one .parquet/.csv/.txt file),
    checked; ``gpu`` keeps one catalog GPU's (and names the GPU of tables whose device the catalog does not
    know); ``framework`` keeps one framework's (trtllm, sglang, vllm); ``release`` one release line's versions
    (``in_release``). Errors are one line."""
    for op in ops:
        if op not in COLUMNS:
            raise unknown("kernel table op", op, COLUMNS)
    paths = files(root, ops, framework)
    if not paths:
        want = ", ".join(f"{op}_perf" for op in ops)
        held = frameworks_in(root, ops) if framework else ()
        raise IronlawError(f"{root}: no kernel table ({want} .parquet, .csv or .txt)"
                           + (f" for framework '{framework}'" if framework else "")
                           + (f" (its tables are {', '.join(held)}'s)" if held else ""))
    out, others, seen = [], set(), set()
    for p in paths:
        for t in _read_file(Path(root), p, gpu, seen):
            if framework and t.framework and t.framework != framework:
                others.add(t.framework)                   # its rows name another framework
            else:
                out.append(t)
    if others and not out:
        raise IronlawError(f"{root}: no kernel table for framework '{framework}': the tables' framework column "
                           f"names {', '.join(sorted(others))}; pass --framework {sorted(others)[0]}")
    if gpu is not None and not out and seen:
        raise IronlawError(f"{root}: no kernel table for GPU '{gpu}' (the tables' GPUs: {', '.join(sorted(seen))})")
    if not out:                                  # every table holds its header alone
        raise IronlawError(f"{root}: the kernel tables hold no rows ({', '.join(str(p.name) for p in paths[:3])}"
                           f"{', …' if len(paths) > 3 else ''})")
    if release is not None:
        found = sorted({t.version for t in out})
        out = [t for t in out if in_release(t.version, release)]
        if not out:
            raise IronlawError(f"{root}: no kernel table of release {release} (versions found: "
                               f"{', '.join(found) or 'none'})")
    return newest(out)


def in_release(version: str, release: str) -> bool:
    """Whether ``version`` (1.0.0rc3) belongs to the release line ``release`` (1.0): equal, or ``release``
    followed by more version parts (.0, rc3, .post1) — 1.0 holds 1.0.0rc3 and 1.0.1, not 1.1.0 or 1.00."""
    v, r = version.strip().lower(), release.strip().lower()
    return v == r or re.fullmatch(re.escape(r) + r"(\.\d+)*(rc\d+)?(\.?post\d+)?", v) is not None


def newest(tables: list[KernelTable]) -> list[KernelTable]:
    """Per GPU, op and framework, the table of the newest version (versions compared number by number)."""
    best: dict[tuple, KernelTable] = {}
    for t in tables:
        key = (t.gpu, t.op, t.framework)
        if key not in best or _version_key(t.version) > _version_key(best[key].version):
            best[key] = t
    return [t for t in tables if best[(t.gpu, t.op, t.framework)] is t]


def _version_key(v: str) -> tuple:
    return tuple((0, int(x), "") if x.isdigit() else (1, 0, x) for x in re.findall(r"\d+|[a-z]+", v.lower()))


def _read_file(root: Path, path: Path, gpu: str | None, seen: set | None = None) -> list[KernelTable]:
    """The file's tables, one per GPU (``gpu``'s alone where given); ``seen`` collects the GPUs its rows name."""
    try:
        import pandas as pd
    except ImportError:
        raise IronlawError("reading kernel tables needs pandas (and pyarrow for parquet): "
                           "pip install 'ironlaw[fit]'") from None
    rel = str(path.relative_to(root)) if path != root and root in path.parents else path.name
    try:
        df = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    except ImportError as e:
        raise IronlawError(f"{rel}: reading parquet needs pyarrow (pip install 'ironlaw[fit]'): {e}") from None
    except pd.errors.EmptyDataError:
        raise IronlawError(f"{rel}: the file is empty (no header row, no rows)") from None
    except Exception as e:                                 # noqa: BLE001 (a file pandas cannot parse)
        raise IronlawError(f"{rel}: cannot read the table: {str(e).splitlines()[0]}") from None
    op = _op_of_name(path)
    if op not in COLUMNS:
        names = sorted({str(x) for x in df["op_name"].unique()}) if "op_name" in df.columns else []
        if len(names) != 1 or names[0] not in COLUMNS:
            raise IronlawError(f"{rel}: cannot tell which kernels the table holds: name it <op>_perf.csv (op one of "
                               f"{', '.join(COLUMNS)}) or give it one op_name of those")
        op = names[0]
    fill = {**NO_WINDOW.get(op, {}), **PHASE_FIXED.get(op, {})}
    assumed = tuple(c for c in fill if c not in df.columns)
    df = df.assign(**{c: fill[c] for c in assumed})
    want = None if gpu is None else _catalog_name(gpu)
    if gpu is not None and "device" not in df.columns and len(df.columns) > 1:   # a user's own table that names no
        df = df.assign(device=gpu)                                                   # GPU: --gpu names it
    if seen is not None and "device" in df.columns:
        seen.update(match_gpu(str(d)) or str(d) for d in df["device"].unique())
    if want is not None and "device" in df.columns:       # another GPU's rows are not checked for this one's fit
        keep = [d for d in df["device"].unique() if match_gpu(str(d)) in (None, want)]
        if not keep:
            return []
        df = df[df["device"].isin(keep)]
    df = _checked(df, op, rel)
    df = df.assign(**{c: df[c].replace(TABLE_DTYPES) for c in DTYPE_COLUMNS if c in df.columns})
    out = []
    for device, rows in df.groupby("device", sort=True):
        name = match_gpu(str(device))
        if name is None and gpu is None:
            raise IronlawError(f"{rel}: GPU '{device}' matches no catalog GPU; name it with --gpu NAME")
        if want is not None and name is not None and name != want:
            continue
        fw, ver = _framework(rows, _folders(root, path))
        out.append(KernelTable(op, name or gpu, str(device), fw, ver, rel, rows.reset_index(drop=True), assumed))
    return out


def _op_of_name(path: Path) -> str:
    return path.stem[:-len("_perf")] if path.stem.endswith("_perf") else path.stem


def _catalog_name(gpu: str) -> str:
    """A catalog GPU's name (aliases resolved); a hardware .toml file's own name; else ``gpu`` as given."""
    from ...machine import hardware
    try:
        return (hardware.load_file(gpu) if gpu.endswith(".toml") else hardware.get(gpu)).name
    except IronlawError:
        return gpu


def _checked(df, op: str, where: str):
    """``df`` with ``latency_s`` in seconds, after checking the op's columns and the latency's unit."""
    missing = [c for c in COLUMNS[op] if c not in df.columns]
    if missing:
        sep = next((f" (its header reads as one column; its columns are split by {name}, and a table's by "
                    f"commas)" for c, name in (("\t", "tabs"), (";", "semicolons")) if len(df.columns) == 1
                    and c in str(df.columns[0])), "")
        gpu = " (or name the table's GPU with --gpu NAME)" if "device" in missing else ""
        raise IronlawError(f"{where}: missing column{'s' if len(missing) > 1 else ''} "
                           f"{', '.join(missing)} for a {op} table{sep or gpu}")
    lat = [c for c in LATENCY_COLUMNS if c in df.columns]
    if len(lat) != 1:
        found = ", ".join(lat) if lat else "none"
        raise IronlawError(f"{where}: expected one latency column ({', '.join(LATENCY_COLUMNS)}), found {found}")
    unit = LATENCY_UNIT.get(op, "ms") if lat[0] == "latency" else LATENCY_COLUMNS[lat[0]]
    if "latency_unit" in df.columns:
        units = sorted({str(u) for u in df["latency_unit"].unique()})
        bad = [u for u in units if u not in UNITS_S]
        if bad or len(units) != 1 or lat[0] != "latency":
            raise IronlawError(f"{where}: unknown latency unit {', '.join(bad or units)} (latency_unit must be "
                               f"one of {', '.join(UNITS_S)}, one per table, beside a 'latency' column)")
        unit = units[0]
    import pandas as pd
    t = pd.to_numeric(df[lat[0]], errors="coerce")
    if t.isna().any() or (t <= 0).any() or not t.map(math.isfinite).all():
        raise IronlawError(f"{where}: column {lat[0]} must hold positive numbers (finite)")
    return df.assign(latency_s=t * UNITS_S[unit])


def check_gemm_dims(df, where: str) -> None:
    """GEMM rows' m, n, k: positive whole numbers on every row (a zero-size GEMM is no kernel to fit); checked
    where rows are fitted, not on reading (a release filter may drop the file)."""
    import pandas as pd
    dims = df[["m", "n", "k"]].apply(pd.to_numeric, errors="coerce")
    bad = (dims.isna() | (dims <= 0) | (dims != dims.round())).any(axis=1)
    if bad.any():
        r = df[bad].iloc[0]
        raise IronlawError(f"{where}: {int(bad.sum())} of {len(df)} rows have m, n or k that is not a positive whole "
                           f"number (the first: m={r['m']}, n={r['n']}, k={r['k']}); drop them or pass another table")


ATTENTION_OPS = ("context_attention", "generation_attention")
POSITIVE_ATTENTION = ("batch_size", "isl", "num_heads", "num_key_value_heads", "head_dim")   # ≥ 1
NATURAL_ATTENTION = ("window_size", "step")                                                     # ≥ 0 (0: none)


def check_attention_dims(t: KernelTable) -> None:
    """An attention table's shape columns: whole numbers, ``POSITIVE_ATTENTION`` at least 1, ``NATURAL_ATTENTION``
    at least 0, and each row's query heads a multiple of its KV heads (grouped-query attention shares each KV head
    among a whole number of query heads); else one line naming the first bad row."""
    if t.op not in ATTENTION_OPS:
        return
    import pandas as pd
    cols = POSITIVE_ATTENTION + NATURAL_ATTENTION
    dims = t.rows[list(cols)].apply(pd.to_numeric, errors="coerce")
    bad = (dims.isna() | (dims != dims.round())).any(axis=1) | (dims[list(POSITIVE_ATTENTION)] < 1).any(axis=1) \
        | (dims[list(NATURAL_ATTENTION)] < 0).any(axis=1)
    why = "whole numbers, batch_size, isl and the head counts and head_dim 1 or more, window_size and step 0 or more"
    if not bad.any():
        bad = (dims.num_heads % dims.num_key_value_heads) != 0
        why = "num_heads a multiple of num_key_value_heads (each KV head serves a whole number of query heads)"
    if bad.any():
        r = t.rows[bad].iloc[0]
        raise IronlawError(f"{t.path}: {int(bad.sum())} of {len(t.rows)} rows break {why} (the first: "
                           + ", ".join(f"{c}={r[c]}" for c in cols) + "); drop them or pass another table")


def _folders(root: Path, path: Path) -> tuple[str, ...]:
    """The folders that place a table in the layout: those between ``root`` and the file, or a file read alone,
    its own folders."""
    return path.relative_to(root).parts[:-1] if root in path.parents else path.resolve().parts[:-1]


def _framework(rows, folders: tuple[str, ...]) -> tuple[str, str]:
    """(framework, version) from the rows' columns, else from the layout's folders (a framework folder and the
    version folder under it), else ('', ''): a folder of any other name names no framework."""
    if "framework" in rows.columns and "version" in rows.columns:
        return str(rows["framework"].iloc[0]).lower(), str(rows["version"].iloc[0])
    at = [i for i, f in enumerate(folders) if f in FRAMEWORK_FOLDERS]
    if not at:
        return "", ""
    i = at[-1]
    return folders[i], (folders[i + 1] if i + 1 < len(folders) else "")


# A GEMM table's latency in the wrong unit (µs written under ``latency``, which reads ms) is 1000× off: its largest
# GEMM then runs 1000× its roofline, or (seconds read as ms) far past the device's peak. Measured tables time their
# largest GEMM at 1.05-6.0× its roofline (the 140 table × dtype pairs of aiconfigurator-core 0.12.0's and
# aiconfigurator 0.8.0's GEMM tables and tests/data's, on the catalog's peaks and bandwidths).
UNIT_SLOWER = 100.0          # the largest GEMM more than this many times its roofline: a unit slip, refused
UNIT_FASTER = 0.01           # … or under a hundredth of it (seconds read as ms); a table faster than the roofline by
                             # less is another GPU's or fitted on too low a peak: refused as such (kernelfit.floor)
UNIT_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "fp8": "fp8"}    # whose peak is the device's own


def check_gemm_unit(t: KernelTable, hw) -> None:
    """Refuse a GEMM table whose largest GEMM of each checked dtype (``UNIT_DTYPES``) runs outside
    [UNIT_FASTER, UNIT_SLOWER] × its roofline on ``hw`` (max of 2mnk / peak and its operands' and output's bytes /
    device bandwidth): its latency is in another unit than its column says."""
    if t.op != "gemm" or not hw.memory:
        return
    bw = max(x.bw_Bps for x in hw.memory if x.role == "device") if any(x.role == "device" for x in hw.memory) \
        else hw.memory[-1].bw_Bps
    for src, dt in UNIT_DTYPES.items():
        rows = t.rows[t.rows["gemm_dtype"] == src]
        if rows.empty or dt not in hw.peak_flops:
            continue
        m, n, k = (rows[c].astype(float) for c in ("m", "n", "k"))
        i = (m * n * k).idxmax()
        size = 1 if dt == "fp8" else 2
        moved = size * (m[i] * k[i] + k[i] * n[i]) + 2 * m[i] * n[i]        # operands in, bf16 output out
        roof = max(2 * m[i] * n[i] * k[i] / hw.peak_flops[dt], moved / bw)
        ratio = float(rows["latency_s"][i]) / roof
        if not UNIT_FASTER <= ratio <= UNIT_SLOWER:
            how = f"{ratio:,.0f}× slower than" if ratio > 1 else f"{1 / ratio:,.0f}× faster than"
            raise IronlawError(f"{t.path}: its largest {src} GEMM ({int(m[i])}×{int(n[i])}×{int(k[i])}) runs {how} "
                               f"{hw.name}'s roofline: its latency is in another unit than its column names "
                               f"('latency' reads ms; 'latency_us', 'latency_s' or a latency_unit column name another)")
