"""The layering of `baselines`: configuration depends on nothing else, and no import cycles.

The graph is read from the source with `ast`, so it counts every import statement of a
module: top-level ones, those under `if TYPE_CHECKING:` and those deferred into a function
body. A cycle hidden behind a lazy import is still a cycle of the design.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "baselines"


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def baselines_modules() -> dict[str, Path]:
    """Every module of the `baselines` package by dotted name."""
    return {module_name(path): path for path in sorted((ROOT / PACKAGE).rglob("*.py"))}


def imported_modules(path: Path, known: set[str]) -> set[str]:
    """The `baselines` modules that `path` imports (`from pkg import mod` resolves to `pkg.mod`)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [f"{node.module}.{alias.name}" for alias in node.names]
            names = [name if name in known else node.module for name in names]
        else:
            continue
        found.update(name for name in names if name.split(".")[0] == PACKAGE)
    return found


def import_graph() -> dict[str, set[str]]:
    """module -> the other `baselines` modules it imports."""
    modules = baselines_modules()
    known = set(modules)
    return {name: imported_modules(path, known) - {name} for name, path in modules.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle per strongly connected component of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return [cycle_through(graph, set(component)) for component in components]


def cycle_through(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """A concrete cycle `a -> b -> ... -> a` inside a strongly connected `component`."""
    start = min(component)
    path, seen = [start], {start}
    while True:
        successors = sorted(graph[path[-1]] & component)
        if start in successors and len(path) > 1:
            return [*path, start]
        step = next((s for s in successors if s not in seen), None)
        if step is None:  # every successor seen: close the loop at the first one on the path
            first = successors[0]
            return [*path[path.index(first) :], first]
        path.append(step)
        seen.add(step)


def test_config_imports_nothing_from_baselines():
    config = ROOT / PACKAGE / "common" / "config.py"
    imports = imported_modules(config, set(baselines_modules()))
    assert imports == set(), f"baselines/common/config.py imports {sorted(imports)}"


def test_baselines_import_graph_has_no_cycle():
    found = cycles(import_graph())
    assert found == [], "import cycles: " + "; ".join(" -> ".join(c) for c in found)


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c", "a"]]),
        ({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c"}}, [["a", "b", "a"], ["c", "d", "c"]]),
    ],
)
def test_cycle_finder_reports_each_cycle(graph, expected):
    # The checker itself must see a cycle, or a passing graph test proves nothing.
    assert sorted(cycles(graph)) == expected


def test_graph_reader_follows_submodule_imports(tmp_path):
    source = tmp_path / "m.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "from baselines.common import rollout as r\n"
        "from baselines.common.config import TrainConfig\n"
        "if TYPE_CHECKING:\n"
        "    from baselines.common.algorithm import Runner\n"
        "def f():\n"
        "    import baselines.common.gae\n"
    )
    known = set(baselines_modules())
    assert imported_modules(source, known) == {
        "baselines.common.rollout",
        "baselines.common.config",
        "baselines.common.algorithm",
        "baselines.common.gae",
    }
