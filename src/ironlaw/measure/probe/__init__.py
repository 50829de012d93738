"""`ironlaw probe`: micro-benchmarks that measure this machine, one small module per family.

    dispatch   per-op framework latency (tiny ops)
    gemm       GEMM rate per dtype across a shape grid, and the 1-thread vs n-thread check
    memory     bandwidth per level (L2, last cache, DRAM / HBM): fit t = overhead + bytes/BW
    vector     elementwise and transcendental throughput
    conv       dense, depthwise and grouped convolutions
    reduce     reductions, norms, softmax, pooling (max, avg), embedding gathers
    cuda       kernel-launch latency and host↔device bandwidth (CUDA / HIP events; only with a GPU)
    runtime    which GPU runtime it ran on (CUDA or ROCm), its GEMM and collective libraries, the catalog GPU
    pages      what fresh memory costs (page faults, zeroing, giving it back; CPU only)
    attention  fused attention (SDPA) at a few prefill and decode shapes
    published  observations from published GPU measurements (not run here; see its docstring)

On a ROCm build of torch (the same ``torch.cuda`` API) the GPU rows run through HIP; ``runtime`` says which
runtime and libraries measured them, and which catalog GPU the device is (or why none), under ``probe.gpu``.
``run`` measures and returns the raw ``[probe]`` table (rows with median time and spread);
``ironlaw.measure.calibrate.build`` turns it into a profile (peaks, tiers, latency, calibration). A row whose
spread stays above the limit after re-measuring, a lost core or a threefold drift makes ``run`` refuse, naming
the worst rows (``ironlaw probe --strict``); with ``refuse=False`` (``ironlaw probe``) it returns the rows with
the reasons under ``checks.refused``, and every prediction on the profile carries the wider range
(``ironlaw.law.timerange``).
"""
from __future__ import annotations

import datetime as _dt
import platform
import socket
import statistics
import time
from typing import Callable

from ...core.errors import IronlawError
from .pool import ColdPool
from .timing import Budget

Progress = Callable[[int, int, str], None]        # (done, total, label)
MIN_SPEEDUP_2_THREADS = 1.3
# the drift sentinels (the same GEMM and DRAM copy at start, end and evenly between) may differ by up to this much
# (max / min − 1): a shared VM's fp32 GEMM swings by 2× within a minute (85 → 127 → 74 → 78 → 121 → 149 GFLOP/s,
# its DRAM copy 18 → 21 → 15 GB/s, measured by probe on 2026-12-04), which the profile keeps and every
# prediction's range (ironlaw.law.timerange) carries; a machine whose speed changed threefold mid-run fails the
# check (refused under --strict, else saved marked unsteady)
MAX_DRIFT = 2.0
SENTINELS = {False: 6, True: 3}   # drift checks through a full and a --quick run (each about 0.5 s on a CPU)


