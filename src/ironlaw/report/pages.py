"""``html=FILE`` of analyze, serve and search (``ironlaw.api``, the CLI's ``--html``): the path checked before any
work (``check``), then the page drawn from the result (``html``, ``serve_report``, ``train_report``,
``search_report``) and written atomically through ``core.files``. What a page shows beyond the result (the
serving frontier) is predicted here with the same options."""
from __future__ import annotations


def check(path):
    """The --html file, refused (one line, exit 2) before any work when it cannot be written; None if not asked."""
    if path is None:
        return None
    from .html import check_output
    return check_output(path)


def _write(path, text: str) -> None:
    from .html import write
    write(path, text)


def estimate(path, est) -> None:
    """The analyze report of one estimate (as ``ironlaw report``)."""
    from .html import render
    _write(path, render(est))


def train_step(path, step) -> None:
    """The training step's page; ``step`` a ``models.training.Training`` (it knows its hardware)."""
    from .train_report import render
    _write(path, render(step, step.to_dict(), step.hw))


def serve_online(path, est, kw: dict, feats, serving=None, frontier=None) -> None:
    """The online serving page of the ServeEstimate ``est`` (made with ``kw``, the options ``feats``): ``serving``
    (its ``features.options.Serving``) and ``frontier`` (its ``Frontier``) are made here when not given, with
    the same options and no plot."""
    from dataclasses import replace
    from ..models.serving.features import options
    from .serve_report import online
    quiet = replace(feats, plot=None)
    serving = serving if serving is not None else options.run(est, kw, quiet)
    frontier = frontier if frontier is not None else options.frontier(est, kw, quiet)
    _write(path, online(est, serving.to_dict(), frontier.to_dict()))


def serve_offline(path, est, kw: dict) -> None:
    """The max-throughput page of ``est`` (made with ``kw``), with the frontier over the engine's max batch size."""
    from ..models.serving import throughput as st
    from ..models.serving.features import batch_frontier
    from .serve_report import offline
    at = dict(kw, max_num_tokens=est.limits.max_num_tokens, requests=est.requests)
    doc = batch_frontier.frontier(lambda c: st.max_throughput(est.spec, est.hw, est.prompt, est.output,
                                                              **dict(at, max_batch=c)), est)
    _write(path, offline(est, est.to_dict(), doc))


def search(path, res) -> None:
    """The page of a layout search (a ``models.search.SearchResult``)."""
    from .search_report import render
    _write(path, render(res.to_dict()))
