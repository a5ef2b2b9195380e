"""The layering of `baselines`: configuration depends on nothing else, and no import cycles.

The graph is read from the source with `ast`, so it counts every import statement of a
module: top-level ones, those under `if TYPE_CHECKING:` and those deferred into a function
body. A cycle hidden behind a lazy import is still a cycle of the design.
"""

from __future__ import annotations

import ast
import itertools
from pathlib import Path

import pytest

from tests.test_layers import find_cycle

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


def test_config_imports_nothing_from_baselines():
    config = ROOT / PACKAGE / "common" / "config.py"
    imports = imported_modules(config, set(baselines_modules()))
    assert imports == set(), f"baselines/common/config.py imports {sorted(imports)}"


def test_baselines_import_graph_has_no_cycle():
    cycle = find_cycle(import_graph())
    assert cycle == [], "import cycle: " + " -> ".join(cycle)


@pytest.mark.parametrize(
    ("graph", "members"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": set()}, set()),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, {"a", "b", "c"}),
        ({"a": {"b"}, "b": {"a"}, "c": set()}, {"a", "b"}),
    ],
)
def test_cycle_finder_sees_a_cycle(graph, members):
    # The checker itself must see a cycle, or a passing graph test proves nothing.
    cycle = find_cycle(graph)
    assert set(cycle) == members
    if cycle:
        assert cycle[0] == cycle[-1]
        assert all(b in graph[a] for a, b in itertools.pairwise(cycle))


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