def _cpu_model() -> str:
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def plan(quick: bool, device: str, threads: int, budget: Budget,
         pool: ColdPool | None = None) -> list[tuple[str, str, Callable[[], dict]]]:
    """(family, label, thunk) for every measurement, in the order they run; the cold rows (GEMM weights,
    attention inputs) take their operand copies from ``pool`` (a new one sized to the last cache level if None)."""
    from . import attention, conv, cuda, dispatch, gemm, memory, pages, reduce, vector
    steps = [("dispatch", f"dispatch {op}", lambda op=op: dispatch.measure(op, budget, device))
             for op in (dispatch.OPS[:2] if quick else dispatch.OPS)]
    dtypes = ("fp32", "bf16", "fp16", "fp64")
    gate = gemm.FastPathGate()                    # a dtype without a fast path runs its small shapes only
    for dt in dtypes:
        for m, n, k in gemm.shapes(dt, quick, device):
            steps.append(("gemm", f"gemm {dt} {m}x{n}x{k}",
                          lambda dt=dt, m=m, n=n, k=k: gate.measure(dt, m, n, k, budget, device)))
    if device == "cpu":
        for dt in dtypes:
            for m, n, k in gemm.hot_nt_shapes(dt, quick):
                steps.append(("gemm", f"gemm {dt} {m}x{n}x{k} x@Wᵀ",
                              lambda dt=dt, m=m, n=n, k=k: gate.measure(dt, m, n, k, budget, device, "nt")))
    for dt in dtypes:
        for b, cin, size, cout, k in conv.shapes(dt, quick):
            steps.append(("conv", f"conv {dt} {b}x{cin}x{size}x{size} {k}x{k}→{cout}",
                          lambda dt=dt, a=(b, cin, size, cout, k):
                          conv.measure(dt, *a, budget, device) if gate.allows(dt, conv.flops(*a)) else None))
        for b, c, size, k, per_group in conv.grouped_shapes(dt, quick):
            steps.append(("conv", f"conv {dt} {b}x{c}x{size}x{size} {k}x{k}→{c} groups {c // per_group}",
                          lambda dt=dt, a=(b, c, size, c, k), g=c // per_group: conv.measure(dt, *a, budget, device, g)))
    pool = pool or cold_pool(device)              # one buffer for every cold row
    for dt in dtypes:
        for b, h, sq, skv, d, causal in attention.shapes(dt, quick):
            steps.append(("attention", f"attention {dt} {b}x{h} {sq}→{skv}" + (" causal" if causal else ""),
                          lambda dt=dt, a=(b, h, sq, skv, d, causal): attention.measure(dt, *a, budget, device, pool)))
    for dt in dtypes:
        for m, n, k, lay in gemm.cold_shapes(dt, quick):
            steps.append(("gemm", f"gemm {dt} {m}x{n}x{k} cold" + (" x@W" if lay == "kn" else ""),
                          lambda dt=dt, m=m, n=n, k=k, lay=lay: gate.measure_cold(dt, m, n, k, pool, budget, device, lay)))
    if device == "cpu":
        for level, sizes in memory.levels(threads, quick).items():
            for nb in sizes:
                steps.append(("memory", f"memory {level} {nb / 2**20:.1f} MiB",
                              lambda level=level, nb=nb: memory.measure(level, nb, budget, device)))
    else:
        for level, sizes in gpu_levels(quick, gpu_runtime()).items():
            for nb in sizes:
                steps.append(("memory", f"memory {level} {nb / 2**20:.1f} MiB",
                              lambda level=level, nb=nb: memory.measure(level, nb, budget, device)))
    if device == "cpu":
        for nb in pages.sizes(quick):
            steps.append(("pages", f"fresh memory {nb >> 20} MiB", lambda nb=nb: pages.measure(nb, budget)))
    for op, n in vector.cases(quick):
        steps.append(("vector", f"{op} {n} elements", lambda op=op, n=n: vector.measure(op, n, budget, device)))
    for name, scale in reduce.cases(quick):
        steps.append(("reduce", f"{name} ×{scale}", lambda name=name, s=scale: reduce.measure(name, s, budget, device)))
    if device == "cuda":
        steps.append(("cuda", "kernel launch", lambda: cuda.launch(budget)))
        for d in ("h2d", "d2h"):
            for nb in cuda.SIZES[: 2 if quick else 3]:
                steps.append(("cuda", f"{d} {nb >> 20} MiB", lambda d=d, nb=nb: cuda.copy(d, nb, budget)))
    return steps


def cold_pool(device: str) -> ColdPool:
    """The pool cold rows rotate through: twice the last cache level (``gemm.cold_pool_bytes``)."""
    from . import gemm, memory
    last_cache = (memory.cpu_caches().get("l3", 0.0) if device == "cpu" else gpu_runtime().last_cache_bytes)
    return ColdPool(gemm.cold_pool_bytes(last_cache), device)


def gpu_runtime():
    """The GPU runtime of device 0 (CUDA or ROCm, ``runtime.detect``)."""
    import torch
    from . import runtime
    return runtime.detect(torch)


def _cuda_props():
    import torch
    return torch.cuda.get_device_properties(0)


HBM_SIZES = (1 << 28, 1 << 29, 1 << 30)


def gpu_levels(quick: bool, rt=None) -> dict[str, list[float]]:
    """Copy working sets per GPU memory level: the L2; on ROCm the Infinity Cache of the catalog GPU, and device
    memory from four times it up (an MI300X's 256 MB Infinity Cache would hold the 256 MiB set CUDA starts at)."""
    props = _cuda_props()
    l2 = float(getattr(props, "L2_cache_size", 0) or 0)
    fracs = (0.2, 0.4) if quick else (0.15, 0.25, 0.35, 0.45)
    out = {}
    if l2:
        out["l2"] = [l2 * f for f in fracs]
    scale = 1.0
    if rt is not None and rt.platform == "rocm":
        if rt.catalog and rt.last_cache_bytes > l2:
            out["infinity-cache"] = [rt.last_cache_bytes * f for f in fracs]
        scale = max(1.0, 4.0 * rt.last_cache_bytes / HBM_SIZES[0])
    out["hbm"] = [float(s * scale) for s in HBM_SIZES[: 2 if quick else 3]]
    return out


MAX_ROUNDS = 9
MAX_THREADS = 4096                # a --threads past any machine torch runs on: a typo, refused


def run(quick: bool = False, threads: int | None = None, max_cv: float = 0.15, progress: Progress | None = None,
        device: str | None = None, rounds: int = 1, between: Callable[[int], None] | None = None,
        refuse: bool = True) -> dict:
    """Measure; return the [probe] table. Raises IronlawError when results stay too noisy to save.

    ``rounds`` > 1 runs the whole plan that many times, one round after the other, and keeps per
    measurement the round with the median time: on a shared machine whose speed drifts over minutes, a
    slow stretch in one round then decides nothing. The drift check compares the median sentinels over
    the rounds. ``between(k)`` runs after round k (0-based): other measurements interleaved with the
    rounds see the same stretches of the machine's speed as the probe (benchmarks/accuracy.py measures
    its models there). ``refuse=False`` returns what was measured even when it would be refused, the
    reasons under ``checks['refused']``: for a caller that reports them next to its own measurements."""
    try:
        import torch
    except ImportError:
        raise IronlawError("ironlaw probe needs PyTorch; install it with `pip install torch==2.13.0`") from None
    from . import cuda
    _check_options(max_cv, rounds)
    device = device or ("cuda" if cuda.available() else "cpu")
    have = torch.get_num_threads()
    threads = have if threads is None else threads         # 0 is refused, not read as "the default"
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1 or threads > MAX_THREADS:
        raise IronlawError(f"--threads must be a whole number of threads from 1 to {MAX_THREADS:,}, got {threads}")
    torch.set_num_threads(threads)
    budget = Budget(repeat_s=0.025 if quick else 0.03, repeats=5, max_cv=max_cv,
                    retries=1 if quick else 2)
    t0 = time.perf_counter()
    now = _dt.datetime.now().astimezone()
    pool = cold_pool(device)                      # emptied after each round
    gpu = gpu_runtime() if device == "cuda" else None
    if device == "cuda":
        _spin_up(budget)
    steps = plan(quick, device, threads, budget, pool)
    # the same GEMM and DRAM copy at the start, the end and evenly between: a machine whose load changed
    # during the run (a neighbour that came or went) shows as drift even when every measurement was calm,
    # and predictions on the profile carry the spread of these rates (timerange)
    sentinel = ("sentinel", "drift check", lambda: _sentinel(budget, device, quick))
    steps = with_sentinels(steps, sentinel, SENTINELS[quick])
    total = rounds * len(steps) + (1 if device == "cpu" and threads > 1 else 0)
    measured = _rounds(steps, rounds, pool, threads, progress, between, total)
    done = rounds * len(steps)
    rows: dict[str, list[dict]] = {}
    for (family, _, _), tries in zip(steps, measured):
        tries = [t for t in tries if t is not None]         # None: skipped (a dtype without a fast path)
        if family != "sentinel" and tries:
            rows.setdefault(family, []).append(_median_round(tries))
    sentinels = [[tries[k] for (family, _, _), tries in zip(steps, measured) if family == "sentinel"]
                 for k in range(rounds)]
    checks: dict = {}
    if device == "cpu" and threads > 1:
        if progress:
            progress(done, total, f"1 vs {threads} threads")
        checks = thread_check(threads, budget, quick)
        done += 1
    if progress:
        progress(done, total, "done")
    torch.set_num_threads(have)
    checks = _checked(rows, checks, sentinels, max_cv, rounds, threads, refuse)
    clean = {fam: [{k: v for k, v in r.items() if not k.startswith("_")} for r in rs] for fam, rs in rows.items()}
    for fam in ("gemm", "conv", "memory", "vector", "pages", "attention"):
        for r in clean.get(fam, []):
            r["threads"] = threads
    dev, capacity = _device_memory(torch, device, threads)
    if gpu is not None and any(r["level"] == "infinity-cache" for r in clean.get("memory", [])):
        capacity["infinity-cache"] = gpu.last_cache_bytes
    probe = {"date": now.isoformat(timespec="seconds"), "stamp": now.strftime("%Y%m%d-%H%M%S"),
             "host": socket.gethostname(), "cpu": _cpu_model(), "device": dev, "torch": torch.__version__,
             "threads": threads, "quick": quick, "duration_s": round(time.perf_counter() - t0, 2), "max_cv": max_cv,
             "capacity": capacity, **clean}
    if gpu is not None:
        probe["gpu"] = gpu.to_dict()
    if checks:
        probe["checks"] = checks
    if rounds > 1:
        probe["rounds"] = rounds
    return probe


def with_sentinels(steps: list, sentinel, n: int) -> list:
    """``steps`` with ``sentinel`` at the start, at the end and at ``n`` − 2 evenly spaced points between."""
    cuts = [round(i * len(steps) / (n - 1)) for i in range(n)]
    out = []
    for a, b in zip(cuts, cuts[1:]):
        out += [sentinel] + steps[a:b]
    return out + [sentinel]


def _check_options(max_cv: float, rounds: int) -> None:
    if not 0 < max_cv < 1:
        raise IronlawError(f"--max-cv must be between 0 and 1, got {max_cv}")
    if isinstance(rounds, bool) or not isinstance(rounds, int) or not 1 <= rounds <= MAX_ROUNDS:
        raise IronlawError(f"--rounds must be a whole number from 1 to {MAX_ROUNDS}, got {rounds!r}")


def _rounds(steps: list, rounds: int, pool, threads: int, progress: Progress | None,
            between: Callable[[int], None] | None, total: int) -> list[list[dict]]:
    """Every step's result in every round (one list per step)."""
    import torch
    measured: list[list[dict]] = [[] for _ in steps]
    done = 0
    for k in range(rounds):
        for i, (family, label, thunk) in enumerate(steps):
            if progress:
                progress(done, total, label + (f" (round {k + 1}/{rounds})" if rounds > 1 else ""))
            measured[i].append(thunk())
            done += 1
        pool.release()                            # (its buffer is as large as twice the last cache level)
        if between:
            between(k)
            torch.set_num_threads(threads)
    return measured


def _checked(rows: dict, checks: dict, sentinels: list, max_cv: float, rounds: int, threads: int,
             refuse: bool) -> dict:
    """``checks`` with the drift over the run and the reasons to refuse it (raised when ``refuse``)."""
    refused: list[str] = []

    def refusal(reason: str, advice: str) -> None:
        if refuse:
            raise IronlawError(f"{reason}; nothing saved — {advice}")
        refused.append(reason)
    noisy = [(r["cv"], fam, r) for fam, rs in rows.items() for r in rs if not r["_ok"]]
    if noisy:
        noisy.sort(key=lambda x: -x[0])
        shown = "; ".join(f"{_label(fam, r)} spread {cv:.0%}" for cv, fam, r in noisy[:3])
        refusal(f"probe: {len(noisy)} measurement(s) stayed too noisy after re-measuring (limit {max_cv:.0%}): "
                f"{shown}", "rerun on a quieter machine or raise --max-cv")
    if checks and checks["speedup"] < MIN_SPEEDUP_2_THREADS:
        refusal(f"probe: {threads} threads ran only {checks['speedup']:.2f}× as fast as 1 on an fp32 GEMM "
                f"(expected ≥ {MIN_SPEEDUP_2_THREADS}×, twice): another process is using the cores, or they "
                f"are not independent (SMT siblings, a host that throttles the VM)",
                "rerun when the machine is idle, or pass --threads 1")
    # the same GEMM and copy through the run must agree — with rounds, their medians over the rounds
    # (as every measurement is): a slow stretch in one round is what rounds outvote; it is reported, not refused
    drift = _drift([{key: statistics.median(r[key] for r in position) for key in ("gemm_flops_per_s", "copy_Bps")}
                    for position in zip(*sentinels)])
    if drift["max_change"] >= MAX_DRIFT:
        refusal(f"probe: the machine's load changed during the run ({drift['what']})",
                "rerun when it is steady" + (" or with more --rounds" if rounds > 1 else ""))
    if rounds > 1:
        every = _drift([r for rs in sentinels for r in rs])
        drift["across_rounds"] = every["what"]
        drift["rounds"] = {key: every[key] for key in ("gemm_flops_per_s", "copy_Bps")}
    checks["drift"] = drift
    if refused:
        checks["refused"] = refused
    return checks


def _device_memory(torch, device: str, threads: int) -> tuple[str, dict]:
    """The device's name and the capacity of its memory levels as the OS (or CUDA) reports them."""
    from . import memory
    if device == "cuda":
        dev = torch.cuda.get_device_name(0)
        props = torch.cuda.get_device_properties(0)
        capacity = {"hbm": float(props.total_memory), "host": memory.dram_bytes()}
        if getattr(props, "L2_cache_size", 0):
            capacity["l2"] = float(props.L2_cache_size)
    else:
        dev = _cpu_model()
        caches = memory.cpu_caches()
        capacity = {"dram": memory.dram_bytes(), **({"l2": caches["l2"] * threads} if "l2" in caches else {}),
                    **({"l3": caches["l3"]} if "l3" in caches else {})}
    return dev, capacity


def _median_round(tries: list[dict]) -> dict:
    """The measurement whose time is the median of the rounds' (the lower middle one for an even count),
    as that round measured it (its own spread)."""
    return sorted(tries, key=lambda r: r["time_s"])[(len(tries) - 1) // 2]


def _sentinel(budget: Budget, device: str, quick: bool) -> dict:
    from . import gemm, memory
    # a GPU needs a GEMM of milliseconds and a copy well past its L2 (50–60 MB on Hopper) to time its
    # steady clocks; a CPU's 1024³ fp32 GEMM and 256 MiB copy (8× a 32 MB L3) already take that long
    n = 4096 if device == "cuda" else 512 if quick else 1024
    g = gemm.measure("fp32", n, n, n, budget, device)
    m = memory.measure("sentinel", (1 << 30) if device == "cuda" else 256 * 2**20, budget, device)
    return {"cv": max(g["cv"], m["cv"]), "_ok": g["_ok"] and m["_ok"], "gemm_flops_per_s": g["flops_per_s"],
            "copy_Bps": m["bytes"] / m["time_s"]}


def _spin_up(budget: Budget, seconds: float = 2.0) -> None:
    """Run large GEMMs for ``seconds`` first: an idle GPU clocks down (an H200 idles at 345 MHz against
    1980 MHz under load, nvidia-smi) and would otherwise time its first rows while its clocks ramp."""
    import torch
    a = torch.randn(4096, 4096, device="cuda")
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for _ in range(10):
            a @ a
        torch.cuda.synchronize()


def _drift(rows: list[dict]) -> dict:
    out = {"max_change": 0.0, "what": ""}
    for key, unit, scale in (("gemm_flops_per_s", "GFLOP/s", 1e9), ("copy_Bps", "GB/s", 1e9)):
        vals = [r[key] for r in rows]
        change = max(vals) / min(vals) - 1.0
        out[key] = vals
        if change >= out["max_change"]:
            out["max_change"] = change
            out["what"] = (f"the same {'fp32 GEMM' if key.startswith('gemm') else 'DRAM copy'} ran at "
                           + " → ".join(f"{v / scale:.0f}" for v in vals) + f" {unit} through the run")
    return out


def thread_check(threads: int, budget: Budget, quick: bool) -> dict:
    """fp32 GEMM at 1 thread and at ``threads``: more threads must be clearly faster."""
    import torch
    from . import gemm
    shape = (512, 512, 512) if quick else (1024, 1024, 1024)
    out = {}
    for attempt in range(2):
        torch.set_num_threads(1)
        one = gemm.measure("fp32", *shape, budget)["flops_per_s"]
        torch.set_num_threads(threads)
        many = gemm.measure("fp32", *shape, budget)["flops_per_s"]
        out = {"shape": list(shape), "one_thread_flops_per_s": one, "threads_flops_per_s": many, "speedup": many / one}
        if out["speedup"] >= MIN_SPEEDUP_2_THREADS:
            break
    return out


def _label(fam: str, r: dict) -> str:
    if fam == "gemm":
        cold = r.get("weights") == "cold"
        return (f"gemm {r['dtype']} {r['m']}x{r['n']}x{r['k']}" + (" cold" if cold else "")
                + (" x@W" if cold and r.get("layout") == "kn" else "") + (" x@Wᵀ" if not cold and r.get("layout") == "nt" else ""))
    if fam == "conv":
        return (f"conv {r['dtype']} {r['batch']}x{r['cin']}x{r['size']}x{r['size']} {r['kernel']}x{r['kernel']}→{r['cout']}"
                + (f" groups {r['groups']}" if r.get("groups", 1) > 1 else ""))
    if fam == "memory":
        return f"{r['level']} copy of {r['bytes'] / 2**20:.1f} MiB"
    if fam == "pages":
        return f"fresh memory {r['bytes'] / 2**20:.0f} MiB"
    if fam == "attention":
        return f"attention {r['dtype']} {r['batch']}x{r['heads']} {r['q_len']}→{r['kv_len']}" + (" causal" if r["causal"] else "")
    return f"{fam} {r.get('op') or r.get('what')}"
