"""The front door: each README example gives one document through the CLI (``--format json``) and through the
library (``ironlaw.analyze`` … ``ironlaw.search``); an option a function does not take is a TypeError."""
from __future__ import annotations

import ast
import inspect
import json
import shlex
from pathlib import Path

import pytest

from conftest import ROOT, run_cli

import ironlaw
from ironlaw import api
from ironlaw.core.errors import IronlawError

README = (ROOT / "README.md").read_text()
FRONT_DOOR = ("analyze", "compare", "sweep", "serve", "train", "search")
# commands the README shows that are not predictions with a JSON document of their own
CLI_ONLY = {"report": "writes an HTML file", "hardware": "lists the catalog", "workloads": "lists the builders"}
# CLI parameters that only shape the printed text, and the CLI's short names for two options
FORMAT_ONLY = {"fmt", "top"}
RENAMED = {"price": "price_per_gpu_hour", "grid": "grid_gco2_per_kwh", "opt": "options"}
WALL_CLOCK = {"search_s"}              # how long the search took this time


def _block(after: str, fence: str) -> str:
    return README.split(after, 1)[1].split(fence, 1)[1].split("```", 1)[0]


def bash_examples() -> list[list[str]]:
    """Every `ironlaw …` command of the README's Examples block, as argv (after `ironlaw`)."""
    out = []
    for line in _block("## Examples", "```bash").splitlines():
        lex = shlex.shlex(line, posix=True, punctuation_chars=";")
        lex.whitespace_split, lex.commenters = True, "#"
        argv: list[str] = []
        for tok in list(lex) + [";"]:
            if tok == ";":
                if argv:
                    assert argv[0] == "ironlaw", line
                    out.append(argv[1:])
                argv = []
            else:
                argv.append(tok)
    return out


def _local(argv: list[str], tmp: Path) -> list[str]:
    """The README's placeholder files made real: a Llama 3 8B config.json, plots and pages under ``tmp``."""
    sub = {"hf:path/to/config.json": f"hf:{ROOT / 'tests/data/llama3_8b_config.json'}",
           "py:examples/resnet.py:resnet50": f"py:{ROOT / 'examples/resnet.py'}:resnet50"}
    out = [sub.get(a, a) for a in argv]
    for i, a in enumerate(out[:-1]):
        if a in ("--plot", "--html"):
            out[i + 1] = str(tmp / Path(out[i + 1]).name)
    return out


def library_call(argv: list[str]):
    """The library call a command line makes: the CLI's own parser reads it; every parameter but the printing
    ones goes to the ironlaw function of the same name, by the same name."""
    import typer
    from ironlaw.cli import app
    from ironlaw.cli.options import parse_opts

    name, *rest = argv
    ctx = typer.main.get_command(app).commands[name].make_context(name, list(rest))
    kw = {}
    for k, v in ctx.params.items():
        if k == "fmt" or (k in FORMAT_ONLY and name != "search"):
            continue
        kw[RENAMED.get(k, k)] = parse_opts(v) if k == "opt" else v
    return getattr(ironlaw, name)(kw.pop("spec"), **kw)


def _strip(doc):
    if isinstance(doc, dict):
        return {k: _strip(v) for k, v in doc.items() if k not in WALL_CLOCK}
    if isinstance(doc, list):
        return [_strip(v) for v in doc]
    return doc


def _same(cli_doc: dict, result) -> None:
    lib = json.loads(json.dumps(result.to_dict(), default=_plain))
    assert _strip(lib) == _strip(cli_doc)


def _plain(o):
    import numpy as np
    return o.tolist() if isinstance(o, np.ndarray) else o.item()


EXAMPLES = [a for a in bash_examples() if a[0] not in CLI_ONLY]


def test_the_readme_examples_are_all_read():
    cmds = {a[0] for a in bash_examples()}
    assert cmds - set(CLI_ONLY) == {"analyze", "compare", "sweep", "serve", "search"}
    assert len(EXAMPLES) >= 15


@pytest.mark.parametrize("argv", EXAMPLES, ids=[" ".join(a[:2]) + f" #{i}" for i, a in enumerate(EXAMPLES)])
def test_a_readme_example_gives_one_document(argv, tmp_path):
    argv = _local(argv, tmp_path)
    r = run_cli(*argv, "--format", "json", timeout=600)
    if r.rc != 0:                      # the README's error example: the same one line from both
        assert r.rc == 2, r.err
        with pytest.raises(IronlawError) as e:
            library_call(argv)
        assert r.json()["error"] == " ".join(str(e.value).split())
        return
    _same(r.json(), library_call(argv))


def python_calls() -> list[tuple[str, str, dict]]:
    """(variable, function, keywords) of every README Python call of the front door with literal arguments."""
    out = []
    for node in ast.walk(ast.parse(_block("## Python API", "```python"))):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            f = node.value.func
            if isinstance(f, ast.Attribute) and f.attr in FRONT_DOOR:
                try:
                    args = [ast.literal_eval(a) for a in node.value.args]
                    kw = {k.arg: ast.literal_eval(k.value) for k in node.value.keywords}
                except ValueError:
                    continue                 # numpy arrays: a sweep the CLI's `sweep` shows instead
                out.append((node.targets[0].id, f.attr, {"spec": args[0], **kw}))
    return out


