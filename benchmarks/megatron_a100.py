"""Training-step predictions against Megatron-LM's published A100 throughput (Narayanan et al. 2021, Table 1).

    python benchmarks/megatron_a100.py

Prints, per row (GPT 1.7B–1T on 32–3072 DGX A100 GPUs), the measured teraFLOP/s per GPU, ironlaw's
prediction and the error, under two fabrics:
  catalog    the a100 entry as shipped: its network fitted on vidur's NCCL runs (A100_VIDUR: ~24% of a port's
             rate for collectives, a 19.85 GB/s InfiniBand ceiling per node)
  datasheet  --network default: the estimates every other device gets (ports add up, 85-90% of
             the link rate): what 8 × HDR per DGX on a rail-optimised fabric such as Selene's would give
and two attention kernels: eager (as Megatron-LM ran in 2021: QKᵀ, softmax, dropout, ·V, eager backward)
and FlashAttention (the builder's default). Assumptions the table does not pin: micro-batch 1, no
interleaving. The test (tests/test_megatron_reference.py) holds the catalog/eager column to its figures.
"""
from __future__ import annotations

import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def main() -> int:
    from ironlaw.machine import hardware
    from ironlaw.machine.network.calibration import with_network
    from megatron_ref import predict, table
    catalog = hardware.get("a100")
    # the collective model's sourced estimates (ironlaw analyze --network default), all else unchanged
    datasheet = with_network(catalog, "default")
    rows = table()
    cols = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, hw, eager in (("catalog, eager", catalog, True), ("datasheet, eager", datasheet, True),
                                 ("catalog, flash", catalog, False)):
            cols[label] = [predict(r, hw, Path(tmp), eager=eager) for r in rows]
    head = f"{'model':>8} {'tp':>3} {'pp':>3} {'GPUs':>5} {'batch':>5} {'measured':>8}"
    print(head + "".join(f"  {k:>22}" for k in cols))
    for i, r in enumerate(rows):
        cells = "".join(f"  {v[i]:8.1f} TF/s {v[i] / r['teraflops_per_gpu'] - 1:+7.1%}" for v in cols.values())
        print(f"{r['params_billion']:7.1f}B {int(r['tp']):3d} {int(r['pp']):3d} {int(r['gpus']):5d} {int(r['batch']):5d} "
              f"{r['teraflops_per_gpu']:8.0f}" + cells)
    print()
    for k, v in cols.items():
        errs = [abs(p / r["teraflops_per_gpu"] - 1) for p, r in zip(v, rows)]
        print(f"{k:18s} median |err| {statistics.median(errs):6.1%}   max {max(errs):6.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
