"""Where the candidates of a search are evaluated: one process, a local process pool, or a Ray cluster.

A task is one group of candidates that share a per-device graph (``fast.evaluate``: pure, plain data in and
out: the context, the group key and the candidates' columns). Every engine runs the same tasks and the driver
assembles the results in task order, so the ranking does not depend on the engine.

    local   vectorised batches in this process (the default)
    pool    ``concurrent.futures.ProcessPoolExecutor`` with ``workers`` processes
    ray     Ray tasks (``pip install 'ironlaw[scale]'``); ``address`` names a running cluster
            ("auto", "ray://head:10001"); without it a local Ray instance is started with ``workers`` CPUs
"""
from __future__ import annotations

import numpy as np

from ...core.errors import IronlawError
from . import fast

ENGINES = ("local", "pool", "ray")


def _task(ctx: fast.Context, key: tuple, cols: dict) -> dict:
    return fast.evaluate(ctx, key, cols)


def check(engine: str, workers: int | None, address: str | None) -> str:
    if engine not in ENGINES:
        from ...core.errors import unknown
        raise unknown("engine", engine, ENGINES)
    if workers is not None and (workers < 1 or workers > 4096):
        raise IronlawError(f"--workers must be between 1 and 4096, got {workers}")
    if address is not None and engine != "ray":
        raise IronlawError("--address names a Ray cluster; use it with --engine ray")
    return engine


def run(ctx: fast.Context, tasks: list[tuple[tuple, dict]], engine: str = "local", workers: int | None = None,
        address: str | None = None, step=None) -> list[dict]:
    """``fast.evaluate`` of every (key, columns) task, in task order; ``step(n)`` after each task of n rows."""
    step = step or (lambda n: None)
    if engine == "local" and (workers or 1) == 1:
        out = []
        for key, cols in tasks:
            out.append(_task(ctx, key, cols))
            step(len(cols["tp"]))
        return out
    if engine in ("local", "pool"):
        return _pool(ctx, tasks, workers or 2, step)
    return _ray(ctx, tasks, workers, address, step)


def _pool(ctx, tasks, workers: int, step) -> list[dict]:
    from concurrent.futures import ProcessPoolExecutor, as_completed
    out: list = [None] * len(tasks)
    with ProcessPoolExecutor(max_workers=workers) as ex:
        futs = {ex.submit(_task, ctx, key, cols): i for i, (key, cols) in enumerate(tasks)}
        for f in as_completed(futs):
            i = futs[f]
            out[i] = f.result()
            step(len(tasks[i][1]["tp"]))
    return out


def ray_module():
    """Ray, imported only here; a one-line error naming the extra when it is not installed."""
    try:
        import ray
    except ImportError:
        raise IronlawError("--engine ray needs Ray: pip install 'ironlaw[scale]'") from None
    return ray


def _ray(ctx, tasks, workers: int | None, address: str | None, step) -> list[dict]:
    ray = ray_module()
    started = False
    if not ray.is_initialized():
        kw = {"address": address} if address else {"num_cpus": workers or 2}
        ray.init(include_dashboard=False, log_to_driver=False, configure_logging=False, **kw)
        started = True
    try:
        remote = ray.remote(_task)
        ctx_ref = ray.put(ctx)
        refs = [remote.remote(ctx_ref, key, cols) for key, cols in tasks]
        index = {r: i for i, r in enumerate(refs)}
        out: list = [None] * len(tasks)
        pending = list(refs)
        while pending:
            done, pending = ray.wait(pending, num_returns=1)
            for r in done:
                i = index[r]
                out[i] = ray.get(r)
                step(len(tasks[i][1]["tp"]))
        return out
    finally:
        if started:
            ray.shutdown()


def assemble(n: int, tasks_rows: list[np.ndarray], results: list[dict]) -> dict[str, np.ndarray]:
    """The per-task result columns put back in candidate order."""
    out: dict[str, np.ndarray] = {}
    for rows, res in zip(tasks_rows, results):
        for k, v in res.items():
            if k not in out:
                out[k] = np.zeros(n, dtype=np.asarray(v).dtype)
            out[k][rows] = v
    return out
