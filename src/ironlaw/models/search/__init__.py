"""Layout search: every valid way to run a workload on N devices, predicted, ranked (``ironlaw search``).

    train   ``search.train.search``: (tp, pp, cp, dp, ep, micro_batch, interleave, recompute, zero,
            sequence_parallel) by tokens/s per GPU, evaluated as array math (``fast``) on one process, a
            process pool or Ray (``engines``), the top re-predicted by ``parallel.train_step``
    serve   ``search.serve.search``: by output tokens/s per GPU — tp × pp × ep × dtype in the offline
            max-throughput scenario (``serving_throughput``), or tp × dtype × concurrency within latency
            targets (``serving.estimate``)
    rerun   ``search.rerun.command``: the ``ironlaw analyze``/``serve`` command that re-runs the #1 layout
"""
from __future__ import annotations

from dataclasses import dataclass, field

SCHEMA = "ironlaw.search/1"


@dataclass
class SearchResult:
    phase: str
    spec: str
    hardware: str
    dtype: str
    setup: dict                      # gpus, nodes, global_batch, seq (train); prompt, output, slo (serve)
    candidates_evaluated: int
    fits: int
    top: list[dict]
    engine: str
    search_s: float
    check: dict = field(default_factory=dict)
    columns: dict | None = field(default=None, repr=False)     # every candidate (numpy columns), for callers
    results: dict | None = field(default=None, repr=False)
    rerun: str = ""                  # the command that re-runs the #1 layout alone (``rerun.command``)

    @property
    def time_s(self) -> float | None:
        """The best candidate's one wall time (train: the step; serving's max-throughput: its requests served);
        None for the online steady state (continuous batching at a set concurrency), which has none: its rows
        carry ``request_latency_s``."""
        return self.top[0].get("time_s")

    def to_dict(self) -> dict:
        wall = {} if self.time_s is None else {"time_s": self.time_s}
        return {"schema": SCHEMA, "phase": self.phase, "workload": self.spec, "hardware": self.hardware,
                "dtype": self.dtype, **self.setup, "engine": self.engine,
                "candidates_evaluated": self.candidates_evaluated, "fits": self.fits, "search_s": self.search_s,
                **wall, "top": self.top, "check": self.check, **({"rerun": self.rerun} if self.rerun else {})}
