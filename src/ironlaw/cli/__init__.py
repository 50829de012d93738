"""The `ironlaw` command. Each verb lives in its own module and registers itself on ``app``.

Errors: an IronlawError (bad input) prints one line on stderr and exits 2 — with
``--format json`` it also prints ``{"error": …}`` on stdout. Anything else is a bug: exit 1
with a short message; ``--debug`` shows the traceback.
"""
from __future__ import annotations

import json
import sys

import typer

from ..core.errors import IronlawError
from .common import (FORMATS, app, check_format, console, emit_json, emit_lines, hardware_app,  # noqa: F401
                     workloads_app)
from . import analyze, hardware, workloads, contract, compare, sweep, report, serve, validate, fit, probe, \
    search, calibrate  # noqa: E402,F401


def _wants_json(argv: list[str]) -> bool:
    for i, a in enumerate(argv):
        if a == "--format" and i + 1 < len(argv) and argv[i + 1] == "json":
            return True
        if a == "--format=json":
            return True
    return False


def _is_usage_error(e: Exception) -> bool:
    # typer may vendor click; match the class by name rather than importing click
    return any(c.__name__ == "ClickException" for c in type(e).__mro__) and hasattr(e, "format_message")


def main(argv: list[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    argv = [a for a in argv if a != "--debug"]
    as_json = _wants_json(argv)

    def fail(msg: str, code: int) -> None:
        msg = " ".join(str(msg).split())
        if as_json:
            sys.stdout.write(json.dumps({"error": msg, "exit_code": code}) + "\n")
        sys.stderr.write(f"ironlaw: error: {msg}\n")
        raise SystemExit(code)

    try:
        rv = app(args=argv, prog_name="ironlaw", standalone_mode=False)
        # typer turns Ctrl-C into Exit(130) and, outside standalone mode, *returns* exit codes
        if isinstance(rv, int) and not isinstance(rv, bool) and rv != 0:
            if rv == 130:
                fail("interrupted", 130)
            raise SystemExit(rv)
    except IronlawError as e:
        fail(str(e), 2)
    except typer.Exit as e:
        raise SystemExit(getattr(e, "exit_code", 0))
    except typer.Abort:
        fail("interrupted", 130)
    except KeyboardInterrupt:
        fail("interrupted", 130)
    except BrokenPipeError:
        raise SystemExit(0)
    except SystemExit:
        raise
    except Exception as e:
        if _is_usage_error(e):            # click/typer usage errors: unknown option, bad value …
            fail(e.format_message(), 2)
        if debug:                         # a bug in ironlaw
            raise
        fail(f"internal error: {e.__class__.__name__}: {e} (run again with --debug for the traceback)", 1)
