"""ironlaw.core.progress: a bar for long work, silence for pipes, JSON and short tasks."""
import io
import sys
import time

import pytest

from ironlaw.core import progress


class _TTY(io.StringIO):
    def isatty(self):
        return True


@pytest.fixture
def terminal(monkeypatch):
    """Pretend stdout and stderr are a terminal; return a function that installs the fakes and
    returns the fake stderr. (Call it in the test body: pytest's capture resets sys.stdout after
    fixture setup.)"""
    monkeypatch.setattr(sys, "argv", ["ironlaw", "probe"])
    monkeypatch.delenv("IRONLAW_PROGRESS", raising=False)
    monkeypatch.setattr(progress, "DELAY_S", 0.05)

    def install():
        err = _TTY()
        monkeypatch.setattr(sys, "stdout", _TTY())
        monkeypatch.setattr(sys, "stderr", err)
        return err
    return install


def test_quiet_when_not_a_terminal(capsys, monkeypatch):
    monkeypatch.delenv("IRONLAW_PROGRESS", raising=False)
    monkeypatch.setattr(progress, "DELAY_S", 0.0)
    assert not progress.enabled()
    with progress.task("work", total=3) as step:
        for _ in range(3):
            time.sleep(0.01)
            step()
    assert step.done == 3
    out, err = capsys.readouterr()
    assert out == "" and err == ""


@pytest.mark.parametrize("how", ["quiet", "argv", "argv=", "env"])
def test_quiet_under_json_or_when_asked(terminal, monkeypatch, how):
    err = terminal()
    assert progress.enabled()
    kw = {}
    if how == "quiet":
        kw["quiet"] = True
    elif how == "argv":
        monkeypatch.setattr(sys, "argv", ["ironlaw", "validate", "gpt2", "--format", "json"])
    elif how == "argv=":
        monkeypatch.setattr(sys, "argv", ["ironlaw", "validate", "gpt2", "--format=json"])
    else:
        monkeypatch.setenv("IRONLAW_PROGRESS", "0")
    with progress.task("work", total=2, **kw) as step:
        time.sleep(0.15)
        step(2)
    assert err.getvalue() == ""


def test_bar_appears_on_a_terminal_after_the_delay_and_is_cleaned_up(terminal):
    err = terminal()
    with progress.task("probing GEMM", total=4) as step:
        for i in range(4):
            time.sleep(0.06)
            step(description=f"probing GEMM {i}")
        assert step._bar is not None
    assert step._bar is None and "probing GEMM" in err.getvalue()


def test_short_task_shows_nothing(terminal, monkeypatch):
    err = terminal()
    monkeypatch.setattr(progress, "DELAY_S", 5.0)
    with progress.task("quick", total=2) as step:
        step()
        step()
    assert step._bar is None and err.getvalue() == ""


def test_spinner_without_steps_and_error_inside(terminal):
    err = terminal()
    with pytest.raises(RuntimeError):
        with progress.task("capturing") as step:
            time.sleep(0.15)
            raise RuntimeError("boom")
    assert step._bar is None                                   # stopped even when the body raised
    assert "capturing" in err.getvalue()
