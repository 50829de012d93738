"""A distribution of request lengths (``serve --lengths FILE``): per-request (prompt, output) token pairs.

The file is a CSV with a header naming the columns ``prompt`` and ``output`` (other columns are read past; lines
starting with ``#`` are comments), or JSON Lines, one object per request with the keys ``prompt`` and ``output``
(other keys read past).
Every length is a whole number of tokens, at least 1. What the serving scenarios take of the mix:

    requests          the file's, in order (``cycled`` repeats them to ``--requests``, a part spread evenly)
    prompt, output    the means (rounded to whole tokens): the steady state's rate of requests per step, by Little's
                      law the batch over the mean life of a request, and its prompt tokens per step
    decode context    token-weighted: Σ o·(p + o//2) / Σ o, the mean context a decode token reads (one length per
                      request gives p + o//2; a long tail of outputs decodes most of the tokens, at long contexts)
    prefill prompt    Σ p² / Σ p: the prompt whose causal pairs per prompt token match the mix's (a prompt of p
                      tokens has p²/2 pairs)
    KV per sequence   each request reserves the whole blocks of its own prompt + output; the sequences in flight
                      are each request in proportion to the steps it holds its KV, its output (``weighted``)
    the run's end     where the requests differ, each finishes at its own length (``throughput.drained``,
                      ``serving.drain``)
"""
from __future__ import annotations

import csv
import json
import math
import numbers
from dataclasses import dataclass
from pathlib import Path

from ...core.errors import IronlawError

COLUMNS = ("prompt", "output")


