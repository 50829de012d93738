"""vLLM's and SGLang's own fused-MoE layers fitted per GPU and dtype on their measured tables (kernel_moe.py
--framework vllm|sglang); the device's TensorRT-LLM fit scored on the same held-out rows beside them.

Data: aiconfigurator-core 0.12.0 (NVIDIA, Apache-2.0), systems/data/<system>/moe/<framework>/<version>/moe_perf.parquet,
the version the framework's engine file (machine/catalog/engine/<framework>/<gpu>.toml) is fitted on. A vLLM row times
one rank's fused-MoE layer on one GPU (aiconfigurator collector/vllm/collect_moe.py, ``run_moe_torch``, vLLM 0.24.0):
the timed call is the ``FusedMoE`` module on router logits made before it (``balanced_logits`` of collector/helper.py,
the routing ``moefit.terms`` rebuilds) — the router's top-k, the align/permute of the routed rows, both grouped GEMMs,
the activation and the weighted combine. SGLang 0.5.14's (collector/sglang/collect_moe.py) times its own layer alike.
At DeepSeek-V3's layer shape both run the model's group-limited router on those logits, which keeps 4 of the 8 expert
groups for every token (``kernelfit.rules.MOE_GROUPED_ROUTING``, ``core.routing.grouped_balanced_local``): those
rows are counted as routed (``row_groups``).
One class per GPU and weight dtype: the rows of the ``kernel_source`` with the most rows of that dtype (the collector's
sweep over every layer shape; the other sources of a dtype are a few models' shapes on another backend), routed
``balanced`` where the table has such rows of the dtype, else ``power_law_1.01``, else the first other routing (the
A100's vLLM 0.14.0 and the B60's vLLM 0.26.0 tables hold power-law rows alone: ``moefit.power_law_local``'s
expectation). Weight-only rows are refused (``kernelfit.rules.MOE_WEIGHT_ONLY``).

Form (``FORM``): the MoE layer's L, η_w, η_c, η_a with a cost per expert the rows reach and per token of the layer,
solved within the bounds (moefit.fit per_touched, per_token, exact), the form TensorRT-LLM's 1.0 classes store
(kernel_moe.py RELEASE_FORM, without its router term): the align/permute runs per token, the GEMMs' grids over the
touched experts' M blocks. The classes of ``kernelfit.rules.MOE_PAIRS`` (vLLM's and SGLang's Triton fused MoE, vLLM's
Marlin MoE) add to A the bytes their layer moves over the token-expert pairs routed to other ranks' experts under EP
(moefit.pairs_bytes): zero-filled GEMM output rows, the activation and the top-k sum over the whole M·top-k cache.
The classes of ``kernelfit.rules.MOE_UNALIGNED_K`` (Triton fused MoE) add c_k, the down GEMM's extra seconds per
second of its weights and FLOPs where inter/TP is not a multiple of 16 (moefit.fit per_unaligned), stored as the
grouped GEMM class's ``unaligned_k``.
The classes of ``kernelfit.rules.MOE_M_BLOCK`` (Triton fused MoE) count each touched expert's rows padded to the
BLOCK_SIZE_M of the framework's default config (``core.routing.FUSED_MOE_BLOCK_M``), stored as the grouped GEMM
class's ``m_block``.
Fitted on every other layer shape, scored on the rest (kernel_rows.held_out), goal median ≤ 8%, p90 ≤ 20%.
"""
from __future__ import annotations

import datetime
import sys
from collections import Counter
from pathlib import Path

import numpy as np

from kernel_rows import held_out, median_p90

FOLDERS = {"a100_sxm": "a100", "h100_sxm": "h100", "h200_sxm": "h200", "b200_sxm": "b200", "b300_sxm": "b300",
           "gb200": "gb200", "gb300": "gb300", "l40s": "l40s", "rtx_pro_6000_server": "rtx-pro-6000", "b60": "b60"}
DTYPES = {"bfloat16": "bf16", "fp8": "fp8", "fp8_block": "fp8_block", "nvfp4": "fp4", "w4a16_mxfp4": "w4a16_mxfp4"}
ROUTINGS = ("balanced", "power_law_1.01")
FORM = {"per_touched": True, "per_token": True, "exact": True}
PACKAGE, LICENSE = "aiconfigurator-core 0.12.0 (NVIDIA)", "Apache-2.0"
NAMES = {"vllm": "vLLM", "sglang": "SGLang"}


