"""The package's structure: no import cycle, the layer contracts of pyproject.toml, no function over 80 lines.

The checkers are tested on planted faults (a tiny package with a cycle, an upward import) so that a
checker that stopped seeing anything would fail here, not pass silently.
"""
from __future__ import annotations

import ast
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "ironlaw"
MAX_LINES = 80


def import_cycles(package: str) -> list[set[str]]:
    """Every group of modules of ``package`` that import one another in a ring (function-level imports
    included): the strongly connected components of its import graph with more than one module."""
    grimp = pytest.importorskip("grimp")
    graph = grimp.build_graph(package, include_external_packages=False, cache_dir=None)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[set[str]] = []

    def visit(v: str) -> None:                       # Tarjan's algorithm, iterative enough for ~150 modules
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.find_modules_directly_imported_by(v)):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for m in sorted(graph.modules):
        if m not in index:
            visit(m)
    return out


def test_no_import_cycle_among_ironlaw_modules():
    cycles = import_cycles("ironlaw")
    assert not cycles, "import cycles: " + "; ".join(" ↔ ".join(sorted(c)) for c in cycles)


def _package(tmp_path: Path, name: str, files: dict[str, str]) -> Path:
    pkg = tmp_path / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for f, body in files.items():
        (pkg / f).write_text(textwrap.dedent(body))
    return tmp_path


def test_the_cycle_check_finds_a_planted_cycle_through_a_function_level_import(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(_package(tmp_path, "planted_cycle", {
        "low.py": "def f():\n    from . import high\n    return high.g\n",
        "high.py": "from . import low\n\ndef g():\n    return low.f\n",
        "alone.py": "import json\n",
    })))
    assert import_cycles("planted_cycle") == [{"planted_cycle.low", "planted_cycle.high"}]


def _lint_imports() -> str:
    exe = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    if not Path(exe).exists():
        pytest.skip("import-linter is not installed (pip install -e .[test])")
    return exe


def test_the_layer_contracts_of_pyproject_hold():
    r = subprocess.run([_lint_imports(), "--config", str(ROOT / "pyproject.toml")], capture_output=True, text=True,
                       cwd=ROOT, env={"PYTHONPATH": str(ROOT / "src"), "PATH": str(Path(sys.executable).parent)})
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "layers" in r.stdout and "BROKEN" not in r.stdout


def test_the_layer_contract_catches_a_planted_upward_import(tmp_path):
    _package(tmp_path, "planted_layers", {
        "high.py": "from . import low\n",
        "low.py": "def f():\n    from . import high    # upward, inside a function\n    return high\n",
    })
    cfg = tmp_path / "contracts.toml"
    cfg.write_text('[tool.importlinter]\nroot_package = "planted_layers"\n\n[[tool.importlinter.contracts]]\n'
                   'name = "high above low"\ntype = "layers"\ncontainers = ["planted_layers"]\n'
                   'layers = ["high", "low"]\n')
    r = subprocess.run([_lint_imports(), "--config", str(cfg)], capture_output=True, text=True, cwd=tmp_path,
                       env={"PYTHONPATH": str(tmp_path), "PATH": str(Path(sys.executable).parent)})
    assert r.returncode != 0 and "planted_layers.low -> planted_layers.high" in r.stdout, r.stdout


def long_functions(root: Path, limit: int = MAX_LINES) -> list[tuple[str, str, int]]:
    """(file, function, lines) of every function or method over ``limit`` lines (its def to its last line)."""
    out = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > limit:
                    out.append((str(path.relative_to(root)), node.name, n))
    return out


def test_no_function_over_80_lines():
    long = long_functions(SRC)
    assert not long, "functions over 80 lines: " + ", ".join(f"{f}:{n} ({k} lines)" for f, n, k in long)


def test_the_length_check_sees_a_long_function(tmp_path):
    body = "\n".join(f"        x{i} = {i}" for i in range(MAX_LINES))
    (tmp_path / "m.py").write_text(f"def short():\n    return 1\n\n\nclass C:\n    def long(self):\n{body}\n")
    assert long_functions(tmp_path) == [("m.py", "long", MAX_LINES + 1)]


def _layer_contracts() -> list[dict]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover
        import tomli as tomllib
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]
    return [c for c in contracts if c["type"] == "layers"]


def unplaced_modules(package_dir: Path, layers: list[str]) -> list[str]:
    """The modules and packages directly inside ``package_dir`` that no layer names: nothing would check their
    imports. A layer may name a package's modules one by one (``network.collectives``) instead of the package."""
    named = {m.strip() for layer in layers for m in layer.replace(":", "|").split("|")}
    top = {p.stem if p.is_file() else p.name for p in package_dir.iterdir()
           if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()}
    split = {n.split(".")[0] for n in named if "." in n}
    for pkg in split:
        top |= {f"{pkg}.{p.stem}" for p in (package_dir / pkg).glob("*.py") if p.stem != "__init__"}
    return sorted(top - split - named)


def test_every_module_has_a_layer():
    """Each layer package and the package around them places every module it holds in its layers contract."""
    contracts = _layer_contracts()
    assert {c["containers"][0] for c in contracts} >= {"ironlaw", "ironlaw.core", "ironlaw.machine", "ironlaw.law",
                                                         "ironlaw.models", "ironlaw.measure"}
    for c in contracts:
        (container,) = c["containers"]
        pkg_dir = SRC.joinpath(*container.split(".")[1:])
        assert not unplaced_modules(pkg_dir, c["layers"]), f"modules of {container} in no layer: " \
            f"{unplaced_modules(pkg_dir, c['layers'])}"


def test_the_placement_check_sees_a_module_in_no_layer(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "net").mkdir(parents=True)
    for f in ("__init__.py", "high.py", "low.py", "stray.py", "net/__init__.py", "net/a.py", "net/b.py"):
        (pkg / f).write_text("")
    assert unplaced_modules(pkg, ["high", "net.a | low"]) == ["net.b", "stray"]