def to_argv(fn: str, kw: dict) -> list[str]:
    """The command line of a library call: each keyword is its flag."""
    kw = dict(kw)
    argv = ["analyze", kw.pop("spec"), "--phase", "train"] if fn == "train" else [fn, kw.pop("spec")]
    for k, v in kw.items():
        flag = "--" + k.replace("_", "-")
        if k == "options":
            argv += [a for key, val in v.items() for a in ("--opt", f"{key}={val}")]
        elif v is True:
            argv.append(flag)
        elif isinstance(v, (list, tuple)):
            argv += [a for x in v for a in (flag, str(x))]
        else:
            argv += [flag, str(v)]
    return argv


def test_the_readme_python_section_shows_all_six():
    assert {fn for _, fn, _ in python_calls()} == set(FRONT_DOOR)


@pytest.fixture(scope="module")
def python_section():
    ns: dict = {}
    exec(compile(_block("## Python API", "```python"), "README.md", "exec"), ns)
    return ns


@pytest.mark.parametrize("var,fn,kw", python_calls(), ids=[c[0] for c in python_calls()])
def test_a_readme_python_call_gives_the_commands_document(var, fn, kw, python_section):
    r = run_cli(*to_argv(fn, kw), "--format", "json", timeout=600)
    assert r.rc == 0, r.err
    _same(r.json(), python_section[var])


def test_the_library_equals_the_cli_on_tensor_parallel_decode():
    args = dict(on="h100", phase="decode", seq=1024, batch=8)
    one, two = ironlaw.analyze("llama3-8b", **args), ironlaw.analyze("llama3-8b", **args, tp=2, gpus=2)
    r = run_cli("analyze", "llama3-8b", "--on", "h100", "--phase", "decode", "--seq", "1024", "--batch", "8",
                "--tp", "2", "--gpus", "2", "--format", "json")
    assert two.time_s == pytest.approx(r.json()["time_s"], rel=1e-12)
    assert two.time_s < 0.9 * one.time_s           # two devices share the weights' reads


@pytest.mark.parametrize("fn", FRONT_DOOR)
def test_an_option_a_function_does_not_take_is_a_type_error(fn):
    with pytest.raises(TypeError, match="unexpected keyword argument 'tpp'"):
        getattr(ironlaw, fn)("llama3-8b", on="h100", tpp=2)


@pytest.mark.parametrize("fn", FRONT_DOOR)
@pytest.mark.parametrize("on", [None, 123, ["h100", 5]])
def test_on_that_names_no_hardware_is_one_ironlaw_error(fn, on):
    kw = {"what_if": "fusion=elementwise"} if fn == "compare" else {}
    with pytest.raises(IronlawError, match="on= takes a hardware name"):
        getattr(ironlaw, fn)("llama3-8b", on=on, **kw)


def test_builder_options_by_name_are_checked_against_the_builder():
    named = ironlaw.analyze("resnet50", on="h100", image=288)
    given = ironlaw.analyze("resnet50", on="h100", options={"image": 288})
    assert named.time_s == given.time_s != ironlaw.analyze("resnet50", on="h100").time_s
    with pytest.raises(TypeError, match="'imag'.*image"):
        ironlaw.analyze("resnet50", on="h100", imag=288)


@pytest.mark.parametrize("cmd", ["analyze", "compare", "sweep", "serve", "search", "validate", "fit", "probe"])
def test_each_command_option_is_a_keyword_of_the_same_name(cmd):
    import typer
    from ironlaw.cli import app
    params = {p.name for p in typer.main.get_command(app).commands[cmd].params}
    params -= {"fmt"} | (set() if cmd == "search" else FORMAT_ONLY)
    takes = set(inspect.signature(getattr(api, cmd)).parameters)
    assert {RENAMED.get(p, p) for p in params} <= takes


@pytest.mark.parametrize("cmd", ["analyze", "compare", "sweep", "serve", "search", "validate", "fit", "probe"])
def test_each_flag_names_its_keyword(cmd):
    """The flag a user types, dashes as underscores, is the library's keyword (`search --price` was ``prices=``);
    ``--opt KEY=VALUE`` is ``options={...}`` (the front door's docstring) and --format/--top stay with the CLI."""
    import typer
    from ironlaw.cli import app
    takes = set(inspect.signature(getattr(api, cmd)).parameters)
    for p in typer.main.get_command(app).commands[cmd].params:
        flags = {f[2:].replace("-", "_") for f in p.opts if f.startswith("--")}
        if flags & ({"format", "opt"} | (set() if cmd == "search" else {"top"})) or not flags:
            continue
        assert flags & takes, (cmd, sorted(flags))


