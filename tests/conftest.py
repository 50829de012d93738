"""Shared test helpers: run the real CLI in a subprocess."""
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
