"""``--html FILE`` of serve, analyze and search: the output path checked before any work (``check``), the page
drawn by ``ironlaw.report`` from the result and its JSON document, written atomically (``core.files``)."""
from __future__ import annotations

import sys


def check(path):
    """The --html file, refused (one line, exit 2) before any work when it cannot be written; None if not asked."""
    if path is None:
        return None
    from ..report.html import check_output
    return check_output(path)


def _write(path, text: str) -> None:
    from ..core.units import fmt
    from ..report.html import write
    out = write(path, text)
    sys.stderr.write(f"wrote {out} ({fmt(len(text.encode()), 'B')})\n")


def serve_online(path, est, doc: dict, frontier_doc: dict) -> None:
    """The online serving report of ``est``: ``doc`` its JSON document, ``frontier_doc`` its concurrency
    frontier (both made by ``_serve_features``)."""
    from ..report import serve_report
    _write(path, serve_report.online(est, doc, frontier_doc))


def serve_offline(path, est, doc: dict, kw: dict) -> None:
    """The max-throughput report, with the frontier over the engine's max batch size."""
    if path is None:
        return
    from ..models.serving import throughput as st
    from ..models.serving.features import batch_frontier
    from ..report import serve_report
    at = dict(kw, max_num_tokens=est.limits.max_num_tokens, requests=est.requests)
    fdoc = batch_frontier.frontier(lambda c: st.max_throughput(est.spec, est.hw, est.prompt, est.output,
                                                              **dict(at, max_batch=c)), est)
    _write(path, serve_report.offline(est, doc, fdoc))


def estimate(path, est) -> None:
    """The analyze report of one estimate (as ``ironlaw report``)."""
    if path is None:
        return
    from ..report import html
    _write(path, html.render(est))


def train_step(path, step, doc: dict, hw) -> None:
    if path is None:
        return
    from ..report import train_report
    _write(path, train_report.render(step, doc, hw))


def search(path, doc: dict) -> None:
    if path is None:
        return
    from ..report import search_report
    _write(path, search_report.render(doc))
