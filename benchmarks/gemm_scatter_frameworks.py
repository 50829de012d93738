"""Whether a GEMM table's scatter is the kernel's choice or the timing's: the same (M, N, K) in three frameworks' tables.

    python benchmarks/gemm_scatter_frameworks.py --data DIR [--gpu l40s] [--dtype bfloat16] [--model]

Data: aiconfigurator-core 0.12.0 (NVIDIA, Apache-2.0), ``--data`` its ``aiconfigurator_core/systems/data``. TensorRT-LLM
(``torch_flow``), vLLM (``torch.nn.functional.linear``) and SGLang (``sglang_torch_linear``) all time a bf16 GEMM as
PyTorch's linear, whose kernel cuBLASLt's heuristics pick from (M, N, K) and the device. A kernel choice is therefore
the same in every table: where the time jumps between neighbours in M because the kernel changed, it jumps at the same
shape in the other tables. A timing's scatter is not: it falls at a different shape in each table. Printed per pair
of tables:

1. the same shape's time, table over table: the median ratio, the median and 90th percentile of |log deviation| from
   it, and the share of shapes within 5%;
2. each table's M-neighbour jumps (a row over 20% off the geometric mean of its two neighbours in M at the same N and
   K, as ``kernel_table_noise.py``), and the share of them the other table repeats (a jump of the same sign over 10%
   at the same shape): repeated jumps are the kernel's, the rest the timing's;
3. where TensorRT-LLM's and vLLM's tables agree within 3%, how far the third table is off their mean: a floor that
   table's own timing sets under any model of the kernel.

``--model`` also prices each table's held-out rows with the catalog's stored terms (as ``kernel_tables.py --stored``)
and splits the rows over 20% off into those another table's time at the same shape repeats within 10% (the kernel's
choice, which a term could follow) and the rest; and tests one such term on the compute-bound rows, the fill of the
best CUTLASS tile's whole waves over the device's SMs (threadblock tiles of CUTLASS's SM80 tensor-op BF16 generator,
python/cutlass_library/generator.py ``GenerateSM80_TensorOp_16816``): its correlation with the held-out error; and
another, the small-M kernel whose time follows K alone: in the L40S tables, at 2 ≤ M ≤ 16, 768 ≤ K ≤ 8,192 and
M·N·K < 2²¹, cuBLASLt runs a kernel that walks all of K per CTA (gemm:2,64,6144 27 µs in every table, 5.2 µs at
M = 1, 4.4 µs at M = 6): those rows priced at max(the law's time, K × the table's median time per K over the region's
rows not held out), and the held-out score with it.
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
JUMP = 0.20          # a row this far off its M-neighbours' geometric mean is a jump (kernel_table_noise.py's measure)
REPEAT = 0.10        # the other table repeats a jump when it jumps the same way by at least this much
AGREE = 0.03         # TensorRT-LLM and vLLM agree on a shape within this
PLATEAU_M = (2, 16)          # the region of the K-walking small-M kernel (read off the L40S tables, the docstring)
PLATEAU_K = (768, 8192)
PLATEAU_MNK = 2.0 ** 21
CUTLASS_TILES = ((256, 128), (128, 256), (256, 64), (64, 256), (128, 128), (128, 64), (64, 128), (64, 64))


def times(data: Path, gpu: str, dtype: str):
    """One pandas Series per framework: seconds by (m, n, k), the table's ``dtype`` rows."""
    from ironlaw.measure.calibrate import kerneltable
    out = {}
    for fw in FRAMEWORKS:
        for t in kerneltable.read(data / gpu, ops=("gemm",), framework=fw):
            r = t.rows[t.rows["gemm_dtype"] == dtype]
            out[fw] = r.groupby(["m", "n", "k"])["latency_s"].median()
    return out


def jumps(s):
    """log(time / geometric mean of the two M-neighbours at the same N and K), by (m, n, k), the rows that have both."""
    import pandas as pd
    x = s.reset_index().sort_values(["n", "k", "m"])
    lat, n, k = np.log(x["latency_s"].to_numpy(float)), x["n"].to_numpy(), x["k"].to_numpy()
    same = (n[1:-1] == n[:-2]) & (n[1:-1] == n[2:]) & (k[1:-1] == k[:-2]) & (k[1:-1] == k[2:])
    dev = lat[1:-1] - 0.5 * (lat[:-2] + lat[2:])
    idx = pd.MultiIndex.from_arrays([x["m"].to_numpy()[1:-1], n[1:-1], k[1:-1]], names=["m", "n", "k"])
    return pd.Series(dev, index=idx)[same]


