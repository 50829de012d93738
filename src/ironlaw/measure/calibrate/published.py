"""Observations from published GPU measurements on A100: PrincetonUniversity/LLMCompass ``ae/`` (BSD-3-Clause)
and microsoft/vidur ``data/profiling/compute/a100/`` (MIT), as CSV files in the layout described below.

Each measured row becomes a ``fitcore.Observation``: the op as ironlaw's builders describe it
(FLOPs, bytes per storage class, kind, dtype) and the published time. ``calibrate.fit`` turns a
part of them into a ``[calibration]`` table; ``calibrate.report`` scores the rest.

- LLMCompass (``llmcompass_{matmul,softmax,layernorm,gelu}_a100.csv``): fp16 sweeps timed from the
  host around each torch call, so every time carries a constant host-side cost. It is taken from
  the data: the smallest case of each sweep (a kernel with almost no work) minus
  ``KERNEL_FLOOR_S``, and is added to the prediction as ``offset_s`` (not a property of the GPU).
- vidur (``vidur_llama{2_7b,3_8b}_a100_*.csv``): CUDA time of each op of ONE Llama layer vs
  number of tokens and tensor-parallel degree (weights sharded), fp16, sarathi kernels.
"""
from __future__ import annotations

import csv
from pathlib import Path

from .fitcore import Observation
from ...core.errors import IronlawError
from ...core.graph import Op, dtype_bytes
from ...models.workloads.common import elementwise, linear
# the same FLOP conventions as the analytic transformer builder, so the fit applies to its graphs
from ...core import flopcount
from ...models.workloads.transformer import ACT_FLOPS, ROPE_FLOPS
from ...models.whatif.fusion import SOFTMAX_KERNEL

DTYPE = "fp16"
# shortest CUDA time of a tiny kernel in the vidur files (add / rope at 1–16 tokens: 2–4 µs)
KERNEL_FLOOR_S = 3e-6
VIDUR_OPS = ("emb", "input_layernorm", "attn_pre_proj", "attn_rope", "attn_post_proj",
             "post_attention_layernorm", "mlp_up_proj", "mlp_act", "mlp_down_proj", "add")
KERNELS = {"emb": "embedding", "input_layernorm": "rms_norm", "post_attention_layernorm": "rms_norm",
           "attn_rope": "rotary_embedding", "mlp_act": "silu_and_mul", "add": "add"}


def _rows(path: Path) -> list[dict]:
    try:
        lines = [ln for ln in Path(path).read_text().splitlines() if ln and not ln.startswith("#")]
    except OSError as e:
        raise IronlawError(f"{path}: cannot read published measurements: {e.__class__.__name__}") from None
    return list(csv.DictReader(lines))


def _with_offset(obs: list[Observation]) -> list[Observation]:
    floor = min(o.time_s for o in obs) - KERNEL_FLOOR_S
    for o in obs:
        o.offset_s = max(floor, 0.0)
    return obs


def llmcompass_matmul(path: Path, dataset: str = "llmcompass matmul") -> list[Observation]:
    out = []
    for r in _rows(path):
        m, n, k = int(r["M"]), int(r["N"]), int(r["K"])
        t = float(r["latency"].removesuffix("ms")) * 1e-3
        out.append(Observation(linear(f"gemm {m}x{n}x{k}", m, k, n, DTYPE), t, dataset))
    return _with_offset(out)


def llmcompass_rows(path: Path, kind: str, dataset: str) -> list[Observation]:
    """softmax / layernorm (M×N rows) and GELU (num_elements) sweeps, throughput in G elements/s."""
    out = []
    b = dtype_bytes(DTYPE)
    for r in _rows(path):
        if "num_elements" in r:
            elems, label = int(r["num_elements"]), r["num_elements"]
            op = elementwise(f"gelu {label}", elems, DTYPE, flops_per_elem=ACT_FLOPS["gelu"])
        else:
            m, n = int(r["M"]), int(r["N"])
            elems, label = m * n, f"{m}x{n}"
            wb = 2 * n * b if kind == "norm" else 0.0
            per = flopcount.LAYERNORM if kind == "norm" else flopcount.SOFTMAX
            op = elementwise(f"{kind} {label}", elems, DTYPE, flops_per_elem=per, kind=kind, weight_bytes=wb)
            if kind == "softmax":                    # torch.softmax over rows: the kernel eager attention runs
                op.attrs["kernel"] = SOFTMAX_KERNEL
        out.append(Observation(op, elems / (float(r["G_elements_per_s"]) * 1e9), dataset))
    return _with_offset(out)


