"""From the probe's rows to a hardware profile: peaks, tiers, latency, efficiency, calibration.

Every number gets the source "measured by probe on <date> (<host>, torch <v>, <n> threads): …".
A dtype without a fast path keeps its measured peak and says so (it is not dropped, nor replaced
by another dtype's rate). ``observations`` turns the rows into calibration observations (also
usable together with ``ironlaw validate``'s per-op measurements: ``fit.recalibrate``).
"""
from __future__ import annotations

import statistics

from . import calibrate
from ...machine.cache import CACHE_RESIDENT_FRACTION
from ...core.errors import IronlawError
from ...core.units import counted, fmt
from .fitcore import Observation
from ...core.gemmshape import GEMV_PASS_MAX
from ...core.graph import Op, dtype_bytes
from ...machine.hardware import SCHEMA, parse_hardware
from ..probe import conv, memory as memory_probe

NO_FAST_PATH = 0.1        # a dtype below this fraction of the best dtype's peak has no fast path


def source(probe: dict, what: str) -> str:
    return (f"measured by probe on {probe['date']} ({probe['host']}, torch {probe['torch']}, "
            f"{counted(probe['threads'], 'thread')}): {what}")


LARGE_GEMM_FLOPS = 2e8      # shapes with at least this much work show the sustained rate


def _peak_row(rows: list[dict]) -> tuple[float, dict, int]:
    """(peak, fastest row, n large shapes): the fastest large shape. Each row is already a median over
    repeats, and noise only slows a GEMM down, so the fastest is the best estimate of the peak (a median of
    the fastest few can fall below a rate the device did reach, which no η ≤ 1 can fit)."""
    large = [r for r in rows if 2.0 * r["m"] * r["n"] * r["k"] >= LARGE_GEMM_FLOPS] or rows
    top = max(large, key=lambda r: r["flops_per_s"])
    return top["flops_per_s"], top, len(large)


SMALL_ONLY = "small shapes only"     # a peak no shape large enough to reach one measured (``_peak_text``)


def _peak_text(rows: list[dict], r: dict, n_top: int) -> str:
    """Where a dtype's peak came from: the fastest of its large GEMM shapes, or, where none of its shapes does
    ``LARGE_GEMM_FLOPS`` of work (a dtype without a fast path runs its small shapes only, ``probe.gemm.FastPathGate``;
    a quick probe's fp16), the fastest small one, which says so: a floor under the peak, not the peak."""
    rate = f"{r['m']}x{r['n']}x{r['k']} at {r['flops_per_s'] / 1e9:.1f} GFLOP/s (spread {r['cv']:.1%})"
    if any(2.0 * x["m"] * x["n"] * x["k"] >= LARGE_GEMM_FLOPS for x in rows):
        return f"fastest of {n_top} large GEMM shapes ({len(rows)} measured): {rate}"
    return (f"{SMALL_ONLY} (each under {LARGE_GEMM_FLOPS / 1e9:g} GFLOP): fastest of {len(rows)} GEMM "
            f"shape{'s' if len(rows) != 1 else ''}, {rate}, a floor under the peak, not the peak")


def compute_peaks(probe: dict) -> dict:
    by_dt: dict[str, list[dict]] = {}
    for r in probe.get("gemm", []):
        if r.get("weights") != "cold":            # the kernel's rate, not main memory's
            by_dt.setdefault(r["dtype"], []).append(r)
    if not by_dt:
        raise IronlawError("probe: no GEMM measured; cannot write a profile")
    peaks = {dt: _peak_row(rows) for dt, rows in by_dt.items()}
    texts = {dt: _peak_text(by_dt[dt], r, n_top) for dt, (_, r, n_top) in peaks.items()}
    for dt in peaks:                  # another library's kernels (oneDNN convs on a CPU) may run faster
        convs = [r for r in probe.get("conv", []) if r["dtype"] == dt and r.get("groups", 1) == 1]
        c = max(convs, key=lambda r: r["flops_per_s"]) if convs else None
        if c is not None and c["flops_per_s"] > peaks[dt][0]:
            gemm_peak, r, n_top = peaks[dt]
            texts[dt] = (f"a convolution, {c['batch']}x{c['cin']}x{c['size']}x{c['size']} {c['kernel']}x{c['kernel']}"
                         f"→{c['cout']} at {c['flops_per_s'] / 1e9:.1f} GFLOP/s (spread {c['cv']:.1%}), outran every "
                         f"GEMM: the GEMM library's best, {texts[dt]}, is {gemm_peak / c['flops_per_s']:.0%} of it")
            peaks[dt] = (c["flops_per_s"], r, n_top)
    out = {}
    for dt, (peak, r, n_top) in peaks.items():
        # compare with dtypes at least as wide: fp16 against bf16 (same width), never fp32 against bf16
        best = max(p for d, (p, _, _) in peaks.items() if dtype_bytes(d) >= dtype_bytes(dt))
        what = texts[dt]
        wider = [(d, p) for d, (p, _, _) in peaks.items() if dtype_bytes(d) > dtype_bytes(dt)]
        slower_wide = [(d, p) for d, p in wider if peak < p]
        if peak < NO_FAST_PATH * best:
            what += f"; NO FAST PATH: {peak / best:.1%} of the best dtype as wide or wider"
        elif dtype_bytes(dt) < 4 and slower_wide:       # a 16-bit type slower than a wider one runs no unit of its own
            d, p = max(slower_wide, key=lambda x: x[1])
            what += f"; NO FAST PATH: slower than {d} ({peak / p:.0%} of it)"
        out[dt] = {"peak_flops": peak, "source": source(probe, what)}
    return out


