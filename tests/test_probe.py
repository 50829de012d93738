"""probe: profiles built from measured rows, where they are saved, refusing noise and nonsense, Ctrl-C.

Most tests feed synthetic rows generated from known bandwidths and rates (so the fits must give
those numbers back); a few run real (small) measurements with torch.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ironlaw.machine import hardware, profile
from ironlaw.core.errors import IronlawError
from ironlaw.measure.calibrate import build
from ironlaw.measure.probe import memory, timing

MB = 1e6
PEAKS = {"fp32": 180e9, "bf16": 380e9, "fp16": 3e9}
BWS = {"l2": 300e9, "l3": 160e9, "dram": 33e9}


def fake_probe(threads: int = 2) -> dict:
    gemm = []
    for dt, peak in PEAKS.items():
        for m, n, k in ((1, 4096, 4096), (64, 1024, 1024), (256, 256, 256), (1024, 1024, 1024), (128, 128, 128)):
            eta = m / (m + 4) * n / (n + 60) * k / (k + 60)
            b = {"fp32": 4, "bf16": 2, "fp16": 2}[dt]
            # the slower of compute and the operands' traffic, plus a fixed 2 µs: the same operands every
            # call stay in L3 when they fit in half of it (as the law places them), else weights stream from DRAM
            hot = (m * k + m * n + k * n) * b <= 0.5 * 32 * 2**20
            traffic = (m * k + m * n + k * n) * b / BWS["l3"] if hot else k * n * b / BWS["dram"]
            t = max(2.0 * m * n * k / (peak * eta), traffic) + 2e-6
            gemm.append({"dtype": dt, "m": m, "n": n, "k": k, "time_s": t, "cv": 0.03,
                         "flops_per_s": 2.0 * m * n * k / t, "threads": threads})
    sizes = {"l2": (0.3, 0.5, 0.7, 1.0), "l3": (4, 8, 12, 16), "dram": (128, 256, 512)}
    mem = [{"level": lv, "bytes": s * MB, "time_s": 2.1e-6 + s * MB / BWS[lv], "cv": 0.02, "threads": threads}
           for lv, ss in sizes.items() for s in ss]
    vec = [{"op": op, "elems": n, "dtype": "fp32", "time_s": t, "cv": 0.05, "elems_per_s": n / t,
            "flops_per_elem": f, "threads": threads}
           for op, f, rate in (("add", 1.0, 4e9), ("tanh", 1.0, 0.9e9), ("gelu", 5.0, 1.5e9))
           for n in (1 << 16, 1 << 22) for t in (2e-6 + n / rate,)]
    red = [{"op": op, "kind": kind, "elems": n, "dtype": "fp32", "time_s": 3e-6 + n / rate, "cv": 0.04,
            "flops_per_elem": f, "bytes": 8.0 * n}
           for op, kind, f, rate in (("softmax", "softmax", 5.0, 1e9), ("layer_norm", "norm", 8.0, 1.5e9),
                                     ("max_pool2d", "pool", 2.25, 0.3e9))
           for n in (1 << 18, 1 << 21)]
    disp = [{"op": op, "time_s": t, "cv": 0.05} for op, t in (("add", 2e-6), ("mul_", 2.2e-6), ("linear", 3.8e-6),
                                                               ("relu", 1.9e-6))]
    return {"date": "2026-12-02T10:00:00+00:00", "stamp": "20261202-100000", "host": "testhost", "cpu": "Test CPU",
            "device": "Test CPU", "torch": "2.13.0+cpu", "threads": threads, "quick": False, "duration_s": 42.0,
            "max_cv": 0.15, "capacity": {"l2": 2 * 2**20, "l3": 32 * 2**20, "dram": 24 * 2**30}, "gemm": gemm, "memory": mem, "vector": vec, "reduce": red, "dispatch": disp,
            "checks": {"shape": [1024, 1024, 1024], "one_thread_flops_per_s": 95e9, "threads_flops_per_s": 180e9,
                       "speedup": 1.89}}


@pytest.fixture(scope="module")
def doc():
    return build.profile(fake_probe())


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("IRONLAW_HOME", str(tmp_path))
    return tmp_path / "profiles"


def test_profile_numbers_come_back_from_the_rows(doc, home):
    path = profile.save(doc)
    assert path.parent == home and path.suffix == ".toml"
    hw = hardware.get("local")
    assert hw.name == "local" and hw.kind == "cpu"
    for t in hw.memory:                                   # the t = overhead + bytes/BW fit gives BW back
        assert t.bw_Bps == pytest.approx(BWS[t.name], rel=1e-6)
    assert hw.peak("fp32") == pytest.approx(max(r["flops_per_s"] for r in doc["probe"]["gemm"] if r["dtype"] == "fp32"))
    assert hw.op_latency_s == pytest.approx(2.1e-6)      # median of the four tiny ops
    for key, src in hw.sources.items():
        assert src.startswith("measured by probe on 2026-12-02T10:00:00+00:00 (testhost, torch 2.13.0+cpu, 2 threads)"), key
    assert hw.calibration.table()["source"].startswith("measured by probe on")


def fake_gpu_probe() -> dict:
    """A GPU probe: fp32 on CUDA cores is slow next to bf16 (a narrower dtype) yet has no 'fast path' flag."""
    p = fake_probe(threads=1)
    for r in p["gemm"]:
        scale = {"fp32": 60e12 / 180e9, "bf16": 700e12 / 380e9, "fp16": 700e12 / 3e9}[r["dtype"]]
        r["time_s"] /= scale
        r["flops_per_s"] *= scale
    bws = {"l2": 10e12, "hbm": 4e12}
    p["memory"] = [{"level": lv, "bytes": s, "time_s": 5e-6 + s / bws[lv], "cv": 0.01}
                   for lv, ss in (("l2", (8e6, 16e6, 24e6)), ("hbm", (256e6, 512e6, 1e9))) for s in ss]
    p["capacity"] = {"l2": 50e6, "hbm": 141e9, "host": 128 * 2**30}
    p["cuda"] = [{"what": "launch", "bytes": 4.0, "time_s": 2.5e-6, "cv": 0.02}] + \
        [{"what": d, "bytes": b, "time_s": 10e-6 + b / 50e9, "cv": 0.02} for d in ("h2d", "d2h") for b in (4e6, 16e6, 64e6)]
    return p


def test_gpu_rows_make_a_gpu_profile_with_a_host_link():
    doc = build.profile(fake_gpu_probe())
    hw = hardware.parse_hardware(doc, "gpu-profile")
    assert hw.kind == "gpu" and [t.name for t in hw.memory] == ["l2", "hbm"]   # host RAM < HBM: no host tier
    assert hw.link("pcie").bw_Bps == pytest.approx(50e9) and hw.link("pcie").latency_s == pytest.approx(10e-6)
    assert not any("NO FAST PATH" in v["source"] for v in doc["compute"].values())
    assert "kernel launch alone 2.5 µs" in doc["latency"]["source"]


def test_a_dtype_without_fast_path_is_kept_and_flagged(doc):
    fp16 = doc["compute"]["fp16"]
    assert fp16["peak_flops"] < 3e9 and fp16["peak_flops"] > 1e9   # its own measured rate, not bf16's
    assert "NO FAST PATH" in fp16["source"]
    assert "NO FAST PATH" not in doc["compute"]["bf16"]["source"]


def test_calibrated_profile_predicts_the_rows_it_was_fitted_on(doc):
    from ironlaw.measure.calibrate import calibrate
    hw = hardware.parse_hardware(doc, "p")
    rep = calibrate.report(hw, build.observations(doc["probe"]))
    assert rep["probe:gemm"]["median_abs_err"] < 0.05
    assert rep["probe:memory"]["median_abs_err"] < 0.05


def test_newest_profile_and_none_yet(doc, home):
    with pytest.raises(IronlawError, match=r"no profile yet; run `ironlaw probe`"):
        profile.newest()
    with pytest.raises(IronlawError, match="no profile yet"):
        hardware.get("local")
    a = profile.save(doc, home / "a.toml")
    time.sleep(0.01)
    b = profile.save(doc, home / "b.toml")
    os.utime(a, (time.time() - 100, time.time() - 100))
    assert profile.newest() == b
    (home / ".tmp-c.toml.123").write_text("half")                 # a stray temporary file is never 'newest'
    assert profile.newest() == b


@pytest.mark.parametrize("old, new, field", [
    ('threads = 2\n', 'threads = "two"\n', "probe.threads"),
    ('threads = 2\n', 'threads = 0\n', "probe.threads"),
    ('cv = 0.03\n', 'cv = 50.0\n', "probe.gemm[0].cv"),
    ('[[probe.gemm]]\ndtype = "fp32"', '[[probe.gemm]]\ndtype = "fp32"\ncolour = "red"', "probe.gemm[0]"),
    ('host = "testhost"\n', '', "'host'"),
    ('[[probe.memory]]\nlevel = "l2"\nbytes = 300000.0', '[[probe.memory]]\nlevel = "l2"\nbytes = -1.0',
     "probe.memory[0].bytes"),
    ('[[probe.gemm]]', '[[probe.gemms]]', "gemms"),
])
def test_hand_edited_nonsense_profile_is_refused_naming_the_field(doc, tmp_path, old, new, field):
    p = profile.save(doc, tmp_path / "p.toml")
    text = p.read_text()
    assert old in text
    p.write_text(text.replace(old, new, 1))
    with pytest.raises(IronlawError) as e:
        hardware.get(str(p))
    assert field in str(e.value)


def test_tier_edited_into_nonsense_is_refused(doc, tmp_path):
    p = profile.save(doc, tmp_path / "p.toml")
    text = p.read_text()
    i = text.index('name = "dram"')
    j = text.index("bw_Bps = ", i)
    k = text.index("\n", j)
    p.write_text(text[:j] + 'bw_Bps = "fast"' + text[k:])
    with pytest.raises(IronlawError, match=r"memory\[2\]\.bw_Bps"):
        hardware.get(str(p))


def test_interrupt_while_writing_leaves_nothing(tmp_path, monkeypatch):
    target = tmp_path / "prof.toml"

    def boom(src, dst):
        raise KeyboardInterrupt
    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(KeyboardInterrupt):
        profile.write_atomic(target, "x = 1\n")
    assert list(tmp_path.iterdir()) == []


def test_save_refuses_what_would_not_load(doc, tmp_path):
    bad = json.loads(json.dumps(doc))
    bad["memory"][2]["bw_Bps"] = 1e15                     # DRAM faster than the caches above it
    with pytest.raises(IronlawError, match="faster"):
        profile.save(bad, tmp_path / "bad.toml")
    assert list(tmp_path.iterdir()) == []


def test_bandwidth_fit_separates_overhead_from_bandwidth():
    rows = [{"level": "x", "bytes": b, "time_s": 3e-6 + b / 25e9} for b in (1e6, 4e6, 9e6)]
    bw, overhead = memory.fit(rows)
    assert bw == pytest.approx(25e9) and overhead == pytest.approx(3e-6)
    with pytest.raises(IronlawError, match="did not grow") as e:
        memory.fit([{"level": "x", "bytes": 1e6, "time_s": 2e-3}, {"level": "x", "bytes": 2e6, "time_s": 1e-3}])
    # what it measured and what may help on a shared machine (a 2-vCPU VM failed so twice in a row: "run again")
    assert "(977 KiB in 2 ms, 1.91 MiB in 1 ms)" in str(e.value) and "--rounds 3" in str(e.value)


def test_noisy_measurement_is_remeasured_then_flagged(monkeypatch):
    import types
    clock = [0.0]
    monkeypatch.setattr(timing, "time", types.SimpleNamespace(perf_counter=lambda: clock[0]))
    n = {"calls": 0}

    def jumpy():                               # every other call is 4× slower: a lost core
        n["calls"] += 1
        clock[0] += 0.004 if n["calls"] % 2 else 0.001
    st = timing.stable(jumpy, timing.Budget(repeat_s=0.0, repeats=4, max_cv=0.05, retries=2))
    assert st.tries == 3 and not st.ok and st.cv > 0.05

    def calm():
        clock[0] += 0.002
    st = timing.stable(calm, timing.Budget(repeat_s=0.0, repeats=3, max_cv=0.05, retries=2))
    assert st.ok and st.tries == 1 and st.time_s == pytest.approx(0.002) and st.cv == pytest.approx(0.0)

    one_outlier = [0.010, 0.010, 0.011, 0.010, 0.050]      # one repeat descheduled: median and spread hold
    assert timing.spread(one_outlier) < 0.1


def test_run_refuses_to_save_noise_and_a_lost_core(monkeypatch):
    pytest.importorskip("torch")
    import ironlaw.measure.probe as probe_mod
    row = {"dtype": "fp32", "m": 512, "n": 512, "k": 512, "time_s": 1e-3, "cv": 0.4, "flops_per_s": 2.7e11,
           "_ok": False, "_tries": 3}
    monkeypatch.setattr(probe_mod, "plan", lambda *a: [("gemm", "gemm", lambda: dict(row))])
    steady = {"cv": 0.01, "_ok": True, "gemm_flops_per_s": 1.6e11, "copy_Bps": 3.2e10}
    monkeypatch.setattr(probe_mod, "_sentinel", lambda *a: dict(steady))
    with pytest.raises(IronlawError, match=r"too noisy.*gemm fp32 512x512x512 spread 40%.*nothing saved"):
        probe_mod.run(quick=True, threads=2)
    row["_ok"], row["cv"] = True, 0.02
    monkeypatch.setattr(probe_mod, "thread_check", lambda *a: {"speedup": 1.02})
    with pytest.raises(IronlawError, match=r"2 threads ran only 1\.02× as fast as 1.*--threads 1"):
        probe_mod.run(quick=True, threads=2)
    # a neighbour that arrives late in the run: every measurement calm, but the sentinel GEMM drops to a third (a
    # quick probe times its sentinels at start, middle and end)
    rates = iter([1.6e11, 1.6e11, 0.5e11])
    monkeypatch.setattr(probe_mod, "_sentinel", lambda *a: dict(steady, gemm_flops_per_s=next(rates)))
    with pytest.raises(IronlawError, match=r"load changed during the run.*fp32 GEMM ran at 160 → 160 → 50 GFLOP/s "
                                           r"through the run"):
        probe_mod.run(quick=True, threads=1)
    # a shared VM's GEMM rate halving mid-run is saved, its drift kept for every prediction's range (timerange)
    rates = iter([1.6e11, 1.6e11, 0.8e11])
    assert probe_mod.run(quick=True, threads=1)["checks"]["drift"]["max_change"] == pytest.approx(1.0)
    monkeypatch.setattr(probe_mod, "_sentinel", lambda *a: dict(steady))
    out = probe_mod.run(quick=True, threads=1)
    assert out["checks"]["drift"]["max_change"] == 0.0 and out["gemm"][0]["m"] == 512


def test_between_runs_after_each_round_and_refusals_can_be_kept(monkeypatch):
    """benchmarks/accuracy.py --interleave: ``between(k)`` runs after round k, before the next round's rows;
    with ``refuse=False`` a probe that would be refused comes back with the reasons under checks.refused."""
    pytest.importorskip("torch")
    import ironlaw.measure.probe as probe_mod
    log = []
    row = {"dtype": "fp32", "m": 512, "n": 512, "k": 512, "time_s": 1e-3, "cv": 0.4, "flops_per_s": 2.7e11,
           "_ok": False, "_tries": 3}
    monkeypatch.setattr(probe_mod, "plan", lambda *a: [("gemm", "gemm", lambda: log.append("row") or dict(row))])
    rates = iter([1.6e11, 1.6e11, 0.5e11] * 2)
    monkeypatch.setattr(probe_mod, "_sentinel", lambda *a: {"cv": 0.01, "_ok": True, "gemm_flops_per_s": next(rates),
                                                            "copy_Bps": 3.2e10})
    out = probe_mod.run(quick=True, threads=1, rounds=2, between=lambda k: log.append(f"between {k}"), refuse=False)
    assert log == ["row", "between 0", "row", "between 1"]
    refused = out["checks"]["refused"]
    assert len(refused) == 2 and "too noisy" in refused[0] and "load changed" in refused[1]
    assert not any("nothing saved" in r for r in refused) and out["gemm"][0]["cv"] == 0.4
    rates = iter([1.6e11, 1.6e11, 0.5e11])
    with pytest.raises(IronlawError, match="too noisy"):                 # the default still refuses
        probe_mod.run(quick=True, threads=1)


def test_rounds_keep_each_measurements_median_round(monkeypatch):
    """--rounds 3 on a machine that is slow in round 2: every measurement keeps its median round (round 1's or
    3's), the slow stretch between rounds is reported, not refused, and a jump inside one round still is."""
    pytest.importorskip("torch")
    import ironlaw.measure.probe as probe_mod
    k = {"round": 0, "calls": 0}
    slow = {1: 2.0}                                     # round index (0-based) -> how much slower

    def gemm_row():
        k["calls"] += 1
        t = 1e-3 * slow.get(k["round"], 1.0) * (1.0 + 0.01 * k["round"])
        return {"dtype": "fp32", "m": 512, "n": 512, "k": 512, "time_s": t, "cv": 0.02,
                "flops_per_s": 2 * 512 ** 3 / t, "_ok": True, "_tries": 1}

    sentinel_calls = {"n": 0}

    def sentinel(*a):
        r = k["round"]
        sentinel_calls["n"] += 1
        if sentinel_calls["n"] % 3 == 0:
            k["round"] += 1                               # the third sentinel closes a quick probe's round
        return {"cv": 0.01, "_ok": True, "gemm_flops_per_s": 1.6e11 / slow.get(r, 1.0), "copy_Bps": 3.2e10}
    monkeypatch.setattr(probe_mod, "plan", lambda *a: [("gemm", "gemm a", gemm_row), ("gemm", "gemm b", gemm_row)])
    monkeypatch.setattr(probe_mod, "_sentinel", sentinel)
    out = probe_mod.run(quick=True, threads=1, rounds=3)
    assert out["rounds"] == 3 and k["calls"] == 6 and len(out["gemm"]) == 2
    # rounds measured 1.00, 2.02, 1.02 ms: the median round is the third (1.02 ms), not the slow one
    assert [r["time_s"] for r in out["gemm"]] == [pytest.approx(1.02e-3)] * 2
    assert out["checks"]["drift"]["max_change"] == 0.0
    assert "160 → 160 → 160 → 80 → 80 → 80 → 160" in out["checks"]["drift"]["across_rounds"]
    # every round's sentinels are kept: a prediction's range spans the slow round too (timerange)
    assert out["checks"]["drift"]["rounds"]["gemm_flops_per_s"] == [1.6e11] * 3 + [0.8e11] * 3 + [1.6e11] * 3
    with pytest.raises(IronlawError, match="--rounds must be a whole number from 1 to 9"):
        probe_mod.run(quick=True, threads=1, rounds=0)


def test_cli_json_is_quiet_and_saves(monkeypatch, home, capsys):
    pytest.importorskip("torch")
    import ironlaw.measure.probe as probe_mod
    from ironlaw.cli import main
    monkeypatch.setattr(probe_mod, "run", lambda **kw: fake_probe())
    with pytest.raises(SystemExit) as e:
        main(["probe", "--quick", "--no-references", "--format", "json"]) or sys.exit(0)
    assert e.value.code in (0, None)
    out = json.loads(capsys.readouterr().out)                # stdout is one JSON document: no progress bar
    assert Path(out["path"]).exists() and Path(out["path"]).parent == home
    assert out["profile"]["compute"]["fp16"]["source"].count("NO FAST PATH") == 1


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT semantics")
def test_ctrl_c_during_probe_leaves_no_file(tmp_path):
    pytest.importorskip("torch")
    out = tmp_path / "out" / "profile.toml"
    env = {**os.environ, "IRONLAW_HOME": str(tmp_path / "home")}
    # a shell's background jobs inherit SIGINT ignored; a terminal's Ctrl-C is not: restore Python's handler
    code = ("import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
            "from ironlaw.cli import main; main(sys.argv[1:])")
    proc = subprocess.Popen([sys.executable, "-c", code, "probe", "--out", str(out)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(4.0)                                  # past the torch import, inside the measurements
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert not out.exists()
    assert not (tmp_path / "home" / "profiles").exists() or not any((tmp_path / "home" / "profiles").iterdir())
    assert not out.parent.exists() or not any(out.parent.iterdir())


def _cpu_flags() -> set[str]:
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def test_a_narrow_dtype_slower_than_fp32_has_no_fast_path():
    """fp16 at 0.8× the fp32 rate is above 10% of bf16 yet runs no unit of its own (a 2-vCPU Zen 4 VM:
    fp16 342 GFLOP/s, fp32 439, bf16 2,535)."""
    p = fake_probe()
    for r in p["gemm"]:
        if r["dtype"] == "fp16":
            r["time_s"] /= 0.8 * PEAKS["fp32"] / PEAKS["fp16"]
            r["flops_per_s"] = 2.0 * r["m"] * r["n"] * r["k"] / r["time_s"]
    doc = build.profile(p, calibrate_fit=False)
    assert "NO FAST PATH: slower than fp32" in doc["compute"]["fp16"]["source"]
    assert "NO FAST PATH" not in doc["compute"]["bf16"]["source"]


@pytest.mark.skipif(not {"avx512_bf16"} <= _cpu_flags() or "avx512_fp16" in _cpu_flags() or "amx_fp16" in _cpu_flags(),
                    reason="needs a CPU with a bf16 fast path and no fp16 one (like AMD Zen 4)")
def test_a_convolution_faster_than_every_gemm_sets_the_peak():
    """A framework's conv library may outrun its GEMM library (oneDNN vs MKL on a 2-vCPU AMD EPYC VM: 373 vs
    183 GFLOP/s fp32): the peak is the fastest kernel measured and says which; a slower conv changes nothing.
    The conv rows are calibration observations too, marked cache-resident when their operands fit."""
    p = fake_probe()
    gemm_peak = max(r["flops_per_s"] for r in p["gemm"] if r["dtype"] == "fp32")
    conv = {"dtype": "fp32", "batch": 2, "cin": 64, "size": 56, "cout": 64, "kernel": 3, "cv": 0.02, "threads": 2}
    f = 2.0 * 2 * 56 * 56 * 64 * 64 * 9
    p["conv"] = [dict(conv, time_s=f / (2.0 * gemm_peak), flops_per_s=2.0 * gemm_peak)]
    peaks = build.compute_peaks(p)
    assert peaks["fp32"]["peak_flops"] == pytest.approx(2.0 * gemm_peak)
    assert "convolution" in peaks["fp32"]["source"] and "50% of it" in peaks["fp32"]["source"]
    assert peaks["bf16"]["peak_flops"] == max(r["flops_per_s"] for r in p["gemm"] if r["dtype"] == "bf16")  # no conv
    hw = hardware.parse_hardware(build.profile(p), "probe")
    assert hw.efficiency["matmul"] < 0.55                     # the GEMM grid now sits below half the peak
    obs = [o for o in build.observations(p) if o.dataset == "probe:conv"]
    assert len(obs) == 1 and obs[0].op.kind == "conv" and obs[0].op.flops == pytest.approx(f)
    assert obs[0].op.attrs.get("resident") and obs[0].op.bytes["weights"] == 64 * 64 * 9 * 4
    p["conv"] = [dict(conv, time_s=f / (0.5 * gemm_peak), flops_per_s=0.5 * gemm_peak)]
    assert build.compute_peaks(p)["fp32"]["peak_flops"] == pytest.approx(gemm_peak)
    bad = build.profile(p)
    del bad["probe"]["conv"][0]["kernel"]
    with pytest.raises(IronlawError, match="conv.*kernel"):
        profile.check_probe(bad["probe"], "probe")


def test_an_fp32_conv_is_timed_in_fp32_not_tf32(monkeypatch):
    """cuDNN runs fp32 convs on TF32 tensor cores by default (torch.mm does not): the probe turns that off
    while it times a conv, so an fp32 peak is never a TF32 one, and puts the setting back."""
    torch = pytest.importorskip("torch")
    from ironlaw.measure.probe import conv
    seen = []

    def fake_stable(fn, budget, device):
        seen.append(torch.backends.cudnn.allow_tf32)
        return timing.Stat(time_s=1e-3, cv=0.01, repeats=5)
    monkeypatch.setattr(conv, "stable", fake_stable)
    monkeypatch.setattr(torch.backends.cudnn, "allow_tf32", True)
    row = conv.measure("fp32", 1, 8, 8, 8, 3, timing.Budget())
    assert seen == [False] and torch.backends.cudnn.allow_tf32 is True
    assert row["flops_per_s"] == pytest.approx(2.0 * 1 * 8 * 8 * 8 * 8 * 9 / 1e-3)


def test_fp16_gemm_has_no_fast_path_on_this_cpu():
    """On a CPU with bf16 instructions (AVX512-BF16 or AMX-BF16) and none for fp16 (no AVX512-FP16, AMX-FP16),
    an fp16 GEMM runs far slower than a bf16 one: the trap the probe must record per dtype. Best of several
    runs (a shared machine slows every kernel; the best run shows what it can do)."""
    torch = pytest.importorskip("torch")
    flags = _cpu_flags()
    if not flags & {"avx512_bf16", "amx_bf16"} or flags & {"avx512_fp16", "amx_fp16"}:
        pytest.skip("needs a CPU with bf16 and without fp16 matrix instructions (this one: "
                    f"{', '.join(sorted(f for f in flags if 'bf16' in f or 'fp16' in f)) or 'neither'})")

    def best_rate(dt, n: int) -> float:
        a, b = torch.randn(n, n).to(dt), torch.randn(n, n).to(dt)
        torch.mm(a, b)
        best = float("inf")
        for _ in range(5):
            t0 = time.perf_counter()
            torch.mm(a, b)
            best = min(best, time.perf_counter() - t0)
        return 2.0 * n ** 3 / best
    assert best_rate(torch.float16, 256) < 0.25 * best_rate(torch.bfloat16, 512)


def test_validate_measurements_can_be_fed_into_the_calibration(doc, tmp_path):
    """recalibrate: probe rows + per-op measurements of a real run -> a refit [calibration] in place."""
    from ironlaw.measure.calibrate import fit
    from ironlaw.measure.calibrate.fitcore import Observation
    from ironlaw.core.graph import Op
    p = profile.save(doc, tmp_path / "p.toml")
    # a conv the probe never measured: 20 GFLOP at half the fp32 peak (+ 3 µs)
    peak = hardware.load_file(p).peak("fp32")
    runs = [Observation(Op(f"conv{i}", "conv", flops=f, bytes={"activations": 1e6, "weights": 1e5}, dtype="fp32"),
                        f / (0.5 * peak) + 3e-6, "validate:resnet18 b1") for i, f in enumerate((1e8, 1e9, 5e9, 2e10))]
    cal = fit.recalibrate(p, runs, source="measured by probe on 2026-12-02 and validate resnet18 (test)",
                          held_out=["validate:gpt2 b1"])
    assert cal["compute"]["conv"] == pytest.approx(0.5, rel=0.05)
    assert "validate:resnet18 b1" in cal["fitted"] and cal["held_out"] == ["validate:gpt2 b1"]
    hw = hardware.load_file(p)                                  # rewritten in place, still a valid profile
    assert hw.calibration.table()["compute"]["conv"] == cal["compute"]["conv"]
    assert hw.extra["probe"]["host"] == "testhost"
    assert [f.name for f in tmp_path.iterdir()] == ["p.toml"]


def test_a_cache_level_no_faster_than_the_next_is_merged_and_said():
    p = fake_probe()
    for r in p["memory"]:
        if r["level"] == "l2":
            r["time_s"] = 2.1e-6 + r["bytes"] / 120e9          # slower than l3 (160 GB/s)
    doc = build.profile(p)
    assert [t["name"] for t in doc["memory"]] == ["l3", "dram"]
    assert "l2 copies measured no faster (120 GB/s)" in doc["memory"][0]["source"]
    assert doc["probe"]["fits"]["l2"]["not_listed"] == "no faster than l3"
    p["memory"] = [dict(r, time_s=r["time_s"] / 20) if r["level"] == "dram" else r for r in p["memory"]]
    with pytest.raises(IronlawError, match="dram measured faster than l3"):
        build.profile(p)


def test_a_noisy_probe_names_both_bandwidths_as_measured():
    """'dram measured faster than l3 (4 vs 0 GB/s)': an l3 copy of a few hundred MB/s printed as 0."""
    p = fake_probe()
    for r in p["memory"]:
        if r["level"] == "l3":
            r["time_s"] = r["bytes"] / 0.4e9
    with pytest.raises(IronlawError, match=r"\(\d[\d.]* GB/s vs 400 MB/s\)"):
        build.profile(p)


def test_attention_rows_read_their_inputs_cold_and_are_priced_from_memory():
    """With a pool (as `ironlaw probe` runs it) each call takes the next copy of its inputs from one shared buffer —
    a prefill row Q, K and V, a decode row its K and V — and the row says so ("inputs": "cold"); the fit then
    prices it from device memory, not as cache-resident. A hand-edited "inputs" other than "cold" is refused."""
    torch = pytest.importorskip("torch")
    from ironlaw.measure.probe import attention
    from ironlaw.measure.probe.pool import ColdPool
    budget = timing.Budget(repeat_s=0.002, repeats=3, retries=0)
    pool = ColdPool(4 * 2**20)
    shapes = [(1, 4, 64, 32), (1, 4, 96, 32), (1, 4, 96, 32)]
    copies = pool.copies(shapes, torch.float32)
    assert len(copies) == 4 * 2**20 // (4 * 32 * (64 + 2 * 96) * 4)
    assert all([tuple(t.shape) for t in c] == shapes and all(t.is_contiguous() for t in c) for c in copies)
    ptrs = [t.data_ptr() for c in copies for t in c]
    assert len(set(ptrs)) == len(ptrs) and pool._buf.data_ptr() <= min(ptrs)      # all distinct, in one buffer
    dec = attention.measure("fp32", 2, 4, 1, 96, 32, False, budget, pool=pool)
    pre = attention.measure("fp32", 1, 4, 64, 64, 32, True, budget, pool=pool)
    hot = attention.measure("fp32", 2, 4, 1, 96, 32, False, budget)
    assert dec["inputs"] == pre["inputs"] == "cold" and "inputs" not in hot
    assert dec["kv_bytes"] == hot["kv_bytes"] and dec["flops"] == hot["flops"]          # what ran is the same
    rows = [{k: v for k, v in r.items() if not k.startswith("_")} for r in (dec, pre, hot)]
    obs = build.observations({"attention": rows, "capacity": {"l3": 32 * 2**20}})
    assert [o.op.attrs.get("resident") for o in obs] == [None, None, True]
    probe = {"date": "2026-12-04", "host": "h", "torch": "2.13.0", "threads": 2, "attention": rows}
    profile.check_probe(probe, "probe")
    with pytest.raises(IronlawError, match=r"probe\.attention\[0\]\.inputs: the only value is \"cold\""):
        profile.check_probe({**probe, "attention": [{**rows[0], "inputs": "hot"}]}, "probe")


def test_cold_rows_share_one_pool_and_a_round_hands_it_back():
    """The cold GEMM rows and the attention rows of a probe take their copies from one buffer (allocated once
    per dtype: a pool per GEMM row had cost a fill of twice the last cache level 24 times); a cold GEMM row alone
    still gets one of its own."""
    torch = pytest.importorskip("torch")
    from ironlaw.measure.probe import gemm
    from ironlaw.measure.probe.pool import ColdPool
    budget = timing.Budget(repeat_s=0.002, repeats=3, retries=0)
    pool = ColdPool(2 * 2**20)
    a = gemm.measure_cold("fp32", 1, 256, 128, pool, budget)
    buf = pool._buf
    b = gemm.measure_cold("fp32", 2, 128, 256, pool, budget, layout="kn")
    assert pool._buf is buf and buf.numel() * 4 == 2 * 2**20             # the same buffer, not a new one
    assert a["weights"] == b["weights"] == "cold" and b["layout"] == "kn"
    w = pool.copies([(128, 256)], torch.float32)
    assert len(w) == 2 * 2**20 // (128 * 256 * 4) and len({t.data_ptr() for (t,) in w}) == len(w)
    nxt = pool.cycle([(128, 256)], torch.float32)                        # a call takes each copy once per round
    assert len({nxt()[0].data_ptr() for _ in w}) == len(w) and nxt()[0].data_ptr() == w[0][0].data_ptr()
    pool.copies([(128, 256)], torch.bfloat16)                           # another dtype: its own buffer
    assert pool._buf.dtype == torch.bfloat16
    pool.release()
    assert pool._buf is None
    own = gemm.measure_cold("fp32", 1, 256, 128, 2 * 2**20, budget)     # bytes: a pool of its own
    assert own["time_s"] > 0 and own["weights"] == "cold"


def test_attention_rows_carry_what_the_capture_records():
    """A decode row (one query against a cache) and a causal prefill row: FLOPs from torch's formula (over the
    pairs the kernel computes, as the capture counts a model's attention: all of them for a CPU's 64-token
    causal prefill), K and V of the decode row as KV cache;
    the fit sees them as attention ops, and a hand-edited row is refused by field."""
    pytest.importorskip("torch")
    from torch.utils.flop_counter import sdpa_flop_count
    from ironlaw.measure.probe import attention
    budget = timing.Budget(repeat_s=0.002, repeats=3, retries=0)
    dec = attention.measure("fp32", 2, 4, 1, 96, 32, False, budget)
    pre = attention.measure("fp32", 1, 4, 64, 64, 32, True, budget)
    assert dec["flops"] == pytest.approx(sdpa_flop_count((2, 4, 1, 32), (2, 4, 96, 32), (2, 4, 96, 32)))
    assert dec["kv_bytes"] == 2 * 2 * 4 * 96 * 32 * 4 and dec["act_bytes"] > 0
    full = sdpa_flop_count((1, 4, 64, 32), (1, 4, 64, 32), (1, 4, 64, 32))
    assert pre["flops"] == pytest.approx(full) and "kv_bytes" not in pre
    rows = [{k: v for k, v in r.items() if not k.startswith("_")} for r in (dec, pre)]
    obs = [o for o in build.observations({"attention": rows, "capacity": {"l3": 32 * 2**20}})]
    assert [o.op.kind for o in obs] == ["attention", "attention"]
    assert obs[0].op.bytes == {"activations": dec["act_bytes"], "kv_cache": dec["kv_bytes"]}
    probe = {"date": "2026-12-02", "host": "h", "torch": "2.13.0", "threads": 2, "attention": rows}
    profile.check_probe(probe, "probe")
    with pytest.raises(IronlawError, match=r"probe\.attention\[1\]\.causal: expected bool"):
        profile.check_probe({**probe, "attention": [rows[0], {**rows[1], "causal": "yes"}]}, "probe")


def test_a_dtype_without_a_fast_path_runs_only_its_small_shapes(monkeypatch):
    """bf16 at 1% of fp32's rate (an EPYC without AVX-512: 1.1 against 113 GFLOP/s) skips its shapes above
    256³, which at that rate take seconds each; fp64 at half of fp32's rate runs them all."""
    from ironlaw.measure.probe import gemm
    rates = {"fp32": 113e9, "bf16": 1.1e9, "fp64": 55e9}

    def fake(dtype, m, n, k, budget, device="cpu", layout="kn"):
        return {"dtype": dtype, "m": m, "n": n, "k": k, "flops_per_s": rates[dtype]}
    monkeypatch.setattr(gemm, "measure", fake)
    gate = gemm.FastPathGate()
    ran = {dt: [s for s in gemm.shapes(dt, quick=False) if gate.measure(dt, *s, budget=None) is not None]
           for dt in ("fp32", "bf16", "fp64")}
    assert len(ran["fp32"]) == len(gemm.GRID["fp32"]) and len(ran["fp64"]) == len(gemm.GRID["fp64"])
    assert ran["bf16"] and all(2.0 * m * n * k <= gemm.GATE_MAX_FLOPS for m, n, k in ran["bf16"])
    assert len(ran["bf16"]) < len(gemm.GRID["bf16"])
    assert gate.measure_cold("bf16", 1, 4096, 1024, None, None) is None
    assert gemm.shapes("bf16", quick=True)[0] == (128, 128, 128)      # the gate decides on the smallest first


def test_sentinels_open_close_and_split_the_run_evenly():
    import ironlaw.measure.probe as probe_mod
    steps = list(range(10))
    out = probe_mod.with_sentinels(steps, "s", 6)
    assert [x for x in out if x != "s"] == steps and out[0] == out[-1] == "s" and out.count("s") == 6
    gaps = [len(g) for g in "".join("s" if x == "s" else "x" for x in out).split("s")[1:-1]]
    assert gaps == [2, 2, 2, 2, 2]
    assert probe_mod.with_sentinels([1], "s", 4).count("s") == 4


def _planned(rows: dict, noisy: tuple[str, float, float] | None = None):
    """``probe.plan`` replaced by the rows of ``rows`` (fake_probe's families), each a thunk; ``noisy``
    (level, MB, cv): that memory row stays noisy after re-measuring."""
    steps = []
    for fam in ("dispatch", "gemm", "memory", "vector", "reduce"):
        for r in rows[fam]:
            r = dict(r)
            if noisy and fam == "memory" and r["level"] == noisy[0] and r["bytes"] == noisy[1] * MB:
                r["cv"] = noisy[2]
            steps.append((fam, fam, lambda r=r: dict(r, _ok=r["cv"] <= 0.15, _tries=3)))
    return lambda *a: steps


def _fake_run(monkeypatch, rows, noisy=None, rates=None):
    import ironlaw.measure.probe as probe_mod
    monkeypatch.setattr(probe_mod, "plan", _planned(rows, noisy))
    rates = iter(rates or [1.6e11] * 3)
    monkeypatch.setattr(probe_mod, "_sentinel", lambda *a: {"cv": 0.01, "_ok": True, "gemm_flops_per_s": next(rates),
                                                            "copy_Bps": 3.2e10})
    monkeypatch.setattr(probe_mod, "thread_check", lambda *a: dict(rows["checks"]))
    monkeypatch.setattr(probe_mod, "_device_memory", lambda *a: ("Test CPU", dict(rows["capacity"])))


def test_an_unsteady_probe_is_saved_marked_and_only_strict_refuses(monkeypatch, home, tmp_path, capsys):
    """A shared VM: one DRAM copy stays at 17% spread (limit 15%) and the sentinel GEMM swings 59 → 116 → 202
    GFLOP/s. ``ironlaw probe`` saves the profile marked with what it saw; ``--strict`` refuses and saves nothing."""
    pytest.importorskip("torch")
    from ironlaw.cli import main
    from ironlaw.law.timerange import factors, source, time_range, unsteady
    rows = fake_probe()
    _fake_run(monkeypatch, rows, noisy=("dram", 256, 0.17), rates=[59e9, 116e9, 202e9])
    strict = tmp_path / "strict.toml"
    with pytest.raises(SystemExit) as e:
        main(["probe", "--quick", "--no-references", "--strict", "--out", str(strict)])
    assert e.value.code == 2 and not strict.exists()
    assert "too noisy" in capsys.readouterr().err
    _fake_run(monkeypatch, rows, noisy=("dram", 256, 0.17), rates=[59e9, 116e9, 202e9])
    with pytest.raises(SystemExit) as e:
        main(["probe", "--quick", "--no-references", "--format", "json"]) or sys.exit(0)
    assert e.value.code in (0, None)
    out = json.loads(capsys.readouterr().out)
    assert out["strict"] is False and len(out["unsteady"]) == 2
    from ironlaw.core import schemas
    schemas.validate(out)
    assert "dram copy of 244.1 MiB spread 17%" in out["unsteady"][0] and "59 → 116 → 202 GFLOP/s" in out["unsteady"][1]
    hw = hardware.get(out["path"])
    assert unsteady(hw) == out["unsteady"] and "unsteady: 2 check(s) failed" in hw.title
    # the same rows without the marks: each term's range takes its rows' median spread, not the largest
    steady_doc = json.loads(json.dumps(out["profile"]))
    del steady_doc["probe"]["checks"]["refused"]
    steady = profile_hw(steady_doc, tmp_path)
    assert factors(hw)["tiers"]["dram"][1] == pytest.approx(1.17) and factors(steady)["tiers"]["dram"][1] < 1.05
    from ironlaw.law import law
    from ironlaw.models import workloads
    g = workloads.resolve(workloads.Request("gemv:2048,2048", dtype="fp32"))     # 16 MiB of weights from DRAM
    assert law.predict(g, hw).bottleneck()["tier"] == "dram"
    wide, narrow = time_range(law.predict(g, hw)), time_range(law.predict(g, steady))
    assert wide[0] < narrow[0] and wide[1] > narrow[1]
    assert "unsteady machine" in source(law.predict(g, hw)) and "too noisy" in source(law.predict(g, hw))
    assert "unsteady" not in source(law.predict(g, steady))
    _fake_run(monkeypatch, rows, noisy=("dram", 256, 0.17), rates=[59e9, 116e9, 202e9])
    said = " ".join(run_cli_local(["probe", "--quick", "--no-references"], capsys).split())
    assert "unsteady machine, saved anyway (1 measurement(s) stayed too noisy" in said and "--strict refuses" in said
    r = run_cli_local(["analyze", "gemv:2048,2048", "--dtype", "fp32", "--on", out["path"]], capsys)
    assert "wider: the probe saw an unsteady machine — 1 measurement(s) stayed too noisy" in " ".join(r.split())


def profile_hw(doc: dict, tmp_path):
    p = tmp_path / "steady.toml"
    profile.save(doc, str(p))
    return hardware.get(str(p))


def run_cli_local(argv: list[str], capsys) -> str:
    from ironlaw.cli import main
    with pytest.raises(SystemExit) as e:
        main(argv) or sys.exit(0)
    assert e.value.code in (0, None)
    return capsys.readouterr().out


def test_a_bandwidth_fit_that_fails_on_a_noisy_machine_is_saved_unsteady_without_strict():
    """`ironlaw probe` (no --strict) refused to save anything when a level's copy time did not grow with size,
    though --strict's help says such a probe is otherwise saved marked unsteady. Without strict the level is
    rated by its median rate (bytes / time over the sizes), the reason joins checks.refused (so every prediction
    carries the wider range); strict still refuses, naming what it measured."""
    p = fake_probe()
    l2 = [r for r in p["memory"] if r["level"] == "l2"]
    for r, t in zip(l2, (1.2e-5, 1.1e-5, 1.05e-5, 1.0e-5)):       # 0.3 → 1 MiB, each copy faster than the last
        r["time_s"] = t
    with pytest.raises(IronlawError, match=r"l2 copy time did not grow with size.*nothing saved"):
        build.profile(p, calibrate_fit=False)
    doc = build.profile(p, calibrate_fit=False, strict=False)
    refused = doc["probe"]["checks"]["refused"]
    assert len(refused) == 1 and "l2 copy time did not grow" in refused[0] and "median rate" in refused[0]
    o = doc["probe"]["fits"]["l2"]["overhead_s"]
    assert o == pytest.approx(2.1e-6)                                  # the dispatch latency, below every copy
    rate = sorted(r["bytes"] / (r["time_s"] - o) for r in l2)
    assert doc["probe"]["fits"]["l2"]["bw_Bps"] == pytest.approx((rate[1] + rate[2]) / 2)
    assert "unsteady: 1 check(s) failed" in doc["title"] and "refused" not in p["checks"]     # p itself unchanged
    hw = hardware.parse_hardware(doc, "probe")
    from ironlaw.law import timerange
    assert timerange.unsteady(hw) == refused
    import typer
    from ironlaw.cli import app
    (opt,) = [o for o in typer.main.get_command(app).commands["probe"].params if "--strict" in o.opts]
    assert "copy's time does not grow with its size" in opt.help and "saved marked unsteady" in opt.help
