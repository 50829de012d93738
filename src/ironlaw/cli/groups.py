"""An option group: options typer shows one by one, handed to a command as one value (``grouped``; the workload
case's ``case.with_case``)."""
from __future__ import annotations

import inspect
from typing import Callable


def grouped(command: Callable, name: str, fields: tuple, make: Callable) -> Callable:
    """``command`` with its parameter ``name`` shown to typer as the options ``fields`` ((name, typer alias,
    default) each: same flags, help and place in ``--help``); typer calls it with them, ``command`` gets them as
    one ``make(**options)``."""
    sig = inspect.signature(command, eval_str=True)
    params = []
    for p in sig.parameters.values():
        params += [inspect.Parameter(n, p.KEYWORD_ONLY, default=d, annotation=kind) for n, kind, d in fields] \
            if p.name == name else [p.replace(kind=p.KEYWORD_ONLY)]

    def run(**kw):
        group = make(**{n: kw.pop(n) for n, _, _ in fields})
        return command(**kw, **{name: group})
    run.__name__, run.__qualname__, run.__doc__ = command.__name__, command.__qualname__, command.__doc__
    run.__module__ = command.__module__
    run.__signature__ = sig.replace(parameters=params)
    run.__annotations__ = {p.name: p.annotation for p in params}
    return run