def repeated_share(own, other) -> tuple[int, float]:
    """(this table's jumps that the other table also times, the share of them it repeats: the same sign, over
    ``REPEAT``)."""
    both = own.index.intersection(other.index)
    a, b = own.loc[both], other.loc[both]
    big = np.abs(np.expm1(a)) > JUMP
    rep = (np.sign(a[big]) == np.sign(b[big])) & (np.abs(np.expm1(b[big])) > REPEAT)
    return int(big.sum()), float(rep.mean()) if big.any() else float("nan")


def pair_lines(t: dict) -> list[str]:
    """Sections 1 and 2: the same shape table over table, and the M-neighbour jumps each repeats of the other's."""
    out = ["pair                shapes  ratio  |dev| median / p90  within 5%   jumps >20%  repeated by the other"]
    j = {fw: jumps(s) for fw, s in t.items()}
    for a, b in (("trtllm", "vllm"), ("trtllm", "sglang"), ("vllm", "sglang")):
        both = t[a].index.intersection(t[b].index)
        r = np.log(t[a].loc[both] / t[b].loc[both])
        dev = np.abs(r - np.median(r))
        n_ab, rep_ab = repeated_share(j[a], j[b])
        n_ba, rep_ba = repeated_share(j[b], j[a])
        out.append(f"{a + '/' + b:<18} {len(both):>7}  {np.exp(np.median(r)):5.3f}  {100 * np.median(dev):5.1f}% / "
                   f"{100 * np.percentile(dev, 90):5.1f}%  {100 * np.mean(dev < 0.05):8.0f}%   {a} {n_ab:>5}: "
                   f"{100 * rep_ab:3.0f}% by {b}; {b} {n_ba:>5}: {100 * rep_ba:3.0f}% by {a}")
    return out


def third_lines(t: dict) -> list[str]:
    """Section 3: where TensorRT-LLM and vLLM agree within ``AGREE``, SGLang's time against their mean."""
    both = t["trtllm"].index.intersection(t["vllm"].index).intersection(t["sglang"].index)
    a, b, c = (t[fw].loc[both] for fw in FRAMEWORKS)
    agree = np.abs(np.log(a / b)) < AGREE
    mean = np.sqrt(a[agree] * b[agree])
    r = np.log(c[agree] / mean)
    dev = np.abs(r - np.median(r))
    return [f"shapes where trtllm and vllm agree within {100 * AGREE:.0f}%: {int(agree.sum())} of {len(both)}; sglang "
            f"over their mean {np.exp(np.median(r)):.3f}, |dev| median {100 * np.median(dev):.1f}% / p90 "
            f"{100 * np.percentile(dev, 90):.1f}%, over 20% off: {100 * np.mean(dev > JUMP):.1f}% of them"]


def held_out(data: Path, gpu: str, fw: str, dtype: str):
    """(held-out rows with ``meas``, ``pred`` s and the law's compute / data s) of ``fw``'s GEMM class of ``dtype``."""
    import kernel_tables
    import kernel_worst
    import pandas as pd
    from ironlaw.machine import engines, hardware
    from ironlaw.measure.calibrate import kernelfit
    hw = hardware.get(kernel_tables.GPUS[gpu])
    table = hw.calibration.table() if fw == "trtllm" else engines.load(hw.name, fw)
    tables = [replace(t, path=f"{gpu}/{t.path}") for t in kernel_tables.readable(data / gpu, fw, None, ("gemm",))]
    name = "gemm " + ("bf16" if dtype == "bfloat16" else dtype)
    g = next(g for g in kernelfit.groups(tables) if g.name == name)
    rows, meas, pred, data_s, comp_s, _ = kernel_worst.priced(hw, table, g)
    return pd.DataFrame({"m": rows["m"].to_numpy(), "n": rows["n"].to_numpy(), "k": rows["k"].to_numpy(),
                         "meas": meas, "pred": pred, "data": data_s, "comp": comp_s}), hw.sms


def wave_fill(m, n, k, sms: int) -> np.ndarray:
    """The fill of the best CUTLASS tile's whole waves: M·N·K / sms over min over tiles of waves · tile M · tile N · K."""
    cost = [np.ceil(np.ceil(m / bm) * np.ceil(n / bn) / sms) * bm * bn * k for bm, bn in CUTLASS_TILES]
    return m * n * k / sms / np.min(cost, axis=0)


