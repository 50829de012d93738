"""MLA attention as the one module vLLM's own tables time (``module_op``), and the step's attention ops priced as
that module where the engine's calibration holds its class (``with_module``).

vLLM's ``mla_generation_module`` and ``mla_context_module`` tables (aiconfigurator-core 0.12.0,
collector/vllm/collect_mla_module.py) time DeepseekV2MLAAttention's whole forward replayed as a CUDA graph: the
fused q/kv down-projection, the latent RMSNorms, q_b_proj, the rotary embedding, the cache write, the per-head
absorption BMMs (decode) or kv_b_proj (prefill), the attention kernel, its split-KV combine, o_proj and each
block-scaled linear's activation quantization. The module op carries the law's terms of all of it: the bytes of
the latent KV cache it reads and writes, of every projection's weights (the GEMMs' in ``gemm_dtype``, the two
per-head BMMs' in bf16: vLLM dequantizes kv_b_proj to bf16 W_UK and W_UV, vllm/v1/attention/backends/mla/common.py
``MLACommonImpl.process_weights_after_loading``) and of the hidden state in and out (bf16), and the FLOPs of the
projections and of the attention core (``workloads.attention.attention_core`` over ``mla_geometry``, whose
query-rows × keys × head-dim coordinates the fitted class's shape model and grid read). The module's small kernels
(norms, rotary, cache write, quantization, combine) are its class's fixed ``latency_s``, fitted with the rest on the
measured rows (``measure.calibrate.kernelfit``), so no term of the class is set by hand.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ....core.graph import Graph, Op, dtype_bytes

PREFIX = "mla_module_"
HALF = "bf16"
# a module class's field saying its table times the module less its projections, which the step prices op by op on
# the engine's GEMM classes (``kernelfit.forms.module_form``): ``gemms = "apart"``
APART = "apart"


def module_kernel(phase: str, gemm_dtype: str, kv_dtype: str) -> str:
    """The kernel class of the whole MLA module of ``phase`` ('prefill' | 'decode') whose projections run in
    ``gemm_dtype`` on a ``kv_dtype`` cache: 'mla_module_decode_fp8_kv_bf16' …"""
    return f"{PREFIX}{phase}_{gemm_dtype}_kv_{kv_dtype}"


@dataclass(frozen=True)
class ModuleShape:
    """One call of the module: ``batch`` sequences of ``seq`` tokens (decode: ``seq`` cached, one new; prefill:
    ``seq`` prompt tokens each), ``heads`` query heads on the GPU."""
    heads: int
    batch: float
    seq: float
    phase: str
    gemm_dtype: str
    kv_dtype: str

    @property
    def core(self):
        """The attention core's view of this call (``attention.CoreShape``)."""
        from ....models.workloads.attention import CoreShape
        return CoreShape(self.batch, self.seq, self.phase)

    @property
    def tokens(self) -> float:
        return self.core.tokens


def projections(m, hidden: int, heads: int, phase: str) -> tuple[list, list]:
    """([(K, N)] of the module's GEMMs, [(K, N)] per head of its per-head BMMs) for ``heads`` heads on the GPU: the
    down-projection (q latent, KV latent, rotary key; replicated, not split by TP), q_b_proj, kv_b_proj (prefill) or
    the absorption BMMs (decode), o_proj."""
    qk = m.nope + m.rope
    down = (m.q_lora or heads * qk) + m.cache_elems
    gemms = [(hidden, down)] + ([(m.q_lora, heads * qk)] if m.q_lora else []) + [(heads * m.v_dim, hidden)]
    if phase == "decode":
        return gemms, [(m.nope, m.kv_lora), (m.kv_lora, m.v_dim)]
    return gemms + [(m.kv_lora, heads * (m.nope + m.v_dim))], []


def module_op(m, hidden: int, s: ModuleShape, count: int = 1, gemms: bool = True) -> Op:
    """The whole MLA module of ``s`` as one op of kind attention named its class (``module_kernel``): the
    attention core's FLOPs, cache and activations, plus every projection's FLOPs and weights and the hidden state
    read and written (module docstring); without ``gemms``, the module less its projections (the GEMMs of
    ``projections``, which a class whose ``gemms`` is ``APART`` leaves to the engine's GEMM classes): the attention
    core and, decoding, the per-head BMMs."""
    from ....models.workloads.attention import CoreHeads, attention_core, mla_geometry
    core = attention_core(CoreHeads(s.heads, s.heads), s.core, HALF, None, count, 1, mla_geometry(m, s.heads, s.phase))
    gemms_kn, bmms = projections(m, hidden, s.heads, s.phase)
    gemms_kn, io = (gemms_kn, 1.0) if gemms else ([], 0.0)
    t = s.tokens
    flops = 2.0 * t * (sum(k * n for k, n in gemms_kn) + s.heads * sum(k * n for k, n in bmms))
    weights = sum(k * n for k, n in gemms_kn) * dtype_bytes(s.gemm_dtype) + \
        s.heads * sum(k * n for k, n in bmms) * dtype_bytes(HALF)
    by = dict(core.bytes)
    by["activations"] = by.get("activations", 0.0) + io * 2.0 * t * hidden * dtype_bytes(HALF)
    if "kv_cache" in by:
        by["kv_cache"] = by["kv_cache"] * dtype_bytes(s.kv_dtype) / dtype_bytes(HALF)
    by["weights"] = weights
    kernel = module_kernel(s.phase, s.gemm_dtype, s.kv_dtype)
    return replace(core, name=f"attention.module.{s.phase}", flops=core.flops + flops, bytes=by,
                   bytes_written=core.bytes_written + io * t * hidden * dtype_bytes(HALF),
                   shapes=f"MLA module, {s.heads} heads, {s.gemm_dtype} projections, KV {s.kv_dtype}",
                   attrs={**core.attrs, "kernel": kernel, "kv_dtype": s.kv_dtype, "module_of": "attn"})


