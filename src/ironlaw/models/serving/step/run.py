"""Pricing one engine step under both ``serve`` modes: the engine's run (``EngineRun``), its CUDA-graph padding
(``padded``), one step's seconds (``step_seconds``) and a step built elsewhere priced the same way
(``graph_seconds``)."""
from __future__ import annotations

from dataclasses import dataclass, replace

from ....core.graph import Graph, dtype_bytes
from ...precision import moe_recipe
from .checkpoint import StoredExperts, half_mla_bmm, modelopt
from .collectives import engine_collectives
from .constants import CUDA_GRAPH_BATCHES, ServingConstants
from .graph import is_head, scaled, step_graph
from .host import charged_s, host_step, launches
from .mla_module import with_module
from .moe import GROUPED_GEMM, grouped, moe_kernels, on_router, on_table_rows, unaligned_down


def padded(batch: int, largest: int, sizes: tuple = CUDA_GRAPH_BATCHES) -> int:
    """The captured CUDA-graph batch a decode step of ``batch`` sequences is padded to: the next size of the
    list ``sizes``, capped at the largest capturable one (min(max_batch_size, max_num_tokens, the list's last);
    TensorRT-LLM pads to it when a listed size exceeds it: _filter_cuda_graph_batch_sizes); beyond it the step
    runs unpadded."""
    largest = min(largest, sizes[-1])
    if batch > largest:
        return batch
    return min(next((b for b in sizes if b >= batch), batch), largest)


@dataclass
class EngineRun:
    """What prices one engine step, whichever mode forms the batch (``engine.engine_run`` builds it)."""
    spec: str
    hw: object                       # as the user named it (links, memory)
    law_hw: object                   # with the serving constants as its calibration (``engine_hw``)
    lay: object                      # engine.Layout: tp, pp, ep, attention_dp
    dtype: str
    kv_dtype: str
    prompt: int
    output: int
    footprint: dict                  # per engine, unsharded: weights, kv_cache, activations
    constants: ServingConstants
    max_batch: int                   # the largest captured CUDA-graph batch (``engine.graph_ceiling``)
    experts: StoredExperts | None = None  # the routed experts as the checkpoint stores them (no --dtype given)
    decode_context: int | None = None     # a decode token's mean context (None: prompt + output // 2; a mix of
                                          # lengths: its token-weighted one, ``serving.lengths``)
    prefill_prompt: int | None = None     # the prompt whose causal pairs a prompt token carries (None: prompt)