def plateau(m, n, k) -> np.ndarray:
    """Whether (M, N, K) falls in the K-walking small-M kernel's region (``PLATEAU_*``)."""
    m, n, k = (np.asarray(x, float) for x in (m, n, k))
    return (m >= PLATEAU_M[0]) & (m <= PLATEAU_M[1]) & (k >= PLATEAU_K[0]) & (k <= PLATEAU_K[1]) & (m * n * k < PLATEAU_MNK)


def plateau_line(h, s, err) -> str:
    """The held-out score with the region's rows priced at max(priced, K × the median time per K of the table's
    other rows in the region)."""
    import pandas as pd
    key = pd.MultiIndex.from_arrays([h["m"], h["n"], h["k"]], names=["m", "n", "k"])
    rest = s.drop(key, errors="ignore")
    idx = rest.index.to_frame().to_numpy(float)
    inside = plateau(idx[:, 0], idx[:, 1], idx[:, 2])
    per_k = float(np.median(rest.to_numpy()[inside] / idx[inside, 2]))
    reg = plateau(h["m"], h["n"], h["k"])
    k = h["k"].to_numpy(float)
    new = np.abs(np.where(reg, np.maximum(h["pred"], k * per_k), h["pred"]) / h["meas"] - 1.0)
    return (f"        K-walking small-M region: {int(reg.sum())} held-out rows ({int(inside.sum())} others, "
            f"{1e9 * per_k:.2f} ns per K); with it {100 * np.median(new):.1f}% / {100 * np.percentile(new, 90):.1f}%, "
            f"the region's rows {100 * np.median(np.abs(err[reg])):.1f}% / {100 * np.percentile(np.abs(err[reg]), 90):.1f}% "
            f"→ {100 * np.median(new[reg]):.1f}% / {100 * np.percentile(new[reg], 90):.1f}%")


def model_lines(data: Path, gpu: str, dtype: str, t: dict) -> list[str]:
    """``--model``: each table's held-out rows over 20% off, split by whether another table repeats them; the best
    tile's wave fill against the held-out error on the compute-bound rows above M = 256."""
    out = []
    for fw in FRAMEWORKS:
        h, sms = held_out(data, gpu, fw, dtype)
        err = h["pred"] / h["meas"] - 1.0
        key = list(zip(h["m"], h["n"], h["k"]))
        near = np.zeros(len(h), bool)
        for other in FRAMEWORKS:
            if other != fw:
                o = t[other].reindex(key).to_numpy()
                near |= np.abs(o / h["meas"].to_numpy() - 1.0) < REPEAT
        miss = np.abs(err.to_numpy()) > JUMP
        cb = (h["m"].to_numpy() > 256) & (h["comp"] > h["data"]).to_numpy()
        fill = wave_fill(*(h[c].to_numpy(float)[cb] for c in ("m", "n", "k")), sms)
        corr = np.corrcoef(np.log(h["meas"].to_numpy()[cb] / h["pred"].to_numpy()[cb]), -np.log(fill))[0, 1]
        out.append(f"{fw:<7} held out {100 * np.median(np.abs(err)):.1f}% / {100 * np.percentile(np.abs(err), 90):.1f}%"
                   f" ({len(h)} rows); over 20% off: {int(miss.sum())}, of them {int((miss & near).sum())} within "
                   f"{100 * REPEAT:.0f}% of another table's time at the shape (the kernel's), {int((miss & ~near).sum())}"
                   f" not; compute-bound rows above M = 256: {int(cb.sum())}, correlation of log(measured / priced) "
                   f"with the best tile's lost wave fill {corr:+.3f}")
        out.append(plateau_line(h, t[fw], err.to_numpy()))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="aiconfigurator_core/systems/data of aiconfigurator-core 0.12.0")
    ap.add_argument("--gpu", default="l40s", help="table folder (default l40s)")
    ap.add_argument("--dtype", default="bfloat16", help="the tables' gemm_dtype (default bfloat16: all three run "
                                                        "PyTorch's linear)")
    ap.add_argument("--model", action="store_true", help="also split the stored terms' held-out misses (minutes)")
    a = ap.parse_args()
    data = Path(a.data)
    t = times(data, a.gpu, a.dtype)
    print(f"{a.gpu} gemm {a.dtype}: " + ", ".join(f"{fw} {len(s)} shapes" for fw, s in t.items()))
    print("\n".join(pair_lines(t) + third_lines(t)))
    if a.model:
        print("\n".join(model_lines(data, a.gpu, a.dtype, t)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