def _vector(probe: dict) -> dict:
    rows = probe.get("vector", [])
    if not rows:
        raise IronlawError("probe: no elementwise op measured; cannot write a profile")
    r = max(rows, key=lambda r: r["elems_per_s"] * r["flops_per_elem"])
    rate = r["elems_per_s"] * r["flops_per_elem"]
    return {"peak_flops": rate, "source": source(probe, f"fastest elementwise op, {r['op']} on {r['elems']} "
                                                        f"{r['dtype']} elements ({r['flops_per_elem']:g} FLOP per element)")}


CACHE_RATE_KEPT = 0.75     # a cache working set copying slower than this share of the level's rate has spilled


def effective_cache(rows: list[dict], bw: float, overhead: float) -> tuple[list[dict], float | None]:
    """The working sets that still ran at the cache's rate, and the largest of them when a larger one did
    not (a VM's last level is shared: the OS reports the whole chip's). None when every size kept the rate."""
    ok = [r for r in rows if r["bytes"] / max(r["time_s"] - overhead, 1e-12) >= CACHE_RATE_KEPT * bw]
    largest_ok = max((r["bytes"] for r in ok), default=0.0)
    spilled = [r for r in rows if r not in ok and r["bytes"] > largest_ok]
    if not spilled or len(ok) < 2:
        return rows, None
    return [r for r in ok if r["bytes"] <= largest_ok], largest_ok


def _tiers(probe: dict, noisy: list[str] | None = None) -> tuple[list[dict], dict]:
    """The memory tiers and their fits; a level whose copy time did not grow with size is refused, or with
    ``noisy`` (a probe saved past its checks) rated by its median rate and the reason appended to ``noisy``."""
    rows = probe.get("memory", [])
    capacity = probe.get("capacity", {})
    disp = [r["time_s"] for r in probe.get("dispatch", [])]
    dispatch_s = statistics.median(disp) if disp else None
    levels = list(dict.fromkeys(r["level"] for r in rows))
    tiers, fits = [], {}
    for level in levels:
        lr = [r for r in rows if r["level"] == level]
        role = "device" if level in ("dram", "hbm") else "cache"
        # on a GPU the copies are replayed from a CUDA graph (no host overhead) and every device-memory set is
        # many times the L2: the bandwidth is the median rate over the sizes
        known = 0.0 if probe.get("cuda") and role == "device" else dispatch_s
        failed = len(noisy or [])
        bw, overhead = memory_probe.fit(lr, known, noisy)
        if level not in capacity:
            raise IronlawError(f"probe: no capacity recorded for memory level '{level}' (probe.capacity)")
        cap, cap_how = capacity[level], "capacity as the OS / driver reports it"
        if role == "cache":
            kept, effective = effective_cache(lr, bw, overhead)
            if effective is not None and effective < cap:
                cap_how = (f"capacity {effective / 2**20:.0f} MiB, the largest working set that still copied at ≥ "
                           f"{CACHE_RATE_KEPT:.0%} of the level's rate (the OS reports {cap / 2**20:.0f} MiB, shared "
                           f"with other tenants; {len(lr) - len(kept)} larger set(s) ran at the next level's speed)")
                cap, lr = effective, kept
                bw, overhead = memory_probe.fit(lr, dispatch_s, noisy)
        fits[level] = {"bw_Bps": bw, "overhead_s": overhead, "sizes": len(lr)}
        how = ("BW = the median rate (bytes / time) of copies replayed from a CUDA graph over" if known == 0.0 else
               "BW = the median rate, as the copy time did not grow with size (a noisy machine), over"
               if len(noisy or []) > failed else
               "fit t = overhead + bytes/BW" if overhead != dispatch_s else
               "t = overhead + bytes/BW with the overhead = the per-op dispatch latency (too small to fit here), "
               "BW = median over")
        what = (f"copy bandwidth (read + written bytes), {how} {len(lr)} working sets "
                f"{min(r['bytes'] for r in lr) / 2**20:.1f}–{max(r['bytes'] for r in lr) / 2**20:.1f} MiB; "
                f"overhead {overhead * 1e6:.1f} µs; {cap_how}")
        tiers.append({"name": level, "role": role, "capacity_bytes": cap, "bw_Bps": bw, "source": source(probe, what)})
    # a cache level that copies no faster than the level below it (PyTorch's copy is bound by the core,
    # not the cache, at these sizes) is not a separate tier: say so in the next tier's source, keep it in fits
    i = 0
    while i + 1 < len(tiers):
        a, b = tiers[i], tiers[i + 1]
        if a["role"] == "cache" and b["role"] == "cache" and a["bw_Bps"] <= b["bw_Bps"]:
            b["source"] += (f"; {a['name']} copies measured no faster ({a['bw_Bps'] / 1e9:.0f} GB/s), so it is not "
                            f"listed as a tier of its own")
            fits[a["name"]]["not_listed"] = f"no faster than {b['name']}"
            del tiers[i]
        else:
            i += 1
    _out_of_order(tiers, fits, noisy)
    return tiers, fits


