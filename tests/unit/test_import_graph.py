"""The import graph keeps the composition root the only place that wires pawl together.

Read from the source (ast), not by importing: module-level imports between ``chalicelib``
modules form no cycle; only entry points import :mod:`chalicelib.wiring`; no module
registers a catalog lookup when imported; and no package imports a package that imports
it back (counting lazy imports too). The layers themselves are import-linter's contract
(pyproject.toml, tests/unit/test_layers.py).
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "chalicelib"
#: The entry points that may import the composition root (app.py sits outside chalicelib).
#: The local runtime hosts the app the way Lambda does, and puts the process together
#: before its start-up recovery hands events to the sinks.
WIRING_IMPORTERS = {"pawl.cli.main", "pawl.local.standin", "pawl.local.runtime"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _is_type_checking(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def _imported(nodes: Iterable[ast.AST]) -> set[str]:
    names: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {name for name in names if name in MODULES}


def _run_time_nodes(node: ast.AST) -> Iterable[ast.AST]:
    """Every node under ``node`` except those under ``if TYPE_CHECKING:``."""
    for child in ast.iter_child_nodes(node):
        if not _is_type_checking(child):
            yield child
            yield from _run_time_nodes(child)


def _graph(top_level_only: bool, run_time_only: bool = False) -> dict[str, set[str]]:
    graph = {}
    for name, path in MODULES.items():
        tree = ast.parse(path.read_text())
        if top_level_only:
            nodes: list[ast.AST] = [n for n in tree.body if not _is_type_checking(n)]
        elif run_time_only:
            nodes = list(_run_time_nodes(tree))
        else:
            nodes = list(ast.walk(tree))
        graph[name] = _imported(nodes) - {name}
    return graph


def _cycles(graph: Mapping[str, set[str]]) -> list[set[str]]:
    """The strongly connected components with more than one member (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _package(module: str) -> str:
    return ".".join(module.split(".")[:2])


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_module_level_import_cycle() -> None:
    assert _cycles(_graph(top_level_only=True)) == []


def test_no_package_level_import_cycle() -> None:
    """Lazy imports count: a cycle hidden inside a function is a cycle all the same."""
    packages: dict[str, set[str]] = {}
    for module, targets in _graph(top_level_only=False, run_time_only=True).items():
        edges = packages.setdefault(_package(module), set())
        edges.update(_package(t) for t in targets if _package(t) != _package(module))
    assert _cycles(packages) == []


def test_only_entry_points_import_the_composition_root() -> None:
    importers = {
        m for m, targets in _graph(top_level_only=False).items() if "chalicelib.wiring" in targets
    }
    assert importers <= WIRING_IMPORTERS


def test_scorer_validation_takes_its_environment_not_the_host_or_the_api() -> None:
    imported = _graph(top_level_only=False)["chalicelib.scoring.validation"]
    reached = [m for m in imported if m.startswith(("chalicelib.plugins", "chalicelib.api"))]
    assert reached == []


def _module_level_calls(tree: ast.Module) -> Iterable[str]:
    for node in tree.body:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
            func = node.value.func
            yield func.attr if isinstance(func, ast.Attribute) else ast.unparse(func)


def test_nothing_registers_a_lookup_when_imported() -> None:
    offenders = [
        name
        for name, path in MODULES.items()
        if "register_lookup" in _module_level_calls(ast.parse(path.read_text()))
    ]
    assert offenders == []


def test_run_start_validation_finds_lookups_without_the_api() -> None:
    """Built by the root, a worker's process finds every catalog kind and loads no API."""
    script = (
        "import sys\n"
        "from chalicelib import wiring\n"
        "from chalicelib.scoring import validation\n"
        "services = wiring.build()\n"
        "assert set(services.lookups) == {'tool', 'decider', 'ai_provider'}\n"
        "assert all(validation.register_lookup(k, f) is f for k, f in services.lookups.items())\n"
        "api = sorted(m for m in sys.modules if m.startswith('chalicelib.api'))\n"
        "assert api == [], api\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
