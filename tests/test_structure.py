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


@pytest.mark.parametrize("folder", ["src/ironlaw", "benchmarks", "examples"])
def test_no_function_over_80_lines(folder):
    long = long_functions(ROOT / folder)
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


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _inside(module: str, owner: str) -> bool:
    return module == owner or module.startswith(owner + ".")


def private_reach_ins(root: Path, package: str) -> list[tuple[str, int, str]]:
    """(file, line, name) of every use of another module's private name: a ``_``-prefixed name imported from,
    or read as an attribute of, a module of ``package`` other than the one that defines it. A private module
    (``cli/_parallel.py``) is private to its package: its siblings and their packages may import it."""
    out = set()
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        parts = [package, *rel.with_suffix("").parts]
        me = parts[:-1] if parts[-1] == "__init__" else parts
        here = me if parts[-1] == "__init__" else me[:-1]              # the package relative imports start from
        module = ".".join(me)
        bound: dict[str, str] = {}                                     # local name → the dotted name it binds

        def check(full: str, line: int) -> None:
            names = full.split(".")
            owner = next((".".join(names[:i]) for i, n in enumerate(names) if _private(n)), None)
            if owner is not None and not _inside(module, owner):
                out.add((str(rel), line, full))

        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = here[:len(here) - node.level + 1] if node.level else []
                target = ".".join(base + ([node.module] if node.module else []))
                if _inside(target, package):
                    for a in node.names:
                        bound[a.asname or a.name] = f"{target}.{a.name}"
                        check(f"{target}.{a.name}", node.lineno)
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if _inside(a.name, package):
                        bound[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
                        check(a.name, node.lineno)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and _private(node.attr):
                chain, v = [node.attr], node.value
                while isinstance(v, ast.Attribute):
                    chain.append(v.attr)
                    v = v.value
                if isinstance(v, ast.Name) and v.id in bound:
                    check(".".join([bound[v.id], *reversed(chain)]), node.lineno)
    return sorted(out)


def test_no_module_reaches_into_another_modules_private_names():
    found = private_reach_ins(SRC, "ironlaw")
    assert not found, "private names used outside their module: " + ", ".join(f"{f}:{n} {x}" for f, n, x in found)


@pytest.mark.parametrize("folder", ["tests", "benchmarks", "examples"])
def test_no_test_or_script_reaches_into_ironlaws_private_names(folder):
    """What a test or a benchmark needs of a module is public there (one definition, used under its own name)."""
    found = private_reach_ins(ROOT / folder, "ironlaw")
    assert not found, "private names of ironlaw used here: " + ", ".join(f"{f}:{n} {x}" for f, n, x in found)


def test_the_private_name_check_sees_planted_reach_ins(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    files = {"__init__.py": "from ._version import __version__\n",
             "_version.py": "__version__ = '1'\n",
             "low.py": "def _helper():\n    return 1\n\n\ndef public():\n    return _helper()\n",
             "high.py": "from . import low\nfrom .low import _helper\n\n\ndef f():\n    return low._helper() + _helper()\n",
             "sub/__init__.py": "",
             "sub/_impl.py": "X = 1\n",
             "sub/near.py": "from . import _impl\nfrom .._version import __version__\n",
             "far.py": "def g():\n    import pkg.sub._impl as impl\n    from .sub._impl import X\n    return impl.X + X\n"}
    for f, body in files.items():
        (pkg / f).write_text(body)
    assert private_reach_ins(pkg, "pkg") == [("far.py", 2, "pkg.sub._impl"), ("far.py", 3, "pkg.sub._impl.X"),
                                             ("high.py", 2, "pkg.low._helper"), ("high.py", 6, "pkg.low._helper")]


def private_script_imports(root: Path, scripts: Path) -> list[tuple[str, int, str]]:
    """(file, line, module) of every import, in the .py files below ``root``, of a ``_``-prefixed module that
    lives in ``scripts`` (a folder of scripts that import each other by file name, as benchmarks/ does): what
    several scripts share is a public module there."""
    own = {p.stem for p in scripts.glob("*.py")}
    out = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else \
                [a.name for a in node.names] if isinstance(node, ast.Import) else []
            out += [(str(path.relative_to(root)), node.lineno, n) for n in names
                    if n.split(".")[0] in own and n.startswith("_")]
    return out


@pytest.mark.parametrize("folder", ["tests", "benchmarks"])
def test_what_benchmark_scripts_share_is_a_public_module(folder):
    found = private_script_imports(ROOT / folder, ROOT / "benchmarks")
    assert not found, "private benchmark modules imported: " + ", ".join(f"{f}:{n} {m}" for f, n, m in found)


def test_the_script_import_check_sees_a_planted_private_module(tmp_path):
    (tmp_path / "_helpers.py").write_text("X = 1\n")
    (tmp_path / "helpers.py").write_text("X = 1\n")
    (tmp_path / "run.py").write_text("import helpers\nfrom _helpers import X\n\n\ndef f():\n    import _helpers\n")
    assert private_script_imports(tmp_path, tmp_path) == [("run.py", 2, "_helpers"), ("run.py", 6, "_helpers")]