def test_analyze_and_train_take_one_definition_of_the_step_options():
    """``StepOptions`` is the one list: both functions show it as their keywords, the CLI's analyze declares each
    (the run cost through its option group), and its plan options are the ones the model's plan reads."""
    from ironlaw.api.options import StepOptions
    from ironlaw.cli import app
    from ironlaw.models.plan_options import OPTION_NAMES
    import typer
    names = set(StepOptions.names())
    own = {"spec", "on", "builder_options"}
    assert set(inspect.signature(api.train).parameters) == names | own
    assert set(inspect.signature(api.analyze).parameters) == names | own | {"batch", "phase", "plot"}
    cli = {RENAMED.get(p.name, p.name) for p in typer.main.get_command(app).commands["analyze"].params}
    assert names <= cli
    plan = {"offload_layers" if k == "offload_activations" else k for k in names} & set(OPTION_NAMES)
    assert plan == set(OPTION_NAMES)
    o, named = StepOptions.of({"tp": 2, "gpus": 2, "offload_activations": 1, "fsdp": False, "image": 288})
    assert o.parallel() == {"gpus": 2, "tp": 2, "offload_layers": 1} and named == {"image": 288}


def test_the_library_is_lazy():
    import subprocess
    import sys
    code = "import sys, ironlaw; print(sorted(m for m in ('numpy', 'torch', 'ironlaw.law.law') if m in sys.modules))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={"PYTHONPATH": str(ROOT / "src")})
    assert r.stdout.strip() == "[]", r.stderr


def test_a_builder_option_on_one_training_device_keeps_the_batch():
    """Only a parallel option makes analyze a multi-device training step; a builder option alone (--opt) leaves
    the one-device estimate of the batch asked for."""
    est = ironlaw.analyze("resnet50", on="h100", phase="train", batch=256, image=224)
    assert est.to_dict()["schema"] == "ironlaw.estimate/1" and est.graph.meta["batch"] == 256
    assert est.time_s == ironlaw.analyze("resnet50", on="h100", phase="train", batch=256).time_s
    r = run_cli("analyze", "resnet50", "--phase", "train", "--batch", "256", "--on", "h100", "--opt", "image=224",
                "--format", "json")
    _same(r.json(), est)
    step = ironlaw.analyze("resnet50", on="h100", phase="train", micro_batch=32, global_batch=256, gpus=8)
    assert step.to_dict()["schema"] == "ironlaw.train-step/1" and step.plan.micro_batch == 32
    with pytest.raises(IronlawError, match="--batch 256 is one device's batch.*--micro-batch"):
        ironlaw.analyze("resnet50", on="h100", phase="train", batch=256, gpus=8)     # not silently dropped


def test_the_readme_max_throughput_number_is_what_the_command_prints():
    import re
    line = next(l for l in README.splitlines() if "--max-throughput   # ≈" in l)
    shown_k = float(re.search(r"≈ ([\d.]+)k tok/s", line).group(1))
    argv = shlex.split(line.split("#")[0])[2:]
    assert argv[:1] == ["llama3.1-8b"] and "--dtype" in argv and "fp8" in argv
    got = ironlaw.serve("llama3.1-8b", on="h100", dtype="fp8", prompt=2048, output=2048, max_throughput=True)
    assert abs(got.to_dict()["output_tokens_per_s"] / 1e3 - shown_k) <= 0.05 + 1e-9


def test_calibrate_from_the_library_gives_the_commands_document(tmp_path, shared_kernel_fits):
    pytest.importorskip("pandas")
    tables = str(ROOT / "tests/data/kernel_tables/h100_sxm/gemm")
    r = run_cli("calibrate", "--kernels", tables, "--gpu", "h100", "--format", "json")
    assert r.rc == 0, r.err
    res = ironlaw.calibrate(tables, gpu="h100", out=str(tmp_path / "h100.toml"))
    assert _strip(json.loads(json.dumps(res.to_dict(), default=_plain))) == {**r.json(), "saved": res.saved}
    assert res.saved == str(tmp_path / "h100.toml")
    assert ironlaw.analyze("gemm:4096,4096,4096", on=res.saved).time_s > 0
    with pytest.raises(IronlawError, match="--framework must be one of"):
        ironlaw.calibrate(tables, gpu="h100", framework="tensorrt")


def test_report_from_the_library_writes_the_commands_page(tmp_path):
    """``api.report`` (not ``ironlaw.report``: that name is the ironlaw.report package)."""
    import re

    def page(path: Path) -> str:                       # matplotlib's element ids and the stamp differ per run
        text = re.sub(r'(id="|url\(#|href="#)[a-z0-9]+', r"\1ID", path.read_text())
        return re.sub(r"generated [0-9-]+ [0-9:]+ UTC", "generated", text)

    cli_page, lib_page = tmp_path / "cli.html", tmp_path / "lib.html"
    r = run_cli("report", "llama3-8b", "--on", "h100", "--batch", "4", "-w", "flash-attention", "--html",
                str(cli_page))
    assert r.rc == 0, r.err
    res = api.report("llama3-8b", str(lib_page), on="h100", batch=4, what_if="flash-attention")
    assert res.path == str(lib_page) and res.size_bytes == len(lib_page.read_bytes())
    assert page(lib_page) == page(cli_page)
    assert "What if: flash-attention" in page(lib_page)
    with pytest.raises(IronlawError, match="--top must be at least 1, got 0"):
        api.report("llama3-8b", str(tmp_path / "x.html"), top=0)
