"""Parse quantities with units at the input edge, format them at the output edge.

Inside ironlaw every quantity is a plain float in SI units whose name carries the unit
(``time_s``, ``bw_Bps``, ``capacity_bytes``, ``peak_flops``). Decimal prefixes are powers of
1000, binary prefixes (KiB, MiB, GiB, TiB) powers of 1024.
"""
from __future__ import annotations

import math
import re

from .errors import IronlawError

_DEC = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18}
_BIN = {"Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50}
_TIME = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}

# unit family -> accepted base spellings
_BASES = {
    "bytes": ("B", "bytes", "byte"),
    "Bps": ("B/s", "Bps"),
    "flops": ("FLOP/s", "FLOPS", "flops", "OP/s", "OPS"),
    "W": ("W",),
    "bps": ("b/s", "bps"),
}
_NUM = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*(.*?)\s*$")


def parse(value: object, unit: str, what: str = "value") -> float:
    """Parse ``value`` (a number in SI units, or a string such as '3.35 TB/s') into a float.

    ``unit`` is one of: bytes, Bps, flops, s, W, bps, 1 (dimensionless).
    Raises IronlawError for malformed text, a wrong unit, or a non-finite number.
    """
    if isinstance(value, bool):
        raise IronlawError(f"{what}: expected a number, got {value!r}")
    if isinstance(value, (int, float)):
        x = float(value)
    elif isinstance(value, str):
        m = _NUM.match(value)
        if not m:
            raise IronlawError(f"{what}: cannot read {value!r} as a quantity in {unit}")
        x = float(m.group(1)) * _scale(m.group(2), unit, what, value)
    else:
        raise IronlawError(f"{what}: expected a number or a string with units, got {type(value).__name__}")
    if not math.isfinite(x):
        raise IronlawError(f"{what}: {value!r} is not a finite number")
    return x


def _scale(suffix: str, unit: str, what: str, raw: str) -> float:
    if suffix == "":
        return 1.0
    if unit == "s":
        if suffix in _TIME:
            return _TIME[suffix]
    elif unit == "1":
        pass
    else:
        for base in _BASES.get(unit, ()):
            if suffix.endswith(base):
                prefix = suffix[: -len(base)].strip()
                if prefix in _BIN:
                    return _BIN[prefix]
                if prefix in _DEC:
                    return _DEC[prefix]
    raise IronlawError(f"{what}: unit '{suffix}' in {raw!r} is not a unit of {unit}")


def positive(x: float, what: str, upper: float = math.inf, given: str | None = None,
             upper_text: str | None = None) -> float:
    """Check 0 < x < upper (finite); return x. ``given``: the text the user wrote, named in the refusal;
    ``upper_text``: the bound as the user would write it (in the unit, "1 PiB"), else ``upper`` as a number."""
    if not (isinstance(x, (int, float)) and math.isfinite(x) and 0 < x < upper):
        bound = "" if upper == math.inf else f" and below {upper_text or f'{upper:g}'}"
        raise IronlawError(f"{what} must be a positive finite number{bound}, got {repr(x) if given is None else given}")
    return float(x)


