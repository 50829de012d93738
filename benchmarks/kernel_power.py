"""Board power by binding resource on NVIDIA's measured kernel power: B200's compute_w and memory_w fitted, scored.

    python benchmarks/kernel_power.py --data DIR [--write]

Data: aiconfigurator-core 0.12.0 (NVIDIA, Apache-2.0; PyPI ``aiconfigurator-core==0.12.0``), its
``aiconfigurator_core/systems/data/b200_sxm/attention/vllm/0.22.0/{context,generation}_attention_perf.parquet``:
vLLM's attention kernels on a B200 with the board power NVML read while each kernel's CUDA graph replayed
(collector/helper.py ``benchmark_with_power``; ``power_limit`` 1000 W on every row). ``--data`` names the
``systems/data`` folder. Only the rows whose replays fill a full NVML averaging second are used
(``ironlaw.measure.calibrate.powerfit.meaningful``). Each row is the op the kernel-table scoring builds for it
(``kernelfit.ops.observations``), timed with the vLLM engine file's fitted terms; its busy shares give the power
``ironlaw.law.power`` draws. compute_w and memory_w are fitted on the fit half of each kernel class
(``kernelfit.rows.split``) and the held-out half is scored per table: before (datasheet: tdp_w for every
resource) and after. ``--write`` stores them in src/ironlaw/machine/catalog/b200.toml's [power] with their
provenance; idle_w stays as that file states it. The fused-MoE table (moe/vllm/0.22.0/moe_perf.parquet) also
carries power; it is priced by the MoE layer's own fit (benchmarks/kernel_moe.py), not scored here.
"""
from __future__ import annotations

import argparse
import datetime
import sys
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

FOLDER, GPU, FRAMEWORK, VERSION = "b200_sxm", "b200", "vllm", "0.22.0"
ORIGIN = "aiconfigurator-core 0.12.0 (NVIDIA, Apache-2.0)"


def tables(data: Path) -> list:
    from ironlaw.measure.calibrate import kerneltable
    from ironlaw.measure.calibrate.powerfit import POWER_TABLES
    root = data / FOLDER
    out = []
    for op in POWER_TABLES:
        path = root / "attention" / FRAMEWORK / VERSION / f"{op}_perf.parquet"
        if not path.is_file():
            print(f"kernel_power: {path} not found; --data names aiconfigurator-core 0.12.0's systems/data",
                  file=sys.stderr)
            raise SystemExit(2)
        out += [replace(t, path=str(path.relative_to(data)))
                for t in kerneltable.read(path, ops=(op,), gpu=GPU, framework=FRAMEWORK)]
    return out


def power_block(hw, compute_w: float, memory_w: float, used: dict, scores: list) -> dict:
    """The [power] table with the fitted fields and their provenance."""
    day = datetime.date.today().isoformat()
    held = "; ".join(f"{s.table} {100 * s.median_abs_err:.1f}% / {100 * s.p90_abs_err:.1f}% ({s.rows} rows)"
                     for s in scores)
    what = (f"measured: NVIDIA's NVML board power during CUDA-graph replays (collector/helper.py benchmark_with_power; "
            f"power_limit 1000 W) in {ORIGIN} b200_sxm/attention/vllm/{VERSION} context_attention_perf and "
            f"generation_attention_perf, the rows replaying for a full second ({used['context_attention']} and "
            f"{used['generation_attention']}), fitted by benchmarks/kernel_power.py on the even half of each kernel "
            f"class with the law's busy shares (ironlaw.measure.calibrate.powerfit), {day}; held out, median / p90 "
            f"|error|: {held}")
    return {"tdp_w": round(float(hw.tdp_w)), "source": hw.sources["power"], "idle_w": round(float(hw.idle_w)),
            "idle_source": hw.sources["power.idle"],
            "memory_w": round(float(memory_w)), "memory_source": f"{what}; the board with its HBM streaming flat out",
            "compute_w": round(float(compute_w)), "compute_source": f"{what}; the board with its tensor cores flat out"}


