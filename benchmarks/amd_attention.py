"""AMD Instinct attention η measured from ROCm/aiter's published FMHA throughputs.

    python benchmarks/amd_attention.py            # print the shares per GPU
    python benchmarks/amd_attention.py --write    # and rewrite [efficiency] attention of mi300x, mi325x, mi355x
    python benchmarks/amd_attention.py --extract AITER_CLONE   # rewrite the data file from a clone of ROCm/aiter

tests/data/aiter_kernels/attention/mha_asm_bf16.csv: ROCm/aiter's op_tests/cpp/mha/README.md (AMD, MIT) at e4048607,
"the asm kernel performance of the attention forwards and attention backwards" (BF16, BSHD, batch mode), one row per
GPU, phase and shape: batch 1/4/8, 32 or 64 query heads on 4 or 8 KV heads, head dim 128, 1,024 to 16,384 tokens
(seqlen_q = seqlen_kv), causal or not; TFLOP/s forward, backward with dQ accumulated by bf16 atomics (a16) and by fp32
atomics (a32). The FLOP counts are the law's: the harness counts 4·d per (query, key) pair and head forward,
10·d backward (op_tests/cpp/mha/benchmark_mha_fwd.cpp / benchmark_mha_bwd.cpp, ``flop``), and the causal rows are
halved in the table (the harness printed full s² at a83421be, when the table was added; the causal entries carry the
third decimal a halved two-decimal printout gives). Per GPU (``kernelfit.rules.ATTENTION_ROWS_OF``): the medians
of achieved ÷ the catalog's BF16 datasheet peak, forward, backward a16 (the kernels AMD's MLPerf LoRA configs run),
and the forward + backward blend at 1 : 2.5 FLOPs (``ironlaw.measure.calibrate.attnshare``), which --write stores,
over the shapes of 4,096 tokens or more (``carry.ATTENTION_MIN``: where compute binds, as NVIDIA's attention η).
No end-to-end result is fitted.
"""
from __future__ import annotations

import argparse
import csv
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CATALOG = ROOT / "src" / "ironlaw" / "machine" / "catalog"
DATA = ROOT / "tests" / "data" / "aiter_kernels" / "attention" / "mha_asm_bf16.csv"
BACKWARD = "backward_a16"
COMMIT = "e4048607a535ace3a2b51ded31b1c8c2d45c0879"
README = "op_tests/cpp/mha/README.md"
PHASES = {"FWD": "forward", "BWD-a16": "backward_a16", "BWD-a32": "backward_a32"}   # the table's column groups
ORIGIN = ("ROCm/aiter e4048607 (AMD, MIT), op_tests/cpp/mha/README.md, asm FMHA v3 forward and backward (a16) BF16 "
          "TFLOP/s, 47 shapes each causal and not, head dim 128, 1,024-16,384 tokens (tests/data/aiter_kernels/attention/"
          "mha_asm_bf16.csv)")
CLAUSE = "; attention measured: "


def main() -> int:
    from ironlaw.core.errors import IronlawError
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="rewrite [efficiency] attention of the GPUs shown")
    ap.add_argument("--extract", metavar="AITER_CLONE", help=f"rewrite {DATA.relative_to(ROOT)} from a clone of "
                    f"ROCm/aiter holding commit {COMMIT[:8]} (its {README})")
    args = ap.parse_args()
    try:
        if args.extract:
            print(f"wrote {extract(args.extract)} rows to {DATA}")
        out = shares()
    except IronlawError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"{'GPU':7s} {'rows of':7s} {'shapes':>6} {'forward':>8} {'bwd a16':>8} {'step η':>7}  (median achieved ÷ "
          f"BF16 datasheet peak; step: forward + backward at 1 : 2.5 FLOPs)")
    for gpu, s in out.items():
        print(f"{gpu:7s} {s.gpu:7s} {s.shapes:6d} {s.forward:8.3f} {s.backward:8.3f} {s.step:7.3f}")
    if args.write:
        for gpu, s in out.items():
            write(gpu, s)
            print(f"wrote {CATALOG / (gpu + '.toml')}")
    return 0


