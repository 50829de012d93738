"""Fuzz the file loaders: whatever the bytes, the only failure is a clean IronlawError."""
import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings, strategies as st

from ironlaw.machine import hardware
from ironlaw.core.errors import IronlawError

CATALOG_H100 = Path(hardware.CATALOG_DIR, "h100.toml").read_text()
LINES = CATALOG_H100.splitlines()


def load_text(tmp_path, text: bytes | str):
    p = tmp_path / "fuzz.toml"
    p.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
    try:
        hw = hardware.load_file(p)
    except IronlawError as e:
        assert str(e).strip() and "\n" not in str(e).strip(), str(e)
        return None
    # a file that loads must hold only positive finite numbers
    for v in hw.peak_flops.values():
        assert v > 0
    for t in hw.memory:
        assert t.capacity_bytes > 0 and t.bw_Bps > 0
    return hw


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=400))
def test_random_bytes(tmp_path, data):
    load_text(tmp_path, data)


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.integers(0, len(LINES) - 1), max_size=8),
       st.lists(st.tuples(st.integers(0, len(LINES) - 1),
                          st.sampled_from(["= -1", "= nan", "= inf", '= "1 parsec"', "= 0", "= true", "= []",
                                           '= "3.35 TB/s"', "= 1e400", '= ""', "x = 1"])), max_size=4))
def test_mutated_catalog_file(tmp_path, drop, edits):
    lines = list(LINES)
    for i, repl in edits:
        if "=" in lines[i]:
            lines[i] = lines[i].split("=")[0] + repl
    lines = [l for j, l in enumerate(lines) if j not in set(drop)]
    load_text(tmp_path, "\n".join(lines))


def test_a_class_math_that_is_not_a_dtype_name_is_refused(tmp_path):
    """A kernel class's ``math`` edited to a list (a case the mutation fuzz found) is a clean error, not a TypeError."""
    assert 'math = "fp8"' in CATALOG_H100
    assert load_text(tmp_path, CATALOG_H100.replace('math = "fp8"', "math = []", 1)) is None


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.recursive(st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=10),
                    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=8), c, max_size=4),
                    max_leaves=20))
def test_random_structures(tmp_path, obj):
    try:
        hardware.parse_hardware(obj if isinstance(obj, dict) else {"x": obj}, "fuzz")
    except IronlawError:
        pass


def test_truncations_of_a_valid_file(tmp_path):
    # every prefix of a valid file either loads or fails cleanly
    for cut in range(0, len(CATALOG_H100), 37):
        load_text(tmp_path, CATALOG_H100[:cut])
