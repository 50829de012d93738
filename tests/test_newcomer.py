"""What a newcomer meets: bad input, contradicting options and the library's front door. Each case is one line
on stderr and exit 2 (or one IronlawError), with the user's own numbers in the message."""
import pytest

from conftest import run_cli


def _one_line(r) -> str:
    assert r.rc == 2, (r.rc, r.out, r.err)
    lines = [line for line in r.err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in r.err + r.out, r.err
    return lines[0]


@pytest.mark.parametrize("argv,typed", [
    (["analyze", "llama3-8b", "--price-per-gpu-hour", "-5"], "got -5"),
    (["analyze", "llama3-8b", "--expert-imbalance", "-5"], "got -5"),
    (["sweep", "llama3-8b", "--batch", "1", "--grid-gco2-per-kwh", "-3"], "got -3"),
    (["serve", "llama3-8b", "--max-throughput", "--kv-fraction", "2"], "got 2"),
    (["serve", "llama3-8b", "--prefix-hit", "2"], "got 2"),
    (["analyze", "llama3-8b", "--phase", "train", "--train-tokens", "1T", "--checkpoint-s", "-5"], "got -5"),
])
def test_a_float_option_is_echoed_as_typed(argv, typed):
    line = _one_line(run_cli(*argv))
    assert line.endswith(typed), line          # "got -5", never "got -5.0"
