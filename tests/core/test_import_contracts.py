"""The layering rules, checked by a machine (DESIGN.md "Layout", STYLE.md "Rules enforced by a machine").

- The import contracts of ``.importlinter`` (import-linter): the engine imports no Django and no
  project app; core imports no app; sessions imports nothing from agents, and from the engine
  only its events and output types.
- No circle between apps: collapsed to its top-level packages, the import graph (grimp's, as
  import-linter reads it, function-level imports included) has no cycle, direct or through others.
  (import-linter's own ``acyclic_siblings`` looks under one parent package; the apps have none.)
- No private name (``_x``) of one project module is used by another: imported (``from m import
  _x``) or read off an imported module (``m._x``). Today's offenders are listed below, each with
  why; the list may only shrink (a fixed offender still listed fails too, so the list stays true).
- No private attribute a project module defines (``self._x = …``, ``def _x``) is read off an object
  in another module (``run._x``): code split out of a class calls its public names. (A framework's
  own private attributes, such as Django's ``_meta``, are defined by no project module, so they
  are not this rule's business: docs/decisions/framework-internals.md is.)
- No module over ``MAX_LINES`` lines; today's longer ones are listed with their length, which may
  shrink but not grow.
"""
from __future__ import annotations

import ast
import configparser
from collections.abc import Iterator
from pathlib import Path

import grimp
from importlinter.cli import lint_imports

ROOT = Path(__file__).resolve().parents[2]
# The project's own top-level packages (.importlinter's root_packages, plus the test and bench code).
APPS = ("agno_site", "core", "engine", "agents", "sessions", "knowledge", "scheduler", "approvals",
        "evals", "metrics", "traces", "chat", "importer", "jobs", "learnings", "mcp_server")
CHECKED = (*APPS, "bench", "scripts", "tests")
MAX_LINES = 600

# (module that uses it, the private name it uses): why it is still here.
PRIVATE_NAMES_ALLOWED: dict[tuple[str, str], str] = {}

# A framework's private attributes that a project class happens to name too (so the check above
# cannot tell them apart), each with where the framework's is read.
FRAMEWORK_ATTRIBUTES: dict[str, str] = {
    "_close": "Django's DatabaseWrapper._close, wrapped by core/db/sqlite3 (docs/decisions/framework-internals.md)",
    "_state": "Django's Model._state (adding, db), set on rows core/statements builds and read by two admins",
    "_kwargs": "DRF's Field._kwargs, which sessions/api/serializers/common.py copies to relax a field",
}

# module path: its length today, for a module being split (it may not grow meanwhile). None today.
LONG_MODULES_ALLOWED: dict[str, int] = {}


def test_the_import_contracts_hold(capsys) -> None:
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    exit_code = lint_imports(config_filename=str(ROOT / ".importlinter"), no_cache=True)
    report = capsys.readouterr().out
    assert exit_code == 0, f"an import contract of .importlinter is broken (DESIGN.md's import rules):\n{report}"
    contracts = [name for name in config.sections() if name.startswith("importlinter:contract:")]
    assert f"{len(contracts)} kept, 0 broken" in report, report  # every contract was read and checked


def test_no_app_imports_another_that_imports_it_back() -> None:
    graph = grimp.build_graph(*root_packages(), cache_dir=None)
    edges = app_edges(graph, root_packages())
    cycles = app_cycles({app: set(targets) for app, targets in edges.items()})
    assert not cycles, (
        "apps import each other, directly or through others: the lower one must not import the higher, "
        "which registers with it in its AppConfig.ready() instead (as with core/components.py). Each "
        "cycle, with one import that makes each of its arrows:\n" + "\n".join(
            " -> ".join(cycle) + "\n" + "".join(f"    {a} -> {b}: {edges[a][b]}\n" for a, b in zip(cycle, cycle[1:]))
            for cycle in cycles
        )
    )


def test_the_cycle_check_names_each_cycle_through_others_and_only_those() -> None:
    edges = {"a": {"b", "d"}, "b": {"c"}, "c": {"a", "d"}, "d": {"e"}, "e": set(), "f": {"f"}, "g": {"h"}, "h": {"g"}}
    assert app_cycles(edges) == [["a", "b", "c", "a"], ["g", "h", "g"]]
    assert app_cycles({"a": {"b"}, "b": set()}) == []


def test_no_private_name_is_used_across_modules() -> None:
    found = set(private_names_used_across_modules())
    new = sorted(found - PRIVATE_NAMES_ALLOWED.keys())
    fixed = sorted(PRIVATE_NAMES_ALLOWED.keys() - found)
    assert not new, (
        "a private name is used outside its module: make it public (and name it for what it is), or "
        f"move the code that needs it into that module: {new}"
    )
    assert not fixed, f"fixed, so remove them from PRIVATE_NAMES_ALLOWED in {Path(__file__).name}: {fixed}"


def test_no_private_attribute_is_read_from_another_module() -> None:
    found = sorted(private_attributes_read_across_modules())
    assert not found, (
        "a private attribute of a project class is read in another module: make it public (and name "
        f"it for what it is), or move the code that reads it into its class's module: {found}"
    )


def test_the_private_attribute_check_sees_a_read_from_another_module(tmp_path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "run.py").write_text("class Run:\n    def __init__(self):\n        self._log = []\n    def _emit(self):\n        return self._log\n")
    (package / "steps.py").write_text("def step(run):\n    run._emit()\n    return run.public, run._meta\n")
    assert sorted(private_attributes_read_across_modules(tmp_path, ("pkg",))) == [("pkg.steps", "_emit")]