def engine_version(gpu: str, framework: str) -> str | None:
    """The table version most of ``framework``'s engine file classes on ``gpu`` were fitted on (None: no file)."""
    from ironlaw.machine import engines
    table = engines.load(gpu, framework)
    if table is None:
        return None
    got = Counter(p["version"].split("; ")[-1] for p in table.get("provenance", {}).values()
                  if p["version"].split("; ")[-1].startswith(framework + " ") and not p.get("table", "").count("/moe/"))
    return got.most_common(1)[0][0].split(" ", 1)[1] if got else None


def groups(data: Path, framework: str, gpus=None, only=None, say=print) -> list[tuple]:
    """[(gpu, ironlaw dtype, table path and its kernel, routing, version, rows as a dict of arrays)] of every class
    of ``framework``'s MoE tables (module docstring); ``gpus``, ``only``: those GPUs and dtypes alone."""
    from ironlaw.measure.calibrate import kerneltable
    from ironlaw.measure.calibrate.kernelfit import rules
    out = []
    for folder, gpu in FOLDERS.items():
        version = engine_version(gpu, framework) if not gpus or gpu in gpus else None
        where = data / folder / "moe" / framework / str(version)
        if version is None or not (where / "moe_perf.parquet").is_file():
            continue
        for t in kerneltable.read(where, ops=("moe",)):
            for src, dt in DTYPES.items():
                r = t.rows[t.rows.moe_dtype == src]
                if not len(r) or (only and dt not in only):
                    continue
                routing = next(x for x in ROUTINGS + tuple(sorted(set(r.distribution))) if (r.distribution == x).any())
                r = r[r.distribution == routing]
                if rules.holds(rules.MOE_WEIGHT_ONLY, (framework, dt), gpu):
                    say(f"{gpu:14s} {dt:9s} refused: weight-only rows ({sorted(set(r.kernel_source))[0]}; "
                        f"kernelfit.rules.MOE_WEIGHT_ONLY)")
                    continue
                kernel = r.kernel_source.value_counts().idxmax()
                r = r[r.kernel_source == kernel]
                path = f"{folder}/moe/{framework}/{version}/moe_perf.parquet ({src} rows, {kernel}, {routing})"
                out.append((gpu, dt, path, routing, version, {c: r[c].to_numpy() for c in r.columns}))
    return out


def row_groups(framework: str, version: str | None, rows: dict) -> np.ndarray:
    """Per row (expert groups, groups kept per token) of the group-limited router ``framework``'s collector ran on
    that table version's layer shape (``kernelfit.rules.grouped_routing``; (0, 0): plain top-k)."""
    from ironlaw.measure.calibrate.kernelfit import rules
    shapes = zip(*(np.asarray(rows[c], int) for c in ("hidden_size", "inter_size", "num_experts", "topk")))
    return np.array([rules.grouped_routing(framework, str(version), *shape) for shape in shapes], int).reshape(-1, 2)


def fit_class(gpu: str, dt: str, rows: dict, routing: str, framework: str = "vllm", version: str | None = None
              ) -> tuple[dict, np.ndarray, np.ndarray | None, int]:
    """(kernel entries as stored, |relative error| of this fit on the held-out shapes, that of the device's
    TensorRT-LLM fit (its catalog entries, on the law's terms without ``pairs``) on the same rows — None where the
    catalog has no such class —, rows fitted). A class of ``kernelfit.rules.MOE_PAIRS`` is fitted with the bytes its
    layer moves over every token-expert pair of the step (moefit.pairs_bytes of the rule's kernel); one of
    ``kernelfit.rules.MOE_M_BLOCK`` with each expert's rows padded to the default config's M block (stored as the
    grouped GEMMs' ``m_block``)."""
    from ironlaw.machine import hardware
    from ironlaw.measure.calibrate import moefit
    from ironlaw.measure.calibrate.kernelfit import rules
    from kernel_moe import layer_terms, stored_predict
    pairs = rules.pair_kernel(framework, dt, gpu)
    groups = row_groups(framework, version, rows)
    block = rules.fused_moe_block(framework, dt, gpu)
    x, t, keep = layer_terms(gpu, dt, rows, routing, pairs=pairs, groups=groups, m_block=block)
    form = FORM | {"per_unaligned": rules.holds(rules.MOE_UNALIGNED_K, (framework, dt), gpu)}
    kern, err = held_out(lambda x, t: moefit.kernels(moefit.fit(x, t, **form), dt, block),
                         lambda kern, x: stored_predict(kern, dt, x), x, t, keep)
    cal = hardware.get(gpu).calibration
    have = cal.kernel if cal is not None else {}
    x = layer_terms(gpu, dt, rows, routing, groups=groups)[0] if pairs or block else x
    before = (np.abs(stored_predict(have, dt, x[~keep]) / t[~keep] - 1)
              if f"moe_grouped_gemm.{dt}" in have and f"moe_rows.{dt}" in have else None)
    return kern, err, before, int(keep.sum())


