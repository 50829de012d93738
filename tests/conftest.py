"""Shared test helpers: run the real CLI (in this process, or in a fresh one where the process itself is tested);
benchmarks/trtllm_h100.py back on its defaults."""
from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import traceback
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


class Result:
    def __init__(self, rc: int, out: str, err: str):
        self.rc, self.out, self.err = rc, out, err

    def json(self):
        return json.loads(self.out)


# the warning filters a fresh interpreter starts with (Python docs, library/warnings "Default Warning Filter"; pytest
# swaps its own in around each test and records what they let through): a warning the command emits is printed on
# its stderr as a fresh `ironlaw` process prints it
START_FILTERS = [("default", DeprecationWarning, "__main__"), ("ignore", DeprecationWarning, ""),
                 ("ignore", PendingDeprecationWarning, ""), ("ignore", ImportWarning, ""),
                 ("ignore", ResourceWarning, "")]


def start_warnings() -> None:
    """Inside ``warnings.catch_warnings()``: a fresh interpreter's filters, each warning printed on ``sys.stderr``."""
    warnings.resetwarnings()
    for action, category, module in reversed(START_FILTERS):
        warnings.filterwarnings(action, category=category, module=module)
    warnings.showwarning = lambda message, category, filename, lineno, file=None, line=None: sys.stderr.write(
        warnings.formatwarning(message, category, filename, lineno, line))


CLI_ENV = {"HF_HUB_OFFLINE": "1", "COLUMNS": "200", "NO_COLOR": "1"}


def run_cli(*args: str, env: dict | None = None, cwd: str | None = None, timeout: float = 120) -> Result:
    """`ironlaw ARGS…` through ``ironlaw.cli.main`` in this process (what the installed command runs once Python has
    started), with its own argv, environment, working directory, stdout, stderr and warnings, all restored after:
    exit status, stdout and stderr as a fresh process gives them, without its ~1 s of start-up. ``timeout``: the
    limit ``run_process`` keeps (a call here runs to its end). ``IRONLAW_TEST_PROCESS=1`` runs every such call in a
    fresh process instead (``run_process``), as a check that the two agree; so does a call whose ``env`` sets what
    only an interpreter's start reads (``PYTHONPATH``, any ``PYTHON*``)."""
    if os.environ.get("IRONLAW_TEST_PROCESS") == "1" or any(k.startswith("PYTHON") for k in env or {}):
        return run_process(*args, env=env, cwd=cwd, timeout=timeout)
    from ironlaw import cli
    out, err = io.StringIO(), io.StringIO()
    saved_env, saved_argv, saved_cwd = dict(os.environ), sys.argv, os.getcwd()
    os.environ.update(CLI_ENV, **(env or {}))
    sys.argv = ["ironlaw", *args]
    rc = 0
    try:
        if cwd is not None:
            os.chdir(cwd)
        with warnings.catch_warnings(), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            start_warnings()
            try:
                cli.main(list(args))
            except SystemExit as e:
                rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
                if not isinstance(e.code, (int, type(None))):
                    print(e.code, file=sys.stderr)
            except Exception:            # noqa: BLE001 (--debug re-raises a bug: the interpreter prints it, exit 1)
                traceback.print_exc()
                rc = 1
    finally:
        os.chdir(saved_cwd)
        sys.argv = saved_argv
        os.environ.clear()
        os.environ.update(saved_env)
    return Result(rc, out.getvalue(), err.getvalue())


def run_process(*args: str, env: dict | None = None, cwd: str | None = None, timeout: float = 120) -> Result:
    """`ironlaw ARGS…` in a fresh Python process (``python -m ironlaw``): for the tests of the process itself
    (which modules a verb imports, its exit at the interpreter's end)."""
    e = dict(os.environ, **CLI_ENV)
    if env:
        e.update(env)
    proc = subprocess.run([sys.executable, "-m", "ironlaw", *args], capture_output=True, text=True, env=e,
                          cwd=cwd, timeout=timeout)
    return Result(proc.returncode, proc.stdout, proc.stderr)


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


# kernelfit.fit's tables (``shared_kernel_fits``), by what they are: hardware file, groups and their rows, options
SHARED_FITS: dict = {}


@pytest.fixture
def shared_kernel_fits(monkeypatch):
    """``kernelfit.fit`` (what `ironlaw calibrate` and ``ironlaw.calibrate`` run) of the same rows on the same
    hardware file with the same options fitted once per test run, each call given a deep copy: for the tests that
    calibrate the shipped extract to check the command's output, its document or the profile it writes, and patch
    nothing the fit reads."""
    import copy
    import hashlib
    import pandas as pd
    from ironlaw.measure.calibrate import kernelfit
    real = kernelfit.fit

    def rows_hash(rows) -> str:
        return hashlib.sha256(pd.util.hash_pandas_object(rows, index=True).to_numpy().tobytes()
                              + ",".join(map(str, rows.columns)).encode()).hexdigest()

    def fit(hw, gs, *args, **kwargs):
        path = Path(hw.path).resolve() if hw.path else None
        key = (hw.name, str(path), path.stat().st_mtime_ns if path and path.is_file() else None,
               tuple(repr((g.name, g.key, g.op, g.timed, g.operands, g.dtype, g.table.path, g.table.gpu, g.table.device,
                           g.table.framework, g.table.version, g.table.assumed)) + rows_hash(g.rows) for g in gs),
               repr(args),
               repr(sorted(kwargs.items())))
        if key not in SHARED_FITS:
            SHARED_FITS[key] = real(hw, gs, *args, **kwargs)
        return copy.deepcopy(SHARED_FITS[key])
    monkeypatch.setattr(kernelfit, "fit", fit)
