"""Shared test helpers: run the real CLI in a subprocess; benchmarks/trtllm_h100.py back on its defaults."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


class Result:
    def __init__(self, proc: subprocess.CompletedProcess):
        self.rc, self.out, self.err = proc.returncode, proc.stdout, proc.stderr

    def json(self):
        return json.loads(self.out)


def run_cli(*args: str, env: dict | None = None, cwd: str | None = None, timeout: float = 120) -> Result:
    e = dict(os.environ, HF_HUB_OFFLINE="1", COLUMNS="200", NO_COLOR="1")
    if env:
        e.update(env)
    proc = subprocess.run([sys.executable, "-m", "ironlaw", *args], capture_output=True, text=True, env=e,
                          cwd=cwd, timeout=timeout)
    return Result(proc)


def one_line_error(r: Result) -> str:
    """The one line a refused command prints: exit 2, one non-blank line on stderr, no traceback anywhere."""
    assert r.rc == 2, (r.rc, r.out, r.err)
    lines = [line for line in r.err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in r.err + r.out, r.err
    return lines[0]

@pytest.fixture
def cli():
    return run_cli


@pytest.fixture
def trtllm_defaults():
    """benchmarks/trtllm_h100.py keeps a run's options in ``RELEASE``: a test that sets them starts and ends on the
    defaults (``pytestmark = pytest.mark.usefixtures("trtllm_defaults")``)."""
    if str(ROOT / "benchmarks") not in sys.path:
        sys.path.insert(0, str(ROOT / "benchmarks"))
    import trtllm_h100
    trtllm_h100.defaults()
    yield
    trtllm_h100.defaults()


@pytest.fixture(scope="session")
def h100_gemm_fit():
    """The H100 GEMM extract of aiconfigurator-core 0.12.0 (tests/data/kernel_tables) fitted in one GEMM form
    (``kernelfit.GEMM_FILLS`` or "auto"), each form once per test run: ``(hw, groups, fit)``, ``fit(fill)`` the
    calibration tables."""
    import functools
    from ironlaw.machine import hardware
    from ironlaw.measure.calibrate import kernelfit, kerneltable
    hw = hardware.get("h100")
    gs = kernelfit.groups(kerneltable.read(ROOT / "tests/data/kernel_tables/h100_sxm", ops=("gemm",),
                                           framework="trtllm"))

    @functools.cache
    def fit(fill: str) -> dict:
        return kernelfit.fit(hw, gs, date="2026-12-05", origin="extract", license="Apache-2.0", gemm_fill=fill)
    return hw, gs, fit
