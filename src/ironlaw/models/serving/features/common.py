"""The workload graphs of one serving phase as ``serving.online.estimate`` builds them, for the feature modules
(each prices its steps on the estimate it extends: ``ServeEstimate.price``)."""
from __future__ import annotations

from dataclasses import dataclass

from ....core.errors import IronlawError


@dataclass(frozen=True)
class Setup:
    """The options a ServeEstimate was made with that the features rebuild graphs from."""
    dtype: str | None = None
    kv_dtype: str | None = None
    tp: int = 1
    chunk: int | None = None      # --chunk as given (None: none given, the engine may chunk on its own)


def graph(spec: str, hw, phase: str, batch, seq, s: Setup):
    """The serving graph of ``spec``: one phase, KV in ``s.kv_dtype`` (default: ``serving.with_kv``'s), sharded over ``s.tp`` devices."""
    from ... import parallel, workloads
    from .. import online as serving
    g = workloads.resolve(workloads.Request(spec, phase=phase, batch=batch, seq=seq, dtype=s.dtype,
                                            device="cuda" if hw.kind == "gpu" else "cpu"))
    if g.phase != phase or "kv_cache_bytes" not in g.meta:
        raise IronlawError(f"{spec}: serving needs a decoder LLM with prefill and decode phases")
    g = serving.with_kv(g, s.kv_dtype)
    if s.tp > 1:
        g = parallel.shard_inference(g, hw, {"tp": s.tp, "gpus": s.tp})
    return g


def mean_context(base) -> int:
    return int(round(base.prompt + base.output / 2.0))


def no_chunk(base, feature: str, s: Setup) -> None:
    """``feature`` prices prompts prefilled apart: refused where ``base`` chunks them, naming the --chunk given or,
    given none, the engine whose scheduler chunks on its own (vLLM's mixed steps) and the ones that do not."""
    if s.chunk is not None:
        raise IronlawError(f"{feature} is modelled without chunked prefill; drop --chunk {s.chunk}")
    if base.chunk is not None:
        raise IronlawError(f"{feature} is modelled without chunked prefill, which the engine's scheduler runs on "
                           f"every prompt (vLLM V1: always on, {base.chunk:,} prompt tokens a mixed step); "
                           f"--engine trtllm or sglang prefill prompts apart")