def write_power(path: Path, block: dict) -> None:
    """``path``'s [power] rewritten in place with ``block``, every other line kept."""
    from ironlaw.machine.profile import dumps_table
    from ironlaw.machine.hardware import parse_hardware, toml_loads
    lines = path.read_text(encoding="utf-8").splitlines()
    start = lines.index("[power]")
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("[")), len(lines))
    while end > start + 1 and not lines[end - 1].strip():
        end -= 1
    new = "\n".join(lines[:start] + dumps_table({"power": block}).rstrip("\n").splitlines() + lines[end:]) + "\n"
    parse_hardware(toml_loads(new), str(path))
    path.write_text(new, encoding="utf-8")


def moe_lines(data: Path) -> list[str]:
    """The fused-MoE table's full-second rows, not scored (module docstring): their count, and per weight dtype the
    median power of the balanced rows at 16 tokens or fewer (the experts' weights streaming from HBM) and above."""
    import pandas as pd
    from ironlaw.measure.calibrate.powerfit import meaningful
    path = data / FOLDER / "moe" / FRAMEWORK / VERSION / "moe_perf.parquet"
    if not path.is_file():
        return [f"{path}: not found; the fused-MoE rows are not shown"]
    rows = pd.read_parquet(path)
    rows = rows[meaningful(rows["latency"].to_numpy(float) * 1e-3)]
    out = [f"fused-MoE rows replaying a full second (not scored): {len(rows)}, median {rows['power'].median():.0f} W"]
    bal = rows[rows["distribution"] == "balanced"]
    for dt, r in bal.groupby("moe_dtype", sort=True):
        few = r[r["num_tokens"] <= 16]["power"]
        out.append(f"  {dt:<12} balanced, <= 16 tokens: {len(few)} rows, median {few.median():.0f} W; "
                   f"> 16 tokens: median {r[r['num_tokens'] > 16]['power'].median():.0f} W")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="aiconfigurator-core 0.12.0's aiconfigurator_core/systems/data")
    ap.add_argument("--write", action="store_true", help="store compute_w and memory_w in b200.toml's [power]")
    a = ap.parse_args()
    data = Path(a.data)
    if not data.is_dir():
        print(f"kernel_power: --data {a.data} is not a folder", file=sys.stderr)
        return 2
    from ironlaw.machine import engines, hardware
    from ironlaw.measure.calibrate import kernelfit, powerfit
    hw = hardware.get(GPU)
    datasheet = replace(hw, compute_w=None, memory_w=None)
    rows = powerfit.power_rows(hw, engines.load(GPU, FRAMEWORK), kernelfit.groups(tables(data)))
    compute_w, memory_w = powerfit.fit(datasheet, rows)
    after = powerfit.with_power(datasheet, compute_w, memory_w)
    before_s, after_s = powerfit.score(datasheet, rows), powerfit.score(after, rows)
    stored = powerfit.score(hw, rows) if hw.compute_w is not None else None
    print(f"b200: fitted compute_w {compute_w:g} W, memory_w {memory_w:g} W (idle_w {hw.idle_w:g} W, "
          f"tdp_w {hw.tdp_w:g} W); rows replaying a full second: {len(rows.measured_w)}")
    print(f"{'table':<22} {'held-out rows':>13}  {'before (tdp_w), median / p90':<30} {'after, median / p90':<22}"
          + ("  stored" if stored else ""))
    for i, (b, f) in enumerate(zip(before_s, after_s)):
        line = (f"{b.table:<22} {b.rows:>13}  {100 * b.median_abs_err:5.1f}% / {100 * b.p90_abs_err:5.1f}%"
                f"{'':<16} {100 * f.median_abs_err:5.1f}% / {100 * f.p90_abs_err:5.1f}%")
        if stored:
            line += f"      {100 * stored[i].median_abs_err:5.1f}% / {100 * stored[i].p90_abs_err:5.1f}%"
        print(line)
    for line in moe_lines(data):
        print(line)
    if a.write:
        used = {t: int((rows.table == t).sum()) for t in powerfit.POWER_TABLES}
        write_power(Path(hw.path), power_block(hw, compute_w, memory_w, used, after_s))
        print(f"wrote {hw.path} [power]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