def test_no_module_is_over_the_length_limit() -> None:
    lengths = {path: lines for path, lines in module_lengths() if lines > MAX_LINES}
    grown = {path: lines for path, lines in lengths.items() if lines > LONG_MODULES_ALLOWED.get(path, MAX_LINES)}
    shrunk = {path: lines for path, limit in LONG_MODULES_ALLOWED.items() if (lines := lengths.get(path, 0)) < limit}
    assert not grown, f"over {MAX_LINES} lines (or longer than listed): split these by concern (STYLE.md): {grown}"
    assert not shrunk, (
        f"shorter than LONG_MODULES_ALLOWED says, so lower their entries (or drop those now within "
        f"{MAX_LINES} lines or gone) in {Path(__file__).name}: {shrunk}"
    )


def test_the_private_name_check_sees_both_forms(tmp_path) -> None:
    """The scanner catches ``from m import _x`` and ``m._x`` (relative imports too), not dunders or own names."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("_x = 1\n__all__ = []\ndef _own(): return _x\n")
    (package / "b.py").write_text("from .a import _x, __all__\nfrom pkg import a\nimport pkg.a as alias\nprint(a._own(), alias._x, a.__all__)\n")
    assert sorted(set(private_names_used_across_modules(root=tmp_path, packages=("pkg",)))) == [
        ("pkg.b", "pkg.a._own"), ("pkg.b", "pkg.a._x"),
    ]


# --- the scanners --------------------------------------------------------------------------------

def root_packages() -> list[str]:
    config = configparser.ConfigParser()
    config.read(ROOT / ".importlinter")
    return config["importlinter"]["root_packages"].split()


def app_edges(graph: grimp.ImportGraph, apps: list[str]) -> dict[str, dict[str, str]]:
    """For each app, the apps it imports, each with one "importer imports imported" example."""
    edges: dict[str, dict[str, str]] = {app: {} for app in apps}
    for module in sorted(graph.modules):
        app = module.split(".")[0]
        if app not in edges:
            continue  # an external package (.importlinter includes them)
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            target = imported.split(".")[0]
            if target != app and target in edges:
                edges[app].setdefault(target, f"{module} imports {imported}")
    return edges


def app_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Each cycle between apps as its path (``[a, b, a]``): for every arrow ``a -> b``, the shortest
    way back from ``b`` to ``a`` if there is one, each cycle once (starting at its first app by name)."""
    cycles: set[tuple[str, ...]] = set()
    for app in sorted(edges):
        for target in sorted(edges[app] - {app}):  # an app importing itself is no cycle between apps
            back = shortest_path(edges, target, app)
            if back is not None:
                cycle = [app, *back[:-1]]
                start = cycle.index(min(cycle))
                cycles.add((*cycle[start:], *cycle[:start], cycle[start]))
    return [list(cycle) for cycle in sorted(cycles)]


def shortest_path(edges: dict[str, set[str]], start: str, end: str) -> list[str] | None:
    """The shortest path from ``start`` to ``end`` (breadth first), both included, or None."""
    came_from: dict[str, str | None] = {start: None}
    frontier = [start]
    while frontier:
        following = []
        for app in frontier:
            if app == end:
                path = [app]
                while (previous := came_from[path[-1]]) is not None:
                    path.append(previous)
                return path[::-1]
            for target in sorted(edges.get(app, ())):
                if target not in came_from:
                    came_from[target] = app
                    following.append(target)
        frontier = following
    return None


def python_files(root: Path, packages: tuple[str, ...]) -> Iterator[Path]:
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path


def module_lengths() -> Iterator[tuple[str, int]]:
    for path in python_files(ROOT, CHECKED):
        yield str(path.relative_to(ROOT)), len(path.read_text().splitlines())


def private_names_used_across_modules(root: Path = ROOT, packages: tuple[str, ...] = APPS) -> Iterator[tuple[str, str]]:
    def is_module(name: str) -> bool:
        path = root.joinpath(*name.split("."))
        return path.with_suffix(".py").exists() or (path / "__init__.py").exists()

    for path in python_files(root, packages):
        parts = list(path.relative_to(root).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        module = ".".join(parts[:-1] if is_package else parts)
        tree = ast.parse(path.read_text(), filename=str(path))
        modules: dict[str, str] = {}  # local name -> the project module it is bound to
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                source = imported_from(module, is_package, node)
                if source.split(".")[0] not in packages:
                    continue
                for alias in node.names:
                    if is_private(alias.name) and source != module:
                        yield module, f"{source}.{alias.name}"
                    elif is_module(f"{source}.{alias.name}"):
                        modules[alias.asname or alias.name] = f"{source}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname and alias.name.split(".")[0] in packages:
                        modules[alias.asname] = alias.name
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and is_private(node.attr)
                    and isinstance(node.value, ast.Name) and node.value.id in modules):
                yield module, f"{modules[node.value.id]}.{node.attr}"


def private_attributes_read_across_modules(root: Path = ROOT, packages: tuple[str, ...] = APPS) -> Iterator[tuple[str, str]]:
    defined: dict[str, set[str]] = {}  # module -> the private attributes it defines
    reads: dict[str, set[str]] = {}  # module -> the private attributes it reads off other objects
    for path in python_files(root, packages):
        parts = list(path.relative_to(root).with_suffix("").parts)
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and is_private(node.name):
                defined.setdefault(module, set()).add(node.name)
            elif isinstance(node, ast.Attribute) and is_private(node.attr):
                own = isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")
                if own and isinstance(node.ctx, ast.Store):
                    defined.setdefault(module, set()).add(node.attr)
                elif not own and node.attr not in FRAMEWORK_ATTRIBUTES:
                    reads.setdefault(module, set()).add(node.attr)
    elsewhere = {name for names in defined.values() for name in names}
    for module, names in reads.items():
        for name in sorted(names - defined.get(module, set())):
            if name in elsewhere:
                yield module, name


def imported_from(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))