@dataclass(frozen=True)
class Lengths:
    """Per-request lengths read from ``source``; ``lines``: each request's line in the file (for the messages)."""
    source: str
    prompts: tuple
    outputs: tuple
    lines: tuple

    @property
    def requests(self) -> int:
        return len(self.prompts)

    @property
    def prompt(self) -> int:
        """The mean prompt in whole tokens (module docstring)."""
        return max(int(round(sum(self.prompts) / self.requests)), 1)

    @property
    def output(self) -> int:
        """The mean output in whole tokens (module docstring)."""
        return max(int(round(sum(self.outputs) / self.requests)), 1)

    @property
    def uniform(self) -> bool:
        """Every request of the same lengths."""
        return len(set(zip(self.prompts, self.outputs))) == 1

    @property
    def decode_context(self) -> int:
        """The token-weighted context a decode token reads (module docstring)."""
        return int(round(sum(o * (p + o // 2) for p, o in zip(self.prompts, self.outputs)) / sum(self.outputs)))

    @property
    def prefill_prompt(self) -> int:
        """The prompt whose causal pairs per prompt token are the mix's (module docstring)."""
        return int(round(sum(p * p for p in self.prompts) / sum(self.prompts)))

    def longest(self) -> int:
        """The index of the request of most tokens."""
        return max(range(self.requests), key=lambda i: self.prompts[i] + self.outputs[i])

    def where(self, i: int) -> str:
        """Request ``i`` as the messages name it: the file and its line."""
        return f"--lengths {self.source}, line {self.lines[i]}"

    def cycled(self, n: int) -> "Lengths":
        """``n`` requests drawn evenly over the file (``--requests`` beside ``--lengths``): its whole passes, in
        order, then the rest spread at an even stride, so that a part of a file stored in blocks (a dataset's
        sub-sets one after another) carries the whole file's mix rather than its first block's."""
        whole, rest = divmod(n, self.requests)
        idx = [i % self.requests for i in range(whole * self.requests)] + \
            [(j * self.requests) // rest for j in range(rest)]
        return Lengths(self.source, tuple(self.prompts[i] for i in idx), tuple(self.outputs[i] for i in idx),
                       tuple(self.lines[i] for i in idx))

    def on(self, run):
        """The engine run ``run`` (``step.EngineRun``, at the mean prompt and output) with its steps' decode tokens
        reading the mix's token-weighted context and its prompt tokens carrying the mix's causal pairs."""
        from dataclasses import replace
        return replace(run, decode_context=self.decode_context, prefill_prompt=self.prefill_prompt)

    def weighted(self, per_request, block: int) -> float:
        """The mean of ``per_request(tokens)`` over the sequences in flight (module docstring, KV per sequence):
        each request's whole blocks of prompt + output, weighted by its output; evaluated once per distinct
        block count."""
        weights: dict[int, int] = {}
        for p, o in zip(self.prompts, self.outputs):
            t = math.ceil((p + o) / block) * block
            weights[t] = weights.get(t, 0) + o
        return sum(w * per_request(t) for t, w in weights.items()) / sum(weights.values())

    def stats(self) -> dict:
        """What was read: requests, mean, p50 and p99 of the prompts and outputs, the mix's decode context."""
        def summary(values) -> dict:
            s = sorted(values)
            return {"mean": sum(s) / len(s), "p50": _rank(s, 0.50), "p99": _rank(s, 0.99), "max": s[-1]}
        return {"source": self.source, "requests": self.requests, "prompt": summary(self.prompts),
                "output": summary(self.outputs), "decode_context": self.decode_context,
                "prefill_prompt": self.prefill_prompt}


def _rank(sorted_values: list, q: float) -> int:
    """The nearest-rank ``q`` quantile of ``sorted_values``."""
    return sorted_values[max(math.ceil(q * len(sorted_values)) - 1, 0)]


def read(path) -> Lengths:
    """The requests of the file at ``path`` (module docstring); one line naming the file (and line) where it cannot
    be read: missing, no ``prompt`` or ``output`` column, a length not a whole number or below 1, no requests."""
    if isinstance(path, Lengths):
        return path
    p = Path(str(path))
    if not p.is_file():
        raise IronlawError(f"--lengths {path}: no such file")
    try:
        text = p.read_text(encoding="utf-8-sig")         # a spreadsheet's byte-order mark is no column name
    except (OSError, UnicodeDecodeError) as e:
        raise IronlawError(f"--lengths {path}: cannot be read ({e.__class__.__name__})") from None
    numbered = [(n, line) for n, line in enumerate(text.splitlines(), 1)
                if line.strip() and not line.lstrip().startswith("#")]
    if not numbered:
        raise IronlawError(f"--lengths {path} holds no requests (columns {', '.join(COLUMNS)})")
    rows = _jsonl(path, numbered) if numbered[0][1].lstrip().startswith("{") else _csv(path, numbered)
    if not rows:
        raise IronlawError(f"--lengths {path} holds no requests (a header and no rows)")
    lines, prompts, outputs = zip(*rows)
    return Lengths(str(path), prompts, outputs, lines)


def _csv(path, numbered: list) -> list:
    """[(line, prompt, output)] of a CSV's rows under its header."""
    reader = csv.reader([line for _, line in numbered])
    header = [h.strip() for h in next(reader)]
    for col in COLUMNS:
        if col not in header:
            raise IronlawError(f"--lengths {path}, line {numbered[0][0]}: no '{col}' column (the header names "
                               f"{', '.join(repr(h) for h in header)}; the file needs {', '.join(COLUMNS)})")
    at = [header.index(col) for col in COLUMNS]
    rows = []
    for (n, _), cells in zip(numbered[1:], reader):
        if len(cells) <= max(at):
            raise IronlawError(f"--lengths {path}, line {n}: {len(cells)} cells, the header names {len(header)}")
        rows.append((n,) + tuple(_tokens(path, n, col, cells[i].strip()) for col, i in zip(COLUMNS, at)))
    return rows


def _jsonl(path, numbered: list) -> list:
    """[(line, prompt, output)] of a JSON Lines file."""
    rows = []
    for n, line in numbered:
        try:
            obj = json.loads(line)
        except json.JSONDecodeError:
            raise IronlawError(f"--lengths {path}, line {n}: not a JSON object") from None
        if not isinstance(obj, dict):
            raise IronlawError(f"--lengths {path}, line {n}: not a JSON object")
        for col in COLUMNS:
            if col not in obj:
                raise IronlawError(f"--lengths {path}, line {n}: no '{col}' key (each line needs "
                                   f"{', '.join(COLUMNS)})")
        rows.append((n,) + tuple(_tokens(path, n, col, obj[col]) for col in COLUMNS))
    return rows


def _tokens(path, line: int, col: str, value) -> int:
    """``value`` as a whole number of tokens, at least 1."""
    if isinstance(value, bool) or not isinstance(value, (int, str)) or (
            isinstance(value, str) and not value.lstrip("+-").isdigit()):
        raise IronlawError(f"--lengths {path}, line {line}: {col} {value!r} is not a whole number of tokens")
    if int(value) < 1:
        raise IronlawError(f"--lengths {path}, line {line}: {col} {int(value)} must be at least 1 token")
    return int(value)


def check_context(lengths: Lengths, spec: str, context_tokens: int | None) -> None:
    """Every request fits the model's context (``engine.check_context``): one line naming the first that does
    not."""
    if not context_tokens:
        return
    for i, (p, o) in enumerate(zip(lengths.prompts, lengths.outputs)):
        if p + o > context_tokens:
            raise IronlawError(f"{lengths.where(i)}: prompt {p} + output {o} = {p + o:,} tokens exceed the "
                               f"{context_tokens:,}-token context of {spec} (the positions its config states); an "
                               f"engine refuses such a request")


def given(path, prompt, output, requests) -> tuple:
    """``serve``'s (prompt, output, requests, {"lengths": Lengths} or {}): ``prompt`` and ``output`` (None: 1024 and
    256) where no file is given, else the file's means, its requests (``--requests`` cycles them:
    ``Lengths.cycled``) and its Lengths. The file beside ``--prompt``/``--output`` (it gives both) is refused in one
    line."""
    if path is None:
        return (1024 if prompt is None else prompt), (256 if output is None else output), requests, {}
    if prompt is not None or output is not None:
        both = " and ".join(f for f, v in (("--prompt", prompt), ("--output", output)) if v is not None)
        raise IronlawError(f"--lengths {path} gives every request's prompt and output tokens; drop {both}")
    mix = read(path)
    if requests is not None:
        if isinstance(requests, bool) or not isinstance(requests, numbers.Integral) or requests < 1:
            raise IronlawError(f"--requests must be a whole number of at least 1, got {requests!r}")
        mix = mix.cycled(int(requests))
    return mix.prompt, mix.output, mix.requests, {"lengths": mix}
