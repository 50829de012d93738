"""Registries of small functions keyed by op role: ``parallel.SHARDING``, ``precision.LOWERED``,
``host.AFTER_SYNC``. Each module keeps its own table and registers its rules with the decorator ``registrar`` makes
for it; a role given two rules in one table is an error at import."""
from __future__ import annotations

from typing import Callable


def registrar(table: dict, what: str) -> Callable:
    """The decorator factory of ``table``: ``@register(*roles)`` stores the function under each role."""
    def register(*roles: str) -> Callable:
        def deco(fn: Callable) -> Callable:
            for r in roles:
                if r in table:
                    raise RuntimeError(f"duplicate {what} rule for role {r}")
                table[r] = fn
            return fn
        return deco
    return register