_DEC_PREFIXES = (("E", 1e18), ("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3), ("", 1.0))
_BIN_PREFIXES = (("Pi", 2.0**50), ("Ti", 2.0**40), ("Gi", 2.0**30), ("Mi", 2.0**20), ("Ki", 2.0**10), ("", 1.0))


def _figures(v: float, digits: int) -> str:
    """``v`` to ``digits`` significant figures, never an exponent: a value that reaches 10^digits once rounded
    (999.9 at 3 figures, 1,010 GiB below a TiB, a time past 1,000 s) in whole units with thousands separators."""
    text = f"{v:.{digits}g}"
    return f"{round(v):,}" if "e+" in text else text


def _scaled(x: float, unit: str, prefixes, digits: int) -> str:
    if x == 0 or not math.isfinite(x):
        return f"{x:g} {unit}"
    for p, s in prefixes:
        if abs(float(f"{x / s:.{digits}g}")) >= 1:         # 999.96 GB at 3 figures is 1 TB, not 1,000 GB
            return f"{_figures(x / s, digits)} {p}{unit}"
    return f"{_figures(x, digits)} {unit}"


def fmt(x: float, unit: str, digits: int = 3) -> str:
    """Format an SI float with a decimal prefix: fmt(3.35e12, 'B/s') -> '3.35 TB/s'."""
    if unit == "s":
        return fmt_time(x, digits)
    return _scaled(x, unit, _DEC_PREFIXES, digits)


def fmt_time(t: float, digits: int = 3) -> str:
    if t == 0 or not math.isfinite(t):
        return f"{t:g} s"
    for s, name in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if abs(float(f"{t / s:.{digits}g}")) >= 1:        # 0.99996 s at 3 figures is 1 s, not 1,000 ms
            return f"{_figures(t / s, digits)} {name}"
    return f"{_figures(t / 1e-9, digits)} ns"


def fmt_size(x: float, digits: int = 3) -> str:
    """Format a memory size with binary prefixes: 85899345920 -> '80 GiB'.

    Memory (capacities, footprints, what a device holds) prints in GiB because vendors' "80 GB" of HBM is
    80 GiB (five 16 GiB stacks; nvidia-smi shows 81,559 MiB). Data moved (traffic, B/s) stays decimal, as
    bandwidths are specified (3.35 TB/s)."""
    return _scaled(x, "B", _BIN_PREFIXES, digits)


def is_binary(text: object) -> bool | None:
    """Whether a size as written states a binary prefix ('80 GiB': True), a decimal one ('3.84 TB': False), or
    none (a bare number: None)."""
    m = _NUM.match(text) if isinstance(text, str) else None
    if not m or not m.group(2):
        return None
    return m.group(2)[:2] in _BIN


def fmt_capacity(x: float, binary: bool | None, digits: int = 3) -> str:
    """A capacity in the unit its source states, the other in brackets: '80 GiB (85.9 GB)', '3.84 TB (3.49 TiB)'.
    ``binary`` from ``is_binary`` of the text the catalog holds; a bare number prints binary first."""
    dec, bin_ = _scaled(x, "B", _DEC_PREFIXES, digits), fmt_size(x, digits)
    return f"{dec} ({bin_})" if binary is False else f"{bin_} ({dec})"


def fmt_num(x: float, digits: int = 3) -> str:
    """The one style for a bare number in text: thousands separators from 1,000 up, else ``digits``
    significant figures, never an exponent: 2374.4 -> '2,374', 94.43 -> '94.4', 0.000292 -> '0.000292'."""
    if not math.isfinite(x):
        return f"{x:g}"
    r = float(f"{x:.{digits}g}")                  # rounded to the significant figures
    if abs(r) >= 1_000 or abs(x) >= 1_000:
        return f"{round(x):,}"
    if r == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(r))))
    s = f"{r:.{decimals}f}"
    return s.rstrip("0").rstrip(".") if "." in s else s


def counted(n: float, word: str, plural: str | None = None) -> str:
    """'1 row', '3 rows', '1,500 requests': a whole count with its noun, singular for exactly one (``plural``
    where the noun does not take an s: 'micro-batches')."""
    return f"{n:,.0f} {word if round(n) == 1 else plural or word + 's'}"


_COUNT = {"": 1.0, "K": 1e3, "k": 1e3, "M": 1e6, "B": 1e9, "G": 1e9, "T": 1e12}
_COUNT_RE = re.compile(r"^\s*((?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)\s*([A-Za-z]?)\s*$")


def count(value: object, what: str) -> float:
    """A count with an optional K, M, B (or G) or T suffix (powers of 1000): '15T' -> 1.5e13, '2.5B' -> 2.5e9; a
    number as it is. A count is whole: '1.5' is refused."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        x = float(value)
    else:
        m = _COUNT_RE.match(value) if isinstance(value, str) else None
        if not m or m.group(2) not in _COUNT:
            raise IronlawError(f"{what}: cannot read {value!r} as a count; give a number with an optional K, M, B "
                               f"or T suffix, e.g. 15T")
        x = float(m.group(1)) * _COUNT[m.group(2)]
    if not math.isfinite(x) or x <= 0:
        raise IronlawError(f"{what} must be positive, got {value!r}")
    if abs(x - round(x)) > 1e-9 * x:                   # '2.5B' is whole; '1.5' is not (0.1K reads 100.00000000000001)
        raise IronlawError(f"{what} must be a whole number, got {value!r}")
    return x
