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