def extract(clone: str) -> int:
    """Rewrite DATA from the performance table of README at COMMIT in ``clone``; the number of rows written."""
    from ironlaw.core.errors import IronlawError
    try:
        text = subprocess.run(["git", "-C", clone, "show", f"{COMMIT}:{README}"], capture_output=True, text=True,
                              check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise IronlawError(f"{clone}: cannot read {README} at {COMMIT[:8]} ({e})") from None
    rows = parse(text)
    with open(DATA, "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["device", "phase", "batch", "q_heads", "kv_heads", "seqlen_q", "seqlen_kv", "head_dim",
                    "causal", "tflops"])
        w.writerows(sorted(rows, key=lambda r: (r[0], r[1])))
    return len(rows)


def parse(text: str) -> list[list[str]]:
    """The rows (device, phase, the shape, TFLOP/s) of the performance table in aiter's mha README ``text``: its
    header row names the column groups (FWD, BWD-a16, BWD-a32), the third row the GPU of each column."""
    from ironlaw.core.errors import IronlawError
    cells = [[c.strip() for c in line.strip().strip("|").split("|")] for line in text.splitlines()
             if line.startswith("|")]
    head = next((i for i, c in enumerate(cells) if c[:2] == ["batch", "q_nheads"]), None)
    if head is None:
        raise IronlawError(f"{README} at {COMMIT[:8]}: no performance table (a 'batch | q_nheads' header)")
    groups, gpus = cells[head][7:], cells[head + 2][7:]
    phase = [PHASES[g.split("(")[0]] if g else "" for g in groups]
    for i in range(1, len(phase)):                                # a group's name spans its blank cells
        phase[i] = phase[i] or phase[i - 1]
    rows = []
    for c in cells[head + 3:]:
        if len(c) != len(cells[head]) or not c[0].isdigit():
            break
        rows += [[gpu.lower(), ph, *c[:7], v] for ph, gpu, v in zip(phase, gpus, c[7:])]
    return rows


def shares() -> dict:
    """GPU -> attnshare.AttentionShare of the GPU whose rows measure it (rules.ATTENTION_ROWS_OF)."""
    from ironlaw.machine import hardware
    from ironlaw.measure.calibrate import attnshare, carry
    from ironlaw.measure.calibrate.kernelfit import rules
    rows = attnshare.read(DATA)
    return {gpu: attnshare.share(rows, src, hardware.get(src).peak("bf16"), BACKWARD, carry.ATTENTION_MIN["isl"])
            for gpu, src in rules.ATTENTION_ROWS_OF.items()}


def clause(gpu: str, s) -> str:
    """The [efficiency] source's sentence on attention."""
    own = "" if s.gpu == gpu else (f"the {s.gpu}'s rows (the same die and datasheet peaks; kernelfit.rules."
                                   f"ATTENTION_ROWS_OF), ")
    return (f"{CLAUSE}{own}the median over the {s.shapes} shapes of 4,096 tokens or more (carry.ATTENTION_MIN) "
            f"of the forward + backward blend at 1 : 2.5 FLOPs of the "
            f"achieved share of the BF16 datasheet peak (forward {s.forward:.3f}, backward {s.backward:.3f} medians) "
            f"in {ORIGIN} (python benchmarks/amd_attention.py --write)")


def write(gpu: str, s) -> None:
    """Rewrite ``attention`` and the attention sentence of ``source`` in the [efficiency] table of ``gpu``'s file."""
    path = CATALOG / f"{gpu}.toml"
    head, sep, rest = path.read_text().partition("\n[efficiency]\n")
    body, nxt, tail = rest.partition("\n[")
    body, n = re.subn(r"^attention = .*$", f"attention = {s.step:.3f}", body, count=1, flags=re.M)
    m = re.search(r'^source = "(.*)"$', body, flags=re.M)
    if n != 1 or m is None:
        raise SystemExit(f"{path}: [efficiency] has no 'attention' or 'source' line")
    text = m.group(1).split(CLAUSE)[0] + clause(gpu, s).replace('"', "'")
    body = body[:m.start(1)] + text + body[m.end(1):]
    path.write_text(head + sep + body + nxt + tail)


if __name__ == "__main__":
    raise SystemExit(main())
