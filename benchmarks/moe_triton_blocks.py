"""vLLM's and SGLang's Triton fused-MoE classes with each expert's rows padded to the M block of the config the
framework picks per token count (forms tried; none stored).

The classes of ``kernel_moe.py --framework vllm|sglang`` (benchmarks/moe_frameworks.py: aiconfigurator-core 0.12.0's
per-framework ``moe_perf`` tables, NVIDIA, Apache-2.0; fitted on every other layer shape, scored on the rest) whose
kernel is the Triton ``fused_moe_kernel`` (``kernelfit.rules.pair_kernel`` "triton"). Both frameworks pick the
kernel's tile per call: ``try_get_optimal_moe_config`` reads the tuned JSON file ``E=<local experts>,N=<inter/TP>,
device_name=<GPU>[,dtype=...].json`` and takes the entry whose M key is nearest the layer's tokens, and without a
file ``get_default_config``: for bf16 and per-tensor FP8 BLOCK_SIZE_M 16 (BLOCK_SIZE_N 32) where the tokens are at
most the local experts, else 64 (64); block-scaled FP8 64 at every M (vLLM vllm/model_executor/layers/fused_moe/
fused_moe.py; SGLang python/sglang/srt/layers/moe/fused_moe_triton/fused_moe_triton_config.py, whose per-tensor FP8
default is 128 above the local experts, 64 at or below). ``moe_align_block_size`` pads each expert's rows to whole
BLOCK_SIZE_M blocks, and the grouped GEMMs compute the padding. The tuned files read are vLLM's H200 bf16 ones of
the table's shapes found in vLLM's configs folder (benchmarks/data/vllm_fused_moe_configs.json, their BLOCK_SIZE_M
and BLOCK_SIZE_N per M key; Apache-2.0); every other row runs the default config. SGLang's own tuned files
(fused_moe_triton/configs/triton_<version>/) are not read: its rows are priced on the default config.

Forms (the class's form as moe_frameworks.fit_class fits it, moefit.fit, with one change each):

    base        the form without padding (the stored one outside ``kernelfit.rules.MOE_M_BLOCK``)
    pad         F counts each touched expert's rows padded to the config's BLOCK_SIZE_M (the rows spread evenly,
                as the balanced routing spreads them: core.routing.padded_rows); on the default config alone, the
                stored form of the classes of ``kernelfit.rules.MOE_M_BLOCK`` (``core.routing.FUSED_MOE_BLOCK_M``)
    split       the FLOPs of the rows that run a tuned file on their own η_c (fitted in the fit's per-expert column,
                unbounded: a tuned tile may run faster per FLOP than the default one)
    split+pad   both
    pad+waves   pad, and a cost per wave of each grouped GEMM's CTAs over the SMs (the padded rows' M blocks times
                ⌈N / BLOCK_SIZE_N⌉, N = 2i' up and h down; in the fit's per-expert column)

    python benchmarks/moe_triton_blocks.py --data DIR --framework vllm|sglang [--gpu GPU] [--only DTYPE]
                                           [--shape hidden,inter,experts,topk,tp,ep]
    (DIR: aiconfigurator-core 0.12.0's aiconfigurator_core/systems/data; ``--shape``: that layer shape's rows per token
    count, measured / law − 1 under the base and padded forms)
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))
from kernel_rows import median_p90  # noqa: E402

CONFIGS = ROOT / "benchmarks" / "data" / "vllm_fused_moe_configs.json"
FORMS = ("base", "pad", "split", "split+pad", "pad+waves")
# get_default_config's BLOCK_SIZE_M and BLOCK_SIZE_N per framework and ironlaw dtype: (at most the local experts'
# tokens, above); block-scaled FP8's BLOCK_SIZE_N is its 128-wide weight block
DEFAULT_BLOCK_M = {("vllm", "bf16"): (16, 64), ("vllm", "fp8"): (16, 64), ("vllm", "fp8_block"): (64, 64),
                   ("sglang", "bf16"): (16, 64), ("sglang", "fp8"): (64, 128), ("sglang", "fp8_block"): (64, 64)}
DEFAULT_BLOCK_N = {("vllm", "bf16"): (32, 64), ("vllm", "fp8"): (32, 64), ("vllm", "fp8_block"): (128, 128),
                   ("sglang", "bf16"): (32, 64), ("sglang", "fp8"): (128, 256), ("sglang", "fp8_block"): (128, 128)}


def tuned_files(framework: str, gpu: str, dtype: str, path: Path = CONFIGS) -> dict:
    """{(local experts, inter/TP): (M keys, BLOCK_SIZE_M per key, BLOCK_SIZE_N per key)} of the tuned files the
    extract holds for ``framework`` (vLLM's alone), ``gpu`` and ``dtype``."""
    if framework != "vllm":
        return {}
    files = json.loads(path.read_text())["files"].values()
    return {(f["local_experts"], f["inter_tp"]): (f["m"], f["block_size_m"], f["block_size_n"]) for f in files
            if f["device"] == gpu and f["dtype"] == dtype}


def block_size_m(framework: str, dtype: str, tokens, local_experts, inter_tp, tuned: dict, side: int = 1
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(BLOCK_SIZE_M per row, whether the row runs a tuned file): the tuned file's entry of the M key nearest
    ``tokens`` where ``tuned`` holds the row's (local experts, inter/TP), else get_default_config's
    (``DEFAULT_BLOCK_M``); ``side`` 2: BLOCK_SIZE_N instead (``DEFAULT_BLOCK_N``)."""
    tokens, local = np.asarray(tokens, int), np.asarray(local_experts, int)
    small, large = (DEFAULT_BLOCK_M if side == 1 else DEFAULT_BLOCK_N)[(framework, dtype)]
    bm = np.where(tokens <= local, small, large).astype(float)
    has = np.zeros(len(tokens), bool)
    for j, key in enumerate(zip(local.tolist(), np.asarray(inter_tp, int).tolist())):
        if key in tuned:
            keys, blocks = tuned[key][0], tuned[key][side]
            bm[j] = blocks[min(range(len(keys)), key=lambda q: abs(keys[q] - tokens[j]))]
            has[j] = True
    return bm, has


def waves(rows: dict, x: np.ndarray, bw_Bps: float, bm: np.ndarray, bn: np.ndarray, sms: int) -> np.ndarray:
    """Per row the waves of both grouped GEMMs' CTAs over ``sms`` SMs: the touched experts' M blocks of ``bm`` rows
    (R from the terms' G column, as ``padding``) times ⌈N / ``bn``⌉, N = 2i' (gate-up) and h (down)."""
    h = np.asarray(rows["hidden_size"], float)
    i = np.asarray(rows["inter_size"], float) / np.asarray(rows["moe_tp_size"], float)
    r = x[:, 4] * bw_Bps / (2.0 * (2.0 * h + 3.0 * i))
    u = np.maximum(x[:, 7], 1.0)
    blocks = u * np.ceil(r / u / bm)
    return np.ceil(blocks * np.ceil(2.0 * i / bn) / sms) + np.ceil(blocks * np.ceil(h / bn) / sms)


def padding(rows: dict, x: np.ndarray, bw_Bps: float, bm: np.ndarray) -> np.ndarray:
    """Per row the padded rows over the routed rows R (1 where R is 0): R from the terms' G column (moefit.terms:
    G = 2·R·(2h + 3i')/BW), its U touched experts' share each padded to ``bm`` rows."""
    from ironlaw.core.routing import padded_rows
    h = np.asarray(rows["hidden_size"], float)
    i = np.asarray(rows["inter_size"], float) / np.asarray(rows["moe_tp_size"], float)
    r = x[:, 4] * bw_Bps / (2.0 * (2.0 * h + 3.0 * i))
    return np.where(r > 0, padded_rows(r, x[:, 7], bm) / np.maximum(r, 1e-12), 1.0)


def form_terms(x: np.ndarray, form: str, scale: np.ndarray, has: np.ndarray, wave: np.ndarray | None = None
               ) -> tuple[np.ndarray, bool]:
    """(the terms of ``form``, whether the fit takes the per-expert column): ``pad`` scales F by the padding,
    ``split`` moves the tuned rows' F into the per-expert column (their own 1/η_c), ``waves`` puts ``wave`` there."""
    out = x.copy()
    if "pad" in form:
        out[:, 2] = x[:, 2] * scale
    if "waves" in form:
        out[:, 5] = wave
        return out, True
    if "split" not in form:
        return out, False
    out[:, 5] = np.where(has, out[:, 2], 0.0)
    out[:, 2] = np.where(has, 0.0, out[:, 2])
    return out, True


def class_terms(framework: str, gpu: str, dtype: str, rows: dict, routing: str, version: str) -> tuple:
    """(terms, seconds, fit rows, the class's fit options, padding, tuned-file rows, waves) of one class: its terms as
    moe_frameworks.fit_class builds them without padding, and the config's blocks per row."""
    import moe_frameworks
    from ironlaw.machine import hardware
    from ironlaw.measure.calibrate.kernelfit import rules
    from kernel_moe import layer_terms
    x, t, keep = layer_terms(gpu, dtype, rows, routing, pairs=rules.pair_kernel(framework, dtype, gpu),
                             groups=moe_frameworks.row_groups(framework, version, rows))
    form = moe_frameworks.FORM | {"per_unaligned": rules.holds(rules.MOE_UNALIGNED_K, (framework, dtype), gpu)}
    hw = hardware.get(gpu)
    bw = hw.memory[hw.device_tier].bw_Bps
    key = (rows["num_tokens"], np.asarray(rows["num_experts"]) // np.asarray(rows["moe_ep_size"]),
           np.asarray(rows["inter_size"]) // np.asarray(rows["moe_tp_size"]), tuned_files(framework, gpu, dtype))
    bm, has = block_size_m(framework, dtype, *key)
    bn = block_size_m(framework, dtype, *key, side=2)[0]
    return x, t, keep, form, padding(rows, x, bw, bm), has, waves(rows, x, bw, bm, bn, hw.sms)


def fitted(name: str, terms: tuple):
    """(moefit.fit of form ``name`` on the class's fit rows, that form's terms); None where the form has no rows."""
    from ironlaw.measure.calibrate import moefit
    x, t, keep, form, scale, has, wave = terms
    xf, split = form_terms(x, name, scale, has, wave)
    if "split" in name and not has[keep].any():
        return None
    return moefit.fit(xf[keep], t[keep], **(form | {"per_expert": split})), xf


def scores(framework: str, gpu: str, dtype: str, rows: dict, routing: str, version: str) -> dict:
    """{form: (held-out median, p90, the tuned rows' held-out median or NaN)} of one class."""
    from ironlaw.measure.calibrate import moefit
    terms = class_terms(framework, gpu, dtype, rows, routing, version)
    t, keep, has = terms[1], terms[2], terms[5]
    out = {}
    for name in FORMS:
        got = fitted(name, terms)
        if got is None:
            continue
        err = np.abs(moefit.predict_s(got[0], got[1][~keep]) / t[~keep] - 1)
        tuned = err[has[~keep]]
        out[name] = (*median_p90(err), float(np.median(tuned)) if len(tuned) else float("nan"))
    return out


SHAPE = ("hidden_size", "inter_size", "num_experts", "topk", "moe_tp_size", "moe_ep_size")


def shape_lines(framework: str, gpu: str, dtype: str, rows: dict, routing: str, version: str, shape: tuple
                ) -> list[str]:
    """Per token count of one layer shape (``SHAPE``'s values) of the class: the measured ms and measured / law − 1
    under the base and the padded forms (each fitted on the class's fit rows)."""
    from ironlaw.measure.calibrate import moefit
    terms = class_terms(framework, gpu, dtype, rows, routing, version)
    on = np.all([np.asarray(rows[c]) == v for c, v in zip(SHAPE, shape)], axis=0)
    tokens, t = np.asarray(rows["num_tokens"])[on], terms[1][on]
    res = {}
    for name in ("base", "pad"):
        f, xf = fitted(name, terms)
        res[name] = t / moefit.predict_s(f, xf[on]) - 1
    order = np.argsort(tokens)
    return [f"{tokens[j]:6d} tokens {1e3 * t[j]:8.3f} ms  base {100 * res['base'][j]:+6.1f}%  pad "
            f"{100 * res['pad'][j]:+6.1f}%" for j in order]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="aiconfigurator-core 0.12.0's aiconfigurator_core/systems/data")
    ap.add_argument("--framework", required=True, choices=("vllm", "sglang"))
    ap.add_argument("--gpu", action="append", help="this GPU only (repeatable)")
    ap.add_argument("--only", action="append", help="this ironlaw MoE dtype class only (repeatable)")
    ap.add_argument("--shape", help="hidden,inter,experts,topk,tp,ep: that layer shape's rows per token count, measured "
                                    "/ law − 1 under the base and padded forms, instead of the scores")
    a = ap.parse_args()
    try:
        shape = tuple(int(v) for v in a.shape.split(",")) if a.shape else None
    except ValueError:
        shape = None
    if a.shape and (shape is None or len(shape) != len(SHAPE)):
        print(f"moe_triton_blocks.py: --shape {a.shape}: give six integers, {','.join(SHAPE)}", file=sys.stderr)
        return 2
    import moe_frameworks
    from ironlaw.measure.calibrate.kernelfit import rules
    got = [g for g in moe_frameworks.groups(Path(a.data), a.framework, a.gpu, a.only, say=lambda *_: None)
           if rules.pair_kernel(a.framework, g[1], g[0]) == "triton" and (a.framework, g[1]) in DEFAULT_BLOCK_M]
    if not got:
        print(f"moe_triton_blocks.py: no {a.framework} Triton MoE class under {a.data} matches --gpu/--only",
              file=sys.stderr)
        return 2
    print(f"{a.framework} Triton fused MoE, held out median / p90 (the tuned-file rows' median): " + ", ".join(FORMS))
    for gpu, dtype, _, routing, version, rows in got:
        if shape:
            print(f"{gpu} {dtype} {','.join(map(str, shape))}:")
            print("\n".join(shape_lines(a.framework, gpu, dtype, rows, routing, version, shape)) or "  no such rows")
            continue
        s = scores(a.framework, gpu, dtype, rows, routing, version)
        cells = "  ".join(f"{k} {100 * m:5.1f}% / {100 * p:5.1f}%" + ("" if np.isnan(q) else f" ({100 * q:4.1f}%)")
                          for k, (m, p, q) in s.items())
        print(f"{gpu:13s} {dtype:10s} {cells}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