def table(framework: str, gpu: str, fits: list[tuple]) -> dict:
    """The [calibration] entries of ``gpu``'s fits [(dtype, path, version, kern, n_fit, n_held)], with provenance."""
    from ironlaw.machine.calibration import SCHEMA
    date = datetime.date.today().isoformat()
    name = NAMES[framework]
    cal = {"schema": SCHEMA, "kernel": {}, "provenance": {}, "fitted": [], "held_out": [],
           "source": (f"derived: {name}'s fused-MoE layer's L, η_w, η_c, η_a, L_u, L_t per weight dtype fitted to the "
                      f"even layer shapes of its measured moe_perf tables by benchmarks/kernel_moe.py --framework "
                      f"{framework} (ironlaw.measure.calibrate.moefit; {PACKAGE}, {LICENSE})")}
    for dt, path, version, kern, n_fit, n_held in fits:
        what = f"moe {dt} ({name} fused MoE)"
        cal["kernel"].update(kern)
        cal["fitted"].append(f"{what}: even layer shapes")
        cal["held_out"].append(f"{what}: odd layer shapes")
        cal["provenance"][f"moe {dt}"] = {"table": path, "version": f"{PACKAGE}; {framework} {version}",
                                          "license": LICENSE, "rows_fitted": n_fit, "rows_held_out": n_held,
                                          "date": date}
    return cal


def main(a, data: Path, goal: tuple[float, float]) -> int:
    """``kernel_moe.py --framework``: print every class's held-out error, the TRT-LLM fit's before it; ``--write``:
    each GPU's classes merged into the framework's engine file."""
    from ironlaw.machine import engines
    from ironlaw.measure.calibrate.kernelfit import merged, rules
    name = NAMES[a.framework]
    print(f"MoE layer ({name}'s fused MoE), {PACKAGE}: fitted on every other layer shape, scored on the rest; "
          f"held out, median / p90: the device's TensorRT-LLM fit (what serving priced) → {name}'s own")
    got = groups(data, a.framework, a.gpu, a.only)
    if not got:
        print(f"kernel_moe.py: no {name} MoE table under {data} matches the GPUs and dtypes asked (--gpu, --only)",
              file=sys.stderr)
        return 2
    by_gpu: dict = {}
    for gpu, dt, path, routing, version, rows in got:
        kern, err, before, n_fit = fit_class(gpu, dt, rows, routing, a.framework, version)
        pairs = rules.pair_kernel(a.framework, dt, gpu)
        if pairs:                  # the serving step adds the same bytes under EP (``serving.tpexperts``)
            kern[f"moe_rows.{dt}"]["pairs"] = pairs
        said = f" (every token-expert pair: moefit.pairs_bytes, {pairs}; kernelfit.rules.MOE_PAIRS)" if pairs else ""
        if rules.holds(rules.MOE_UNALIGNED_K, (a.framework, dt), gpu):
            said += " (unaligned inter/TP: moefit.fit per_unaligned, c_k; kernelfit.rules.MOE_UNALIGNED_K)"
        block = rules.fused_moe_block(a.framework, dt, gpu)
        if block:
            said += f" (rows padded to the default config's M block: m_block {block}; kernelfit.rules.MOE_M_BLOCK)"
        by_gpu.setdefault(gpu, []).append((dt, path + said, version, kern, n_fit, len(err)))
        med, p90 = median_p90(err)
        was = "      —       " if before is None else "{:5.1f}% / {:5.1f}%".format(*(100 * v for v in median_p90(before)))
        ok = med <= goal[0] and p90 <= goal[1]
        g = kern[f"moe_grouped_gemm.{dt}"]
        ck = f"  c_k {g['unaligned_k']:.2f}" if "unaligned_k" in g else ""
        print(f"{gpu:13s} {dt:11s} {len(err):6d}  {was} → {100 * med:5.1f}% / {100 * p90:5.1f}%  "
              f"{'met ' if ok else 'MISS'}  L {2e6 * g['latency_s']:5.1f} µs η_w {g['streamed']:.2f} η_c "
              f"{g['eta_max']:.2f} η_a {kern[f'moe_rows.{dt}']['memory']:.2f}  {path.split(' (', 1)[1][:-1]}"
              f"{'  pairs ' + pairs if pairs else ''}{ck}{'  m_block ' + block if block else ''}",
              flush=True)
    if a.write:
        for gpu, fits in by_gpu.items():
            new = table(a.framework, gpu, fits)
            print(f"wrote {engines.write(gpu, a.framework, merged(engines.load(gpu, a.framework), new))}")
    return 0
