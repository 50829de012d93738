"""The rate of the L2 a GPU's MLA BMM rows replay out of, where no measured one is published: the rate of a scan at
which the GPU's classes, refitted under it, fit their own fit rows best.

    python benchmarks/replay_rate.py --data DIR --gpu b200_sxm [--rates 8.5,10,13,15,17.5,20,25,30]   # ~1 min

Data: aiconfigurator-core 0.12.0 (NVIDIA, Apache-2.0), ``--data`` its ``aiconfigurator_core/systems/data``. For each
rate (TB/s) the MLA BMM classes of the GPU's TensorRT-LLM, vLLM and SGLang tables are fitted (``kernelfit.fit``) with
``kernelfit.rules.REPLAY_L2``'s level at that rate and its stated size, and each class's fit rows are priced by its
refitted terms on that device: the mean squared log error over its fit rows, summed over the classes, is printed per
rate, with each class's held-out median and p90 beside it (a check, not the criterion). The rate stored in
``REPLAY_L2`` is the scan's best (docs/accuracy.md, "B200's MLA BMMs read through the L2 they replay out of").
"""
from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).parent))

FRAMEWORKS = ("trtllm", "vllm", "sglang")
RATES_TBPS = (8.5, 10.0, 13.0, 15.0, 17.5, 20.0, 25.0, 30.0)


def fit_loss(hw, g, cal: dict) -> float:
    """Mean squared log error of ``g``'s fit rows under ``cal`` on the device its class is fitted on."""
    from ironlaw.measure.calibrate import kernelfit
    from ironlaw.measure.calibrate.fitcore import Problem
    dev = kernelfit.ops.replayed_hw(g, hw)
    rows = kernelfit.split(g.rows, g.op)[0]
    prob = Problem(dev, kernelfit.observations(g, rows, dev), weighting="per_case")
    return float(np.mean(np.log(prob.times(cal) / prob.meas) ** 2))


def scan(data: Path, gpu: str, rates) -> list[tuple[float, float, list[str]]]:
    """[(rate TB/s, summed fit-row loss, each class's held-out score)] over ``rates``."""
    import kernel_tables
    from ironlaw.machine import hardware
    from ironlaw.measure.calibrate import kernelfit
    hw = hardware.get(kernel_tables.GPUS[gpu])
    groups = [(fw, kernelfit.groups([replace(t, path=f"{gpu}/{t.path}") for t in
                                      kernel_tables.readable(data / gpu, fw, None, ("mla_bmm",))]))
              for fw in FRAMEWORKS]
    stated = kernelfit.rules.REPLAY_L2[hw.name]
    out = []
    try:
        for rate in rates:
            kernelfit.rules.REPLAY_L2[hw.name] = (stated[0], rate * 1e12, stated[2])
            loss, held = 0.0, []
            for fw, gs in groups:
                if not gs:
                    continue
                cal = kernelfit.fit(hw, gs)
                for g in gs:
                    loss += fit_loss(hw, g, cal)
                    e = kernelfit.scoring.held_errors(hw, cal, g)
                    held.append(f"{fw} {g.name} {100 * np.median(e):.1f}% / {100 * np.percentile(e, 90):.1f}%")
            out.append((rate, loss, held))
    finally:
        kernelfit.rules.REPLAY_L2[hw.name] = stated
    return out


def best(results: list) -> float:
    """The rate of ``results`` (``scan``'s) with the least summed fit-row loss."""
    return min(results, key=lambda r: r[1])[0]


def main() -> int:
    import kernel_tables
    from ironlaw.measure.calibrate import kernelfit
    stated = tuple(f for f, name in kernel_tables.GPUS.items() if name in kernelfit.rules.REPLAY_L2)
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="aiconfigurator_core/systems/data of aiconfigurator-core 0.12.0")
    ap.add_argument("--gpu", default="b200_sxm", choices=stated,
                    help="the table folder of a GPU kernelfit.rules.REPLAY_L2 states (default b200_sxm)")
    ap.add_argument("--rates", default=",".join(f"{r:g}" for r in RATES_TBPS), help="TB/s, comma-separated")
    a = ap.parse_args()
    try:
        rates = [float(x) for x in a.rates.split(",")]
    except ValueError:
        ap.error(f"--rates {a.rates}: expected numbers in TB/s separated by commas")
    if not Path(a.data).is_dir():
        ap.error(f"--data {a.data}: no such folder")
    results = scan(Path(a.data), a.gpu, rates)
    for rate, loss, held in results:
        print(f"{rate:5.1f} TB/s  fit rows {loss:.4f}   held out: " + "; ".join(held))
    print(f"best: {best(results):g} TB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
