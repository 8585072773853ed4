"""The layers as Python loads them (issue 44): import-linter's `layers` contract (pyproject.toml)
reads the import statements, but not what Python runs besides them - a parent package's
`__init__`, which runs before any module under it. So each layer is also imported here in a fresh
interpreter, and no module of a layer above it may then be loaded. And no import cycle, counting
imports inside functions and under TYPE_CHECKING: a cycle hidden by a lazy import is still one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[2]
# Lowest first; `web` and `cli` are the edges, side by side.
LAYERS = ["app.core", "app.models", "app.store", "app.services", "app.protocol", ("app.web", "app.cli")]


def layer_of(module: str) -> int | None:
    for level, names in enumerate(LAYERS):
        for name in (names,) if isinstance(names, str) else names:
            if module == name or module.startswith(name + "."):
                return level
    return None  # `app` itself and its composition root, app.factory


def loaded_after_importing(package: str) -> list[str]:
    """The app modules in sys.modules after a fresh interpreter imports every module of `package`."""
    script = f"""
import importlib, json, pkgutil, sys
package = importlib.import_module({package!r})
for info in pkgutil.walk_packages(package.__path__, {package!r} + "."):
    importlib.import_module(info.name)
print(json.dumps(sorted(name for name in sys.modules if name == "app" or name.startswith("app."))))
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


@pytest.mark.parametrize("package", ["app.core", "app.models", "app.store", "app.services", "app.protocol", "app.cli"])
def test_a_layer_loads_nothing_of_the_layers_above_it(package):
    own = layer_of(package)
    assert own is not None
    above = [
        name
        for name in loaded_after_importing(package)
        if (level := layer_of(name)) is not None and (level > own or (level == own and not name.startswith(package)))
    ]
    assert above == [], f"importing {package} loads {above}"


def test_the_edges_load_no_command_and_the_commands_no_page():
    assert [name for name in loaded_after_importing("app.web") if name.startswith("app.cli")] == []


def strongly_connected(edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm: every group of two or more modules that import each other, in a circle."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in edges[module]:
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for module in sorted(edges):
        if module not in index:
            visit(module)
    return found


def test_no_module_imports_itself_through_others():
    graph = grimp.build_graph("app", exclude_type_checking_imports=False)
    edges = {
        module: {imported for imported in graph.find_modules_directly_imported_by(module) if imported in graph.modules}
        for module in graph.modules
    }
    assert strongly_connected(edges) == []


def test_the_cycle_finder_finds_a_cycle():
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
