"""The workload case's options that ``analyze``, ``compare`` and ``report`` share (--batch, --seq, --phase, --dtype,
--serial/--overlap), handed to a command as one ``Case`` (``with_case``, an option group: ``groups.grouped``).

    @with_case
    def report(spec: Spec, html: str = …, on: On = "h100", case: Case = Case(), …)
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Callable, Optional

from .groups import grouped
from .options import Batch, DType, Phase, Seq, Serial

# (name, typer alias, default) of each option of the case, in the order --help lists them
CASE = (("batch", Batch, 1), ("seq", Seq, None), ("phase", Phase, None), ("dtype", DType, None),
        ("serial", Serial, False))


@dataclass(frozen=True)
class Case:
    """One workload case as a command line gives it, under the names the front door takes."""
    batch: int = 1
    seq: Optional[int] = None
    phase: Optional[str] = None
    dtype: Optional[str] = None
    serial: bool = False

    def api_kwargs(self) -> dict:
        return asdict(self)


def with_case(command: Callable) -> Callable:
    """``command`` with its ``case: Case`` parameter shown to typer as the five ``CASE`` options."""
    return grouped(command, "case", CASE, Case)