def _stage(g: Graph, lay) -> Graph:
    """One pipeline stage: the layers' ops at layers/pp, plus the send of the step's activations onward (the pair
    within the stages' block of tp·pp devices: its slowest boundary, ``network.topology.intra_link``)."""
    if lay.pp == 1:
        return g
    from ....core.graph import Op
    L = g.meta["layers"]
    ops = [replace(op, count=L // lay.pp) if op.count == L else op for op in g.ops]
    nbytes = float(g.meta["tokens"]) * g.meta["hidden"] * dtype_bytes("bf16") / (lay.tp if lay.tp > 1 else 1)
    ops.append(Op("pp.send", "collective", network_bytes=nbytes, dtype=g.dtype, module="pp",
                  collective="sendrecv", group=(2, 1, 1, lay.tp * lay.pp), shapes="stage to stage"))
    return Graph(g.name, g.phase, g.dtype, ops, footprint=dict(g.footprint), meta=dict(g.meta),
                 uncounted_ops=dict(g.uncounted_ops))


def step_seconds(run: EngineRun, decode: int, prefill_tokens: float, contexts: float, pad: bool):
    """(seconds, Estimate) of one engine step: ``decode`` sequences generating, ``prefill_tokens`` prompt tokens,
    ``contexts`` prompts finishing their prefill in it. A padded (decode-only) step replays a CUDA graph where the
    runtime captures them (``ServingConstants.cuda_graphs``); any other runs eagerly and lasts at least the host's
    launches of its kernels (``host_floor_s``). An engine that
    does not mix (``ServingConstants.mixed_steps`` False) runs the prompt tokens as a step of their own, then the
    decode batch: the two steps' seconds add up. The one pricing of a step under both ``serve`` modes: the online
    steady state and the max-throughput waves."""
    if not run.constants.mixed_steps and decode >= 1 and prefill_tokens > 0:      # a prefill batch, then decode
        t_pre, est = step_seconds(run, 0, prefill_tokens, contexts, pad=False)
        return t_pre + step_seconds(run, decode, 0.0, 0.0, pad=True)[0], est
    return _one_step(run, decode, prefill_tokens, contexts, pad)


def _one_step(run: EngineRun, decode: int, prefill_tokens: float, contexts: float, pad: bool):
    """(seconds, Estimate) of one step carrying all of ``decode`` and ``prefill_tokens`` (``step_seconds``)."""
    from ... import parallel
    pad = pad and run.constants.cuda_graphs          # without CUDA graphs a decode step runs eagerly, unpadded
    gemm = padded(decode, run.max_batch, run.constants.cuda_graph_batches) if pad else decode + prefill_tokens
    g = step_graph(run.spec, run.hw, run.dtype, run.kv_dtype, gemm_tokens=gemm, decode=decode,
                   context=run.decode_context or run.prompt + run.output // 2,
                   prompt=run.prefill_prompt or run.prompt, prefill_tokens=prefill_tokens,
                   head_tokens=(gemm if pad else decode + contexts), moe_tables=run.constants.moe_tables,
                   experts=run.experts)
    g.footprint = dict(run.footprint)
    if run.lay.attention_dp:
        from ..parallel import shard_attention_dp
        g = shard_attention_dp(g, run.hw, run.lay, run.constants.pad_on_dummy)
    elif run.lay.ep > 1:                             # vLLM's and SGLang's EP under TP attention
        from ..tpexperts import shard_ep_under_tp
        g = shard_ep_under_tp(g, run.hw, run.lay)
    elif run.lay.tp > 1:
        g = parallel.shard_inference(g, run.hw, {"tp": run.lay.tp, "gpus": run.lay.tp})
    g = module_step(run, g, decode, prefill_tokens, decode)
    prompts = max(contexts, 1.0) if prefill_tokens > 0 else 0.0
    t, est = priced(run, _stage(engine_collectives(run, g), run.lay), eager=not pad, sequences=decode + prompts,
                    prompts=prompts)
    if float(est.placement.spilled_bytes) > 0 or not bool(est.placement.fits):
        raise RuntimeError(f"serving step of {run.spec} spills past device memory: the capacity check missed it")
    return t, est


def module_step(run: EngineRun, g: Graph, decode: int, prefill_tokens: float, batch: int) -> Graph:
    """``g`` (one attention rank's step, sharded) with an MLA model's attention module priced as the framework's
    module class where the engine's calibration holds it (``ServingConstants.mla_module``, ``with_module``): the
    decode sequences (``batch``: the real ones, not the CUDA graph's padded slots, which hold no cache and read
    none, as the op-by-op step's attention counts them) at the step's context, the prompt tokens
    as their share of one prompt's module (as the step prices a prefill chunk's attention, ``step_graph``); ``g`` as it is otherwise. The note saying so rides in ``meta["mla_module"]``."""
    if not run.constants.mla_module or decode < 1 and prefill_tokens <= 0:
        return g
    heads = int(g.meta["heads"]) // (1 if run.lay.attention_dp else run.lay.tp)
    prompt = run.prefill_prompt or run.prompt
    calls = ([("decode", batch, run.decode_context or run.prompt + run.output // 2, 1.0)] if decode >= 1 else []) + \
        ([("prefill", 1, prompt, prefill_tokens / prompt)] if prefill_tokens > 0 else [])
    out, note = with_module(g, run.law_hw.calibration, heads, calls, run.dtype, run.kv_dtype, scaled)
    if note:
        out.meta["mla_module"] = note
    return out


def priced(run: EngineRun, g: Graph, eager: bool, sequences: float, prompts: float = 0.0):
    """(seconds, Estimate) of the engine step ``g`` (sharded, staged, its collectives in bf16) carrying
    ``sequences`` requests, ``prompts`` of them admitted in it: the law on the engine's calibration
    (``run.law_hw``) or the host's work for the step (``host_step``: its launches when ``eager``, the executor's
    per-step, per-request and per-prompt work), whichever is longer under an overlap scheduler, the Python work added
    where the executor runs serially (``HostStep.step_s``), plus ``step_s``. The
    step's graph keeps its ``HostStep`` (meta ``host``)."""
    from ....law import law
    g.ops = [unaligned_down(op, run.law_hw) for op in g.ops]     # K as the shard runs it
    if run.constants.mla_bmm_half:
        g.ops = [half_mla_bmm(op) for op in g.ops]
    g.meta.update(eager=eager, launches=launches(g))
    est = law.predict(g, run.law_hw)
    g.meta["host"] = host_step(run, g, eager, sequences, prompts)
    return charged_s(est, run.constants), est


def graph_seconds(run: EngineRun, g: Graph):
    """(seconds, Estimate) of a step built outside ``step_graph`` (a workload graph of one phase, already
    sharded: the serving features' verify, draft and prefix-cached prefill steps) priced as ``step_seconds``
    prices its own: its ops as the checkpoint runs them (``modelopt``, the routed experts' ``grouped`` GEMM), its
    TP collectives as the engine runs them (``engine_collectives``), a prefill's final norm on each prompt's last
    token only (``is_head``), eager when it carries prompt tokens (a prefill), else one CUDA graph."""
    prefill = g.phase == "prefill"
    kernels = moe_kernels(run.hw, run.dtype, moe_recipe(g)) if run.constants.moe_tables else (GROUPED_GEMM, None)
    per_token = float(g.meta.get("batch", 1)) / float(g.meta.get("tokens", 1)) if prefill else 1.0
    ops = []
    for op in g.ops:
        if op.kind != "collective":
            op = on_router(on_table_rows(grouped(modelopt(op, g.dtype), *kernels), run.hw, g.meta, g.meta.get("tokens", 1)),
                           run.hw, g.meta, kernels[0])
            if per_token != 1.0 and is_head(op) and op.attrs.get("role") == "norm":
                op = scaled(op, per_token)
        ops.append(op)
    out = Graph(g.name, g.phase, g.dtype, ops, footprint=dict(g.footprint), meta=dict(g.meta),
                uncounted_ops=dict(g.uncounted_ops))
    n = float(g.meta.get("batch", 1))
    return priced(run, engine_collectives(run, out), eager=prefill, sequences=n, prompts=n if prefill else 0.0)