def llama_layer_ops(tokens: int, tp: int, e: int, x: int, nh: int, nkv: int) -> dict[str, list[Op]]:
    """The ops vidur times for one Llama layer, as ironlaw describes them (per GPU of a TP group)."""
    hd = e // nh
    b = dtype_bytes(DTYPE)
    qkv = (nh + 2 * nkv) * hd // tp
    emb = Op("emb", "embedding", flops=0.0, bytes={"weights": tokens * e * b, "activations": tokens * e * b},
             dtype=DTYPE, shapes=f"[{tokens},{e}]", bytes_written=tokens * e * b)
    norm = lambda name: elementwise(name, tokens * e, DTYPE, flops_per_elem=flopcount.RMSNORM, kind="norm",  # noqa: E731
                                    weight_bytes=e * b)
    ops = {
        "emb": [emb],
        "input_layernorm": [norm("input_layernorm")],
        "attn_pre_proj": [linear("attn_pre_proj", tokens, e, qkv, DTYPE)],
        # rotary embedding of q and k (as the transformer builder counts it: two inputs, one output)
        "attn_rope": [elementwise("attn_rope", tokens * (nh + nkv) * hd // tp, DTYPE, flops_per_elem=ROPE_FLOPS,
                                  inputs=2)],
        "attn_post_proj": [linear("attn_post_proj", tokens, e // tp, e, DTYPE)],
        "post_attention_layernorm": [norm("post_attention_layernorm")],
        "mlp_up_proj": [linear("mlp_up_proj", tokens, e, 2 * x // tp, DTYPE)],
        # SiLU(gate) * up: reads both halves, writes one
        "mlp_act": [elementwise("mlp_act", tokens * x // tp, DTYPE, flops_per_elem=ACT_FLOPS["silu"] + 1.0,
                                inputs=2)],
        "mlp_down_proj": [linear("mlp_down_proj", tokens, x // tp, e, DTYPE)],
        "add": [elementwise("add", tokens * e, DTYPE, flops_per_elem=1.0, inputs=2)],
    }
    # the kernels vidur timed (vLLM/sarathi), named as the transformer builder names them
    for name, kernel in KERNELS.items():
        ops[name][0].attrs["kernel"] = kernel
    return ops


def vidur(path: Path, dataset: str, tps: tuple[int, ...] | None = None, ops=VIDUR_OPS) -> list[Observation]:
    """Either the per-op median file (num_tokens, tp, <op>_ms) or a raw vidur mlp.csv."""
    out = []
    for r in _rows(path):
        if "tp" in r:
            tokens, tp = int(r["num_tokens"]), int(r["tp"])
            shape = (4096, 14336, 32, 8)                       # Llama-3-8B (the file's header)
            get = lambda op: float(r[f"{op}_ms"]) * 1e-3  # noqa: E731
        else:
            tokens, tp = int(r["num_tokens"]), int(r["num_tensor_parallel_workers"])
            shape = (int(r["n_embd"]), int(r["n_expanded_embd"]), int(r["n_head"]), int(r["n_kv_head"]))
            get = lambda op: float(r[f"time_stats.{op}.median"]) * 1e-3  # noqa: E731
        if tps is not None and tp not in tps:
            continue
        layer = llama_layer_ops(tokens, tp, *shape)
        for name in ops:
            (op,) = layer[name]
            op.name = f"{name} t={tokens} tp={tp}"
            out.append(Observation(op, get(name), dataset))
    return out


def llmcompass_gpt3_layer_gemms(path: Path, phase: str, dataset: str) -> list[Observation]:
    """The four GEMMs of ONE GPT-3-175B layer per GPU of a 4-way tensor-parallel A100 group (fp16).

    d_model 12288; prefill: batch 8 × seq 2048 tokens; decode: batch 8, one token each.
    """
    d, tp = 12288, 4
    m = 8 * 2048 if phase == "prefill" else 8
    dims = {"Q_K_V": (d, 3 * d // tp), "Wo_proj": (d // tp, d), "W1_proj": (d, 4 * d // tp), "W2_proj": (4 * d // tp, d)}
    out = []
    for r in _rows(path):
        if r["op"] in dims:
            k, n = dims[r["op"]]
            out.append(Observation(linear(f"{r['op']} {phase}", m, k, n, DTYPE), float(r["latency_s"]), dataset))
    return out
