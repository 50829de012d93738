import math

import pytest
from hypothesis import given, strategies as st

from ironlaw.core import units
from ironlaw.core.errors import IronlawError


@pytest.mark.parametrize("text,unit,expected", [
    ("3.35 TB/s", "Bps", 3.35e12), ("80 GB", "bytes", 80e9), ("80 GiB", "bytes", 80 * 2**30),
    ("989.4 TFLOP/s", "flops", 989.4e12), ("5 us", "s", 5e-6), ("600 ns", "s", 6e-7), ("1.5ms", "s", 1.5e-3),
    ("32 MiB", "bytes", 32 * 2**20), (700, "W", 700.0), ("2e3", "bytes", 2000.0),
])
def test_parse_known_quantities(text, unit, expected):
    assert units.parse(text, unit) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("bad,unit", [("3.35 TB", "Bps"), ("fast", "Bps"), ("nan", "bytes"), ("inf GB", "bytes"),
                                      (float("nan"), "s"), (True, "s"), ([1], "s"), ("5 parsecs", "s")])
def test_parse_rejects(bad, unit):
    with pytest.raises(IronlawError):
        units.parse(bad, unit)


@given(st.floats(min_value=1e-9, max_value=1e18, allow_nan=False, allow_infinity=False))
def test_format_parse_round_trip(x):
    # formatting with 12 significant digits and parsing back recovers the value
    s = units.fmt(x, "B", digits=12)
    assert math.isclose(units.parse(s, "bytes"), x, rel_tol=1e-9)


@given(st.floats(min_value=1e-12, max_value=1e4, allow_nan=False))
def test_time_round_trip(t):
    s = units.fmt_time(t, digits=12).replace("µs", "us")
    assert math.isclose(units.parse(s, "s"), t, rel_tol=1e-9)


@given(st.floats(min_value=1.0, max_value=1e18, allow_nan=False))
def test_size_round_trip_binary(x):
    s = units.fmt_size(x, digits=12)
    assert math.isclose(units.parse(s, "bytes"), x, rel_tol=1e-9)


def test_an_80_gib_part_reads_80_gib():
    # nvidia-smi reports 81,559 MiB on an H100 80 GB: the part is 80 GiB, not 80e9 bytes
    assert units.fmt_size(units.parse("80 GiB", "bytes")) == "80 GiB"
    assert units.fmt_size(81559 * 2**20) == "79.6 GiB"


@pytest.mark.parametrize("text,binary", [("80 GiB", True), ("81559 MiB", True), ("3.84 TB", False),
                                         ("236 GB", False), ("1e9", None), (85899345920, None)])
def test_a_size_as_written_says_its_prefix(text, binary):
    assert units.is_binary(text) is binary


@pytest.mark.parametrize("x,binary,text", [(80 * 2**30, True, "80 GiB (85.9 GB)"),
                                           (3.84e12, False, "3.84 TB (3.49 TiB)"),
                                           (80 * 2**30, None, "80 GiB (85.9 GB)")])
def test_a_capacity_prints_in_its_source_unit_then_the_other(x, binary, text):
    assert units.fmt_capacity(x, binary) == text


@pytest.mark.parametrize("x,text", [(2374.4, "2,374"), (1568.2, "1,568"), (2110.0, "2,110"), (999.6, "1,000"),
                                    (94.43, "94.4"), (10.0, "10"), (0.0693, "0.0693"), (0.000292, "0.000292"),
                                    (2.92e-6, "0.00000292"), (0.0, "0"), (-1234.0, "-1,234"), (1e9, "1,000,000,000")])
def test_one_number_style(x, text):
    # thousands separators from 1,000 up, three significant figures below, never an exponent
    assert units.fmt_num(x) == text


@given(st.floats(min_value=-1e15, max_value=1e15, allow_nan=False))
def test_number_style_has_no_exponent_and_reads_back(x):
    s = units.fmt_num(x)
    assert "e" not in s and math.isclose(float(s.replace(",", "")), x, rel_tol=6e-3, abs_tol=1e-300)


def test_four_significant_figures_still_separate_thousands():
    assert units.fmt_num(2633.4, 4) == "2,633" and units.fmt_num(12.345, 4) == "12.35"
