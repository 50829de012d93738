"""Blackwell's flat GEMM and attention efficiencies, carried from H100's by measured kernel ceilings.

    python benchmarks/carry_eta.py --data DIR            # print; DIR: aiconfigurator_core/systems/data
    python benchmarks/carry_eta.py --data DIR --write    # and rewrite [efficiency] matmul / attention of
                                                         # b200, b300, gb200, gb300 in machine/catalog

Per GPU, from aiconfigurator-core 0.12.0's TensorRT-LLM 1.3.0rc20 tables (NVIDIA, Apache-2.0): the median share
of the catalog's datasheet peak that its compute-bound GEMMs (bf16, fp8) and context attention (bf16) sustain
(``ironlaw.measure.calibrate.carry``), its ratio to H100's, and the η that ratio gives from H100's ``[efficiency]``
estimates (matmul 0.7, attention 0.5) — what a training step prices GEMMs and attention with on that GPU. The
check: H200, the same GH100 chip as H100 at the same clocks, must measure ratios within 3% of 1 (the ratio is the
GPU's, not the table's); it is not written (its entry is Hopper's estimate itself). Nothing here is fitted on
end-to-end rows.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CATALOG = ROOT / "src" / "ironlaw" / "machine" / "catalog"
WRITTEN = ("b200", "b300", "gb200", "gb300")
SHOWN = ("h200",) + WRITTEN
SAME_CHIP = 0.03          # H200 against H100: the ratio measures the GPU, not the table
TABLES = "aiconfigurator-core 0.12.0 (NVIDIA, Apache-2.0), TensorRT-LLM 1.3.0rc20 gemm_perf and context_attention_perf"


def main() -> int:
    from ironlaw.core.errors import IronlawError
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="aiconfigurator_core/systems/data (or a folder in its layout)")
    ap.add_argument("--write", action="store_true", help="rewrite the catalog's [efficiency] of " + ", ".join(WRITTEN))
    args = ap.parse_args()
    try:
        out = carry_all(args.data)
    except IronlawError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"{'GPU':6s} {'bf16 GEMM':>9} {'fp8 GEMM':>9} {'attention':>9} {'rows':>11} {'matmul ×':>8} "
          f"{'attn ×':>7} {'η matmul':>9} {'η attn':>7}  (ceiling: median achieved ÷ datasheet peak)")
    for c in out.values():
        m = c.ceiling
        rows = f"{sum(m.gemm_rows.values())}+{m.attention_rows}"
        print(f"{c.gpu:6s} {m.gemm['bf16']:9.3f} {m.gemm['fp8']:9.3f} {m.attention:9.3f} {rows:>11} "
              f"{c.matmul_ratio:8.3f} {c.attention_ratio:7.3f} {c.matmul:9.3f} {c.attention:7.3f}")
    r = next(iter(out.values())).reference_ceiling
    print(f"{r.gpu:6s} {r.gemm['bf16']:9.3f} {r.gemm['fp8']:9.3f} {r.attention:9.3f} "
          f"{str(sum(r.gemm_rows.values())) + '+' + str(r.attention_rows):>11}    reference")
    h = out["h200"]
    same = max(abs(h.matmul_ratio - 1), abs(h.attention_ratio - 1))
    print(f"check: H200, the same GH100 chip as H100, measures ratios {h.matmul_ratio:.3f} / {h.attention_ratio:.3f} "
          f"(goal: within {SAME_CHIP:.0%} of 1): {'met' if same <= SAME_CHIP else 'NOT met'}")
    if args.write:
        for gpu in WRITTEN:
            write(gpu, out[gpu])
            print(f"wrote {CATALOG / (gpu + '.toml')}")
    return 0


def carry_all(data: str) -> dict:
    """GPU -> carry.Carried for SHOWN, against the reference's tables and [efficiency]."""
    from ironlaw.machine import hardware
    from ironlaw.measure.calibrate import carry
    ref_hw = hardware.get(carry.REFERENCE)
    ref = _ceiling(data, carry.REFERENCE, ref_hw)
    eta = {"matmul": ref_hw.eta("matmul"), "attention": ref_hw.eta("attention")}
    return {gpu: carry.carried(_ceiling(data, gpu, hardware.get(gpu)), ref, eta) for gpu in SHOWN}


def _ceiling(data: str, gpu: str, hw):
    from ironlaw.core.errors import IronlawError
    from ironlaw.measure.calibrate import carry, kerneltable
    tables = {t.op: t for t in kerneltable.read(data, ops=("gemm", "context_attention"), gpu=gpu, framework="trtllm")}
    for op in ("gemm", "context_attention"):
        if op not in tables:
            raise IronlawError(f"{data}: no TensorRT-LLM {op}_perf table for '{gpu}'")
        if tables[op].version != "1.3.0rc20":
            print(f"note: {gpu} {op} is TensorRT-LLM {tables[op].version}, not 1.3.0rc20", file=sys.stderr)
    return carry.ceiling(gpu, tables["gemm"].rows, tables["context_attention"].rows, hw)


def write(gpu: str, c) -> None:
    """Rewrite ``matmul``, ``attention`` and ``source`` of the [efficiency] table of ``gpu``'s catalog file."""
    path = CATALOG / f"{gpu}.toml"
    text = path.read_text()
    head, sep, rest = text.partition("\n[efficiency]\n")
    body, nxt, tail = rest.partition("\n[")
    m, r = c.ceiling, c.reference_ceiling
    source = (f"estimate: Hopper's (H100's matmul 0.7, attention 0.5: cuBLAS GEMMs and flash attention), matmul and "
              f"attention carried to {gpu} by the measured ratio of sustained to datasheet peak, {gpu} over H100, in {TABLES} "
              f"(ironlaw.measure.calibrate.carry: median achieved / peak over compute-bound rows): GEMMs M,N,K >= "
              f"8192,4096,4096 bf16 {m.gemm['bf16']:.3f} vs {r.gemm['bf16']:.3f}, fp8 {m.gemm['fp8']:.3f} vs "
              f"{r.gemm['fp8']:.3f} (geometric mean of the two ratios {c.matmul_ratio:.3f}; {sum(m.gemm_rows.values())} "
              f"rows); context attention bf16, head dim 128, >= 4096 tokens: {m.attention:.3f} vs {r.attention:.3f} "
              f"({c.attention_ratio:.3f}; {m.attention_rows} rows); conv, other and memory kept as Hopper's "
              f"(python benchmarks/carry_eta.py --data DIR --write)")
    new = {"matmul": f"{c.matmul:.3f}", "attention": f"{c.attention:.3f}", "source": _toml_str(source)}
    for key, value in new.items():
        body, n = re.subn(rf"^{key} = .*$", lambda _m: f"{key} = {value}", body, count=1, flags=re.M)
        if n != 1:
            raise SystemExit(f"{path}: [efficiency] has no '{key}' line")
    path.write_text(head + sep + body + nxt + tail)


def _toml_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


if __name__ == "__main__":
    raise SystemExit(main())