def module_ops(g: Graph) -> list:
    """The ops of ``g``'s attention module the module op stands for: every op of module ``attn`` (the projections,
    the latent norm, rotary, BMMs, attention), collectives aside."""
    return [op for op in g.ops if op.module == "attn" and op.kind != "collective"]


def held(cal, phase: str, gemm_dtype: str, kv_dtype: str) -> bool:
    """Whether calibration ``cal`` holds the module class of ``phase`` at these dtypes."""
    return cal is not None and module_kernel(phase, gemm_dtype, kv_dtype) in (cal.kernel or {})


def apart(cal, phase: str, gemm_dtype: str, kv_dtype: str) -> bool:
    """Whether ``cal``'s module class of ``phase`` at these dtypes times the module less its projections
    (``gemms = "apart"``: they run on the engine's GEMM classes)."""
    return (cal.kernel or {}).get(module_kernel(phase, gemm_dtype, kv_dtype), {}).get("gemms") == APART


def projection_ops(m, hidden: int, s: ModuleShape, count: int = 1) -> list[Op]:
    """The module's projections (``projections``) at ``s``'s tokens as the GEMM ops ironlaw builds for them
    (``workloads.micro.gemm``, in ``s.gemm_dtype``), each ``count`` times: what a class fitted less them
    (``gemms = "apart"``) leaves to the engine's GEMM classes, in its fit (``kernelfit.ops.gemm_offsets``) as in the
    step (``with_module``)."""
    from ...workloads.micro import gemm
    from ...workloads.registry import Request
    t, out = max(1, round(s.tokens)), []
    for k, n in projections(m, hidden, s.heads, s.phase)[0]:
        spec = f"{t},{n},{k}"
        op = gemm(spec, Request(f"gemm:{spec}", phase="infer", dtype=s.gemm_dtype, device="cuda")).ops[0]
        out.append(replace(op, name=f"attention.module.{s.phase}.gemm", count=count, module="attn"))
    return out


def with_module(g: Graph, cal, heads: int, calls: list, gemm_dtype: str, kv_dtype: str,
                share=lambda op, f: op) -> tuple[Graph, str]:
    """(``g`` with its MLA attention module priced as the module class, a note saying so) where ``g`` is an MLA
    step and ``cal`` holds the class of every phase in ``calls``; (``g``, "") otherwise. ``calls``: per phase of
    the step, (phase, batch, seq, f): the module called on ``batch`` sequences of ``seq`` tokens, its work times
    ``f`` through ``share`` (``graph.scaled``: a prefill chunk as its share of one prompt, the weights read once).
    Every op of ``module_ops`` is dropped and the module ops put where the first one stood: the projections are
    priced once, inside the module, or, for a phase whose class is ``apart``, as GEMM ops of their own at that
    phase's tokens (``projection_ops``, on the engine's GEMM classes) beside the module op without them."""
    mla = g.meta.get("mla")
    old = module_ops(g)
    if not mla or not old or not calls or not all(held(cal, p, gemm_dtype, kv_dtype) for p, *_ in calls):
        return g, ""
    from ...workloads.hfconfig import MLA
    m, count = MLA(**mla), old[0].count
    away = [apart(cal, p, gemm_dtype, kv_dtype) for p, *_ in calls]
    shapes = [(ModuleShape(heads, b, s, p, gemm_dtype, kv_dtype), f) for p, b, s, f in calls]
    hidden = int(g.meta["hidden"])
    new = [share(module_op(m, hidden, sh, count, gemms=not a), f) for (sh, f), a in zip(shapes, away)]
    new += [op for (sh, f), a in zip(shapes, away) if a
            for op in projection_ops(m, hidden, replace(sh, batch=sh.batch * f), count)]
    first = g.ops.index(old[0])
    gone = {id(op) for op in old}
    ops = [op for op in g.ops[:first] if id(op) not in gone] + new + \
        [op for op in g.ops[first:] if id(op) not in gone]
    out = Graph(g.name, g.phase, g.dtype, ops, footprint=dict(g.footprint), meta=dict(g.meta),
                uncounted_ops=dict(g.uncounted_ops))
    names = ", ".join(module_kernel(p, gemm_dtype, kv_dtype) + (" less its projections, priced on the engine's GEMM "
                                                                "classes" if a else " with its projections")
                      for (p, *_), a in zip(calls, away))
    return out, f"MLA attention priced as the module its engine's own tables time ({names}), not op by op"