def _out_of_order(tiers: list[dict], fits: dict, noisy: list[str] | None) -> None:
    """A level measured faster than the cache above it (a noisy machine): refused, or with ``noisy`` the cache
    is not listed as a tier of its own (its working sets take the faster level's rate) and the reason joins
    ``noisy``, so the profile is saved marked unsteady."""
    i = 0
    while i + 1 < len(tiers):
        a, b = tiers[i], tiers[i + 1]
        if b["bw_Bps"] <= a["bw_Bps"]:
            i += 1
            continue
        said = (f"probe: {b['name']} measured faster than {a['name']} ({fmt(b['bw_Bps'], 'B/s')} vs "
                f"{fmt(a['bw_Bps'], 'B/s')}) — the machine was too noisy")
        if noisy is None or a["role"] != "cache":
            raise IronlawError(f"{said}; nothing saved, run again")
        noisy.append(f"{said}; {a['name']} is not listed as a tier of its own")
        b["source"] += f"; {a['name']} copies measured slower ({fmt(a['bw_Bps'], 'B/s')}), so it is not listed"
        fits[a["name"]]["not_listed"] = f"measured slower than {b['name']}"
        del tiers[i]
        i = max(i - 1, 0)


def _host_link(probe: dict, fits: dict, tiers: list[dict]) -> list[dict]:
    """GPU: pinned host→device copies become the PCIe link (and a host tier when host RAM is the larger)."""
    h2d = [r for r in probe.get("cuda", []) if r["what"] == "h2d"]
    if len(h2d) < 2:
        return []
    bw, overhead = memory_probe.fit([{"level": "h2d", **r} for r in h2d])          # PCIe: overhead visible
    fits["h2d"] = {"bw_Bps": bw, "overhead_s": overhead, "sizes": len(h2d)}
    what = "pinned host→device copies, fit t = overhead + bytes/BW (CUDA events)"
    host = probe.get("capacity", {}).get("host", 0.0)
    dev = next(t for t in tiers if t["role"] == "device")
    if host and host >= dev["capacity_bytes"] and bw <= dev["bw_Bps"]:
        tiers.append({"name": "host-dram", "role": "host", "capacity_bytes": host, "bw_Bps": bw,
                      "source": source(probe, what + "; capacity from the OS")})
    return [{"name": "host-link", "kind": "pcie", "bw_Bps": bw, "latency_s": max(overhead, 1e-7),
             "source": source(probe, what)}]


GEMV_SAME = 1.25     # a cold product no slower than this × the cold GEMV of its shape runs on the GEMV path
GEMV_BELOW_PACKED = 1.4    # … and so does one this much faster than every larger M of its shape (the packed GEMM)


