"""One device's analysis imports only what it uses: not the parallel model, serving, the search or capture (they
cost the cold start of `ironlaw analyze`; benchmarks/cli_speed.py times it). Each case runs in a fresh
interpreter."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import ironlaw

ROOT = Path(__file__).resolve().parents[1]
OTHER_VERBS = tuple(f"ironlaw.cli.{v}" for v in ("hardware", "workloads", "contract", "compare", "sweep", "report",
                                                 "serve", "validate", "fit", "probe", "search", "calibrate"))
HEAVY = OTHER_VERBS + ("ironlaw.models.parallel", "ironlaw.models.training", "ironlaw.models.serving", "ironlaw.models.search",
         "ironlaw.models.run_cost", "ironlaw.machine.network.topology", "ironlaw.models.capture", "pandas", "pyarrow",
         "ironlaw.machine.engines",
         "torch")

RUN = """
import contextlib, io, json, sys
{call}
print(json.dumps(sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in {heavy!r}))))
"""
CLI = """
from ironlaw import cli
sys.argv = ["ironlaw", *{argv!r}]
with contextlib.redirect_stdout(io.StringIO()):
    try:
        cli.main()
    except SystemExit as e:
        assert not e.code, e.code
"""


def imported(call: str) -> list[str]:
    """The heavy modules imported by ``call`` in a fresh interpreter."""
    r = subprocess.run([sys.executable, "-c", RUN.format(call=call, heavy=HEAVY)], capture_output=True, text=True,
                       timeout=120, env={"PYTHONPATH": str(ROOT / "src"), "COLUMNS": "80"})
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("argv", [["analyze", "llama3-8b", "--on", "h100"],
                                  ["analyze", "llama3-8b", "--on", "h100", "--format", "json"],
                                  ["analyze", "resnet50", "--on", "a100", "--phase", "train", "--batch", "64"]])
def test_one_device_analyze_imports_no_parallel_serving_or_search(argv):
    assert imported(CLI.format(argv=argv)) == []


def test_text_output_loads_no_emoji_table():
    """The consoles print emoji codes as typed, so rich's emoji table is never imported by a text report; a
    ":name:" that rich would turn into a pictogram stays as it was written."""
    code = "import contextlib, io, sys" + CLI.format(argv=["analyze", "llama3-8b", "--on", "h100"])
    r = subprocess.run([sys.executable, "-c", code + "\nprint('rich._emoji_codes' in sys.modules)"],
                       capture_output=True, text=True, timeout=120,
                       env={"PYTHONPATH": str(ROOT / "src"), "COLUMNS": "80"})
    assert r.returncode == 0 and r.stdout.strip().splitlines()[-1] == "False", r.stdout + r.stderr
    import io
    from ironlaw.cli.common import MarkdownConsole, console
    c = console()
    c.file = io.StringIO()
    c.print("layer :thumbs_up: [bold]x[/bold]")
    assert c.file.getvalue() == "layer :thumbs_up: x\n"
    md = MarkdownConsole()
    md.print("layer :thumbs_up:")
    assert md.parts == ["layer :thumbs_up:"]


def test_the_library_analyze_on_one_device_is_as_lean():
    assert imported("import ironlaw; ironlaw.analyze('llama3-8b', on='h100', phase='decode', seq=1024, batch=8)") \
        == []


def test_every_verb_answers_from_its_own_module():
    """`ironlaw VERB …` imports VERB's module alone: each verb of ``cli.VERBS`` must be the name of the module
    that registers it, and `ironlaw --help` (every module) lists them all."""
    from ironlaw import cli
    from conftest import run_process
    for verb in cli.VERBS:
        r = run_process(verb, "--help")
        assert r.rc == 0 and "Usage: ironlaw " + verb in r.out, (verb, r.err)
    listed = run_process("--help").out
    assert all(f" {v} " in listed for v in cli.VERBS)


def test_the_check_sees_the_parallel_model_when_it_is_used():
    """The same check on a multi-device training step finds the parallel model: the test above can fail."""
    got = imported(CLI.format(argv=["analyze", "llama3-8b", "--on", "h100", "--phase", "train", "--gpus", "8",
                                    "--tp", "2", "--global-batch", "64", "--format", "json"]))
    assert "ironlaw.models.parallel" in got and "ironlaw.models.training" in got


def test_one_blas_thread_unless_chosen_or_measuring():
    """A command asks numpy's OpenBLAS for one thread; a user's own setting and the measuring verbs keep theirs."""
    from ironlaw.cli import one_blas_thread
    env = {}
    one_blas_thread(("analyze",), env)
    assert env == {"OPENBLAS_NUM_THREADS": "1"}
    env = {"OPENBLAS_NUM_THREADS": "8"}
    one_blas_thread(("analyze",), env)
    assert env["OPENBLAS_NUM_THREADS"] == "8"
    for verb in ("probe", "validate"):
        env = {}
        one_blas_thread((verb,), env)
        assert env == {}


def test_a_builtin_spec_imports_only_the_workload_modules_up_to_its_own():
    """`analyze llama3-8b` imports the workload modules in order up to the one that files it (transformer), not
    resnet, dlrm or collective; the registries list every name in the same order once all are imported."""
    mods = tuple(f"ironlaw.models.workloads.{m}" for m in ("micro", "transformer", "resnet", "dlrm", "collective"))
    code = ("import json, sys, ironlaw; ironlaw.analyze('llama3-8b', on='h100')\n"
            f"print(json.dumps([m for m in {mods!r} if m in sys.modules]))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={"PYTHONPATH": str(ROOT / "src")})
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout.strip().splitlines()[-1]) == list(mods[:2])
    code = ("import json, ironlaw\nfrom ironlaw.models import workloads as w\n"
            "ironlaw.analyze('llama3-8b', on='h100'); first = [list(w.BUILTINS), list(w.PREFIXES)]\n"
            "w.load_all(); print(json.dumps([first, [list(w.BUILTINS), list(w.PREFIXES)]]))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={"PYTHONPATH": str(ROOT / "src")})
    assert r.returncode == 0, r.stderr
    (names, prefixes), (all_names, all_prefixes) = json.loads(r.stdout.strip().splitlines()[-1])
    assert "resnet50" not in names and "resnet50" in all_names and "allreduce" in all_prefixes
    assert all_names[:len(names)] == names and all_prefixes[:len(prefixes)] == prefixes
    assert ironlaw.analyze("resnet50", on="h100", phase="train", batch=8).time_s > 0


def test_a_workload_name_is_filed_once():
    from ironlaw.models.workloads import registry
    registry.builtin("house-test-once", "a test", ("infer",), "test")(lambda req: None)
    try:
        with pytest.raises(ValueError, match="filed twice"):
            registry.builtin("house-test-once", "again", ("infer",), "test")(test_a_workload_name_is_filed_once)
    finally:
        registry.BUILTINS.pop("house-test-once")


def test_one_shot_verbs_pause_the_collector_and_main_turns_it_back_on(capsys):
    """A one-shot verb (or help) runs with Python's cyclic collector paused; a verb that may run long keeps it; the
    collector is on again when ``main`` returns, as it was for an in-process caller."""
    import gc
    from ironlaw import cli
    assert gc.isenabled()
    try:
        assert cli.pause_collector(("analyze",)) and not gc.isenabled()
        assert not cli.pause_collector(("serve",))             # already paused: nothing for this call to undo
    finally:
        gc.enable()
    assert cli.pause_collector(cli.VERBS)                      # no verb named: help, a typo
    gc.enable()
    for verb in ("probe", "validate", "fit", "calibrate", "search", "sweep"):
        assert not cli.pause_collector((verb,)) and gc.isenabled()
    with pytest.raises(SystemExit):                           # an error exit turns it back on too
        cli.main(["hardware", "show", "no-such-device"])
    assert gc.isenabled()
    cli.main(["workloads", "list"])
    assert gc.isenabled() and "llama3-8b" in capsys.readouterr().out