def _cold_gemv_rows(probe: dict, dtype: str, layout: str) -> tuple[dict | None, list[dict]]:
    """The cold M = 1 row of one dtype and layout, and the rows of its shape at larger M (by M)."""
    cold = [r for r in probe.get("gemm", []) if r.get("weights") == "cold" and r["dtype"] == dtype
            and r.get("layout", "nt") == layout]
    ones = [r for r in cold if r["m"] == 1]
    if not ones:
        return None, []
    # the M = 1 row whose shape was also timed at larger M (the others time other row lengths, ``gemv_row``)
    base = max(ones, key=lambda b: sum((r["n"], r["k"]) == (b["n"], b["k"]) for r in cold))
    return base, sorted((r for r in cold if (r["n"], r["k"]) == (base["n"], base["k"]) and r["m"] > 1),
                        key=lambda r: r["m"])


def gemv_m(probe: dict, dtype: str, layout: str = "nt") -> int | None:
    """The largest M the library runs on its matrix-vector path, from the cold rows of one weight shape and
    layout (M = 1, 2, 4 …): every M up to it ran within GEMV_SAME of M = 1, or GEMV_BELOW_PACKED faster
    than every larger M (each row re-reading the weights, but not yet the packed GEMM: MKL's fp32 x @ W
    at M = 2 runs at about twice its M = 1 time, at M = 4 at three to four times). None without a
    cold GEMV."""
    base, rows = _cold_gemv_rows(probe, dtype, layout)
    if base is None:
        return None
    out = 1
    for i, r in enumerate(rows):
        larger = [q["time_s"] for q in rows[i + 1:]]
        flat = r["time_s"] <= GEMV_SAME * base["time_s"]
        below = bool(larger) and r["time_s"] * GEMV_BELOW_PACKED <= min(larger)
        if not (flat or below):
            break
        out = r["m"]
    return out


def gemv_pass(probe: dict, dtype: str, layout: str = "nt") -> float | None:
    """On the GEMV path, the weight traffic each row beyond the first adds (× the weight bytes): from the
    path's largest M, (t(M)/t(1) − 1)/(M − 1), within [0, GEMV_PASS_MAX]; None where the path is M = 1."""
    m = gemv_m(probe, dtype, layout)
    if not m or m <= 1:
        return None
    base, rows = _cold_gemv_rows(probe, dtype, layout)
    t = next(r["time_s"] for r in rows if r["m"] == m)
    return min(max((t / base["time_s"] - 1.0) / (m - 1), 0.0), GEMV_PASS_MAX)


def gemv_row(probe: dict, dtype: str, layout: str = "nt") -> list[list[float]] | None:
    """[[row length, factor], …] by length: the cold M = 1 rows' time per weight byte at each length of the
    stored weight rows (x @ Wᵀ, W stored N×K: K; x @ W, K×N: N) over the fastest length's (the mean where
    one length was timed twice); None with fewer than two lengths."""
    per: dict[int, list[float]] = {}
    for r in probe.get("gemm", []):
        if r.get("weights") == "cold" and r["dtype"] == dtype and r.get("layout", "nt") == layout and r["m"] == 1:
            per.setdefault(r["n"] if layout == "kn" else r["k"], []).append(r["time_s"] / (r["n"] * r["k"]))
    if len(per) < 2:
        return None
    rate = {length: sum(t) / len(t) for length, t in per.items()}
    fastest = min(rate.values())
    return [[length, round(rate[length] / fastest, 4)] for length in sorted(rate)]


def gemv_tables(probe: dict) -> dict:
    """{dtype: {"gemv_m": M, "gemv_pass": x, "gemv_row": [[length, factor], …], and the same with _kn}}: where
    a GEMV path reaches beyond M = 1, and a GEMV's time per byte by weight-row length (measured, never fitted)."""
    out: dict = {}
    for dt in sorted({r["dtype"] for r in probe.get("gemm", [])}):
        for suffix, layout in (("", "nt"), ("_kn", "kn")):
            m = gemv_m(probe, dt, layout)
            if m and m > 1:
                out.setdefault(dt, {})["gemv_m" + suffix] = m
                out[dt]["gemv_pass" + suffix] = round(gemv_pass(probe, dt, layout), 4)
            rows = gemv_row(probe, dt, layout)
            if rows:
                out.setdefault(dt, {})["gemv_row" + suffix] = rows
    return out


def _conv_op(r: dict, last_cache: float) -> Op:
    """A probe conv row as the capture records the same call: in + out activations, weights, N and K, and a
    grouped conv's groups (its op class, ``graph.op_class``)."""
    b, g = dtype_bytes(r["dtype"]), r.get("groups", 1)
    act = r["batch"] * r["size"] ** 2 * (r["cin"] + r["cout"]) * b
    w = r["cout"] * (r["cin"] // g) * r["kernel"] ** 2 * b
    resident = act + w <= CACHE_RESIDENT_FRACTION * last_cache   # the same operands every call
    attrs = {"nk": (r["cout"], r["cin"] // g * r["kernel"] ** 2), **({"resident": True} if resident else {}),
             **({"groups": g, "group_channels": r["cin"] // g} if g > 1 else {})}
    return Op(f"conv {r['dtype']} {r['batch']}x{r['cin']}x{r['size']}² {r['kernel']}x{r['kernel']}→{r['cout']}"
              + (f" groups {g}" if g > 1 else ""), "conv",
              flops=conv.flops(r["batch"], r["cin"], r["size"], r["cout"], r["kernel"], g),
              bytes={"activations": act, "weights": w}, dtype=r["dtype"], attrs=attrs)


def observations(probe: dict, dataset: str = "probe") -> list[Observation]:
    """Calibration observations from the probe's rows (L2-only copies left out: the law's cache is the last level)."""
    out = []
    last_cache = max([v for k, v in probe.get("capacity", {}).items() if k in ("l2", "l3")] or [0.0])
    for r in probe.get("gemm", []):
        m, n, k, b = r["m"], r["n"], r["k"], dtype_bytes(r["dtype"])
        total = (m * k + m * n + k * n) * b
        # hot rows run torch.mm(a, b), x @ W, unless they say nt (F.linear); cold rows x @ Wᵀ unless they say kn
        kn = r["layout"] == "kn" if "layout" in r else r.get("weights") != "cold"
        if r.get("weights") == "cold":          # weights from main memory, read once per call
            name = f"gemm {r['dtype']} {m}x{n}x{k} cold" + (" x@W" if kn else "")
            byts = {"activations": (m * k + m * n) * b, "weights": k * n * b}
        elif total <= CACHE_RESIDENT_FRACTION * last_cache:   # the same operands every call: all cache-resident,
            name, byts = f"gemm {r['dtype']} {m}x{n}x{k}", {"activations": total}   # as the law places activations
        else:
            name, byts = f"gemm {r['dtype']} {m}x{n}x{k}", {"activations": (m * k + m * n) * b, "weights": k * n * b}
        if r.get("weights") != "cold" and not kn:
            name += " x@Wᵀ"
        op = Op(name, "matmul", flops=2.0 * m * n * k, bytes=byts, dtype=r["dtype"],
                attrs={"mnk": (m, n, k), **({"weights_kn": True} if kn else {})})
        out.append(Observation(op, r["time_s"], f"{dataset}:gemm", r["cv"]))
    for r in probe.get("conv", []):
        out.append(Observation(_conv_op(r, last_cache), r["time_s"], f"{dataset}:conv", r["cv"]))
    for r in probe.get("attention", []):        # FLOPs and bytes as the capture recorded the same call
        byts = {"activations": r["act_bytes"], **({"kv_cache": r["kv_bytes"]} if r.get("kv_bytes") else {})}
        resident = (r.get("inputs") != "cold"                              # cold: Q, K, V (or KV) from memory
                    and sum(byts.values()) <= CACHE_RESIDENT_FRACTION * last_cache)   # else the same operands
        op = Op(f"attention {r['dtype']} {r['batch']}x{r['heads']} {r['q_len']}→{r['kv_len']}x{r['head_dim']}"
                + (" causal" if r["causal"] else ""), "attention", flops=r["flops"], bytes=byts, dtype=r["dtype"],
                attrs={"nk": (r["kv_len"], r["head_dim"]), **({"resident": True} if resident else {})})
        out.append(Observation(op, r["time_s"], f"{dataset}:attention", r["cv"]))
    for r in probe.get("memory", []):
        if r["level"] == "l2":
            continue
        op = Op(f"copy {r['bytes']:.0f} B", "copy", bytes={"activations": r["bytes"]}, dtype="fp32")
        out.append(Observation(op, r["time_s"], f"{dataset}:memory", r["cv"]))
    for r in probe.get("vector", []):
        b = dtype_bytes(r["dtype"])
        inputs = 2 if r["op"] in ("add", "mul") else 1
        op = Op(f"{r['op']} {r['elems']}", "elementwise", flops=r["flops_per_elem"] * r["elems"],
                bytes={"activations": (inputs + 1) * r["elems"] * b}, dtype=r["dtype"])
        out.append(Observation(op, r["time_s"], f"{dataset}:vector", r["cv"]))
    for r in probe.get("reduce", []):
        # a gather reads its rows from a table in main memory (as the capture classes an embedding's weight)
        rows = dtype_bytes(r["dtype"]) * r["elems"] if r["kind"] == "embedding" else 0.0
        op = Op(f"{r['op']} {r['elems']}", r["kind"], flops=r.get("flops_per_elem", 0.0) * r["elems"],
                bytes={"activations": r["bytes"] - rows, **({"weights": rows} if rows else {})}, dtype=r["dtype"])
        out.append(Observation(op, r["time_s"], f"{dataset}:reduce", r["cv"]))
    for r in probe.get("dispatch", []):
        if r["op"] == "linear":
            op = Op("linear 1x8x8", "matmul", flops=128.0, bytes={"activations": 64.0, "weights": 256.0}, dtype="fp32")
        else:
            op = Op(f"{r['op']} 8", "elementwise", flops=8.0, bytes={"activations": 64.0}, dtype="fp32")
        out.append(Observation(op, r["time_s"], f"{dataset}:dispatch", r["cv"]))
    return out


def profile(probe: dict, calibrate_fit: bool = True, strict: bool = True) -> dict:
    """The profile document (catalog TOML format) for the measured rows in ``probe``. A memory level whose copy
    time did not grow with size refuses it (``strict``), or is kept at its median rate and the reason added to
    ``checks.refused``: the profile is unsteady (``ironlaw probe`` without --strict)."""
    kind = "gpu" if probe.get("cuda") else "cpu"
    noisy: list[str] | None = None if strict else []
    tiers, fits = _tiers(probe, noisy)
    if noisy:
        checks = probe.get("checks", {})
        probe = {**probe, "checks": {**checks, "refused": [*checks.get("refused", []), *noisy]}}
    disp = [r["time_s"] for r in probe.get("dispatch", [])]
    if not disp:
        raise IronlawError("probe: no dispatch latency measured; cannot write a profile")
    lat = statistics.median(disp)
    what_lat = f"median of {len(disp)} tiny ops ({', '.join(r['op'] for r in probe['dispatch'])})"
    launch = [r for r in probe.get("cuda", []) if r["what"] == "launch"]
    if launch:
        what_lat += f"; CUDA kernel launch alone {launch[0]['time_s'] * 1e6:.1f} µs (device time)"
    compute = compute_peaks(probe)
    fp = compute.get("fp32") or next(iter(compute.values()))
    fp_dt = "fp32" if "fp32" in compute else next(iter(compute))
    gemm_eta = [r["flops_per_s"] / fp["peak_flops"] for r in probe["gemm"]
                if r["dtype"] == fp_dt and r.get("weights") != "cold"]
    unsteady = len(probe.get("checks", {}).get("refused", []))
    doc = {
        "schema": SCHEMA, "name": "local", "kind": kind,
        "title": f"{probe['device']} on {probe['host']} ({counted(probe['threads'], 'thread')}), probed "
                 f"{probe['date'][:10]}" + (f", unsteady: {unsteady} check(s) failed" if unsteady else ""),
        "compute": compute, "vector": _vector(probe), "memory": tiers,
        "latency": {"op_s": lat, "source": source(probe, what_lat)},
        "efficiency": {"matmul": round(min(statistics.median(gemm_eta), 1.0), 4), "other": 1.0, "memory": 1.0,
                       "source": source(probe, "matmul: median over the fp32 GEMM grid of rate / peak; other and "
                                               "memory: 1 (the peaks and tiers above are themselves measured); the "
                                               "[calibration] table refines them per op class and shape")},
        "probe": {**probe, "fits": fits},
    }
    links = _host_link(probe, fits, tiers)
    if links:
        doc["links"] = links
    if calibrate_fit:
        doc["calibration"] = probe_calibration(doc)
    return doc


def probe_calibration(doc: dict) -> dict:
    """The [calibration] fitted to the probe's own rows alone (``calibrate.fit``)."""
    probe = doc["probe"]
    hw = parse_hardware(doc, "probe")
    obs = observations(probe)
    families = ", ".join(sorted({o.dataset.split(":", 1)[1] for o in obs}))
    return calibrate.fit(hw, obs, source=source(probe, f"fitted to {len(obs)} probe rows ({families})"),
                         start={"matmul": gemv_tables(probe)})
