"""The package layers point one way: app -> benchmarks -> baselines, llm_bridge -> alemlite.

Every module of every package is parsed, not imported, so a lazy import inside a
function, an `importlib.import_module("...")` argument and a "module:function" string in a
command or registry table count as much as an `import` at the top of a file.
"""

from __future__ import annotations

import ast
import graphlib
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# package -> the packages its modules may import (its own included). The library knows
# nothing above it; llm_bridge may use baselines (it plays shipped checkpoints as agents)
# but baselines never use llm_bridge; the application may use everything; only the
# tests import the tests.
MAY_IMPORT: dict[str, frozenset[str]] = {
    "alemlite": frozenset({"alemlite"}),
    "baselines": frozenset({"alemlite", "baselines"}),
    "llm_bridge": frozenset({"alemlite", "baselines", "llm_bridge"}),
    "benchmarks": frozenset({"alemlite", "baselines", "llm_bridge", "benchmarks"}),
    "alemlite_app": frozenset(
        {"alemlite", "baselines", "llm_bridge", "benchmarks", "alemlite_app"}
    ),
    "tests": frozenset(
        {"alemlite", "baselines", "llm_bridge", "benchmarks", "alemlite_app", "tests"}
    ),
}

# A string naming one of our modules the way importlib or a "module:function" table takes
# it; an f-string's leading part ("alemlite.envs." of f"alemlite.envs.{name}.policies")
# is one such string too.
_MODULE_STRING = re.compile(rf"(?:{'|'.join(MAY_IMPORT)})(?:\.\w+)*\.?(?::[\w.]+)?")


def _package_of(path: Path, root: Path) -> str:
    """The dotted package a module's relative imports start from."""
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1])


def imported_modules(path: Path, root: Path) -> list[str]:
    """Every module of ours that the file at `path` imports or names as an import target."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = _package_of(path, root).split(".")
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            found.append(".".join([*base, *([node.module] if node.module else [])]))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            # a bare word ("tests", "alemlite") is prose or a distribution name, not an import
            if ("." in text or ":" in text) and _MODULE_STRING.fullmatch(text):
                found.append(text.split(":")[0].rstrip("."))
    return found


def layer_violations(root: Path) -> list[str]:
    """One line per import that points up (or into the tests), as `FILE imports MODULE
    (LAYER may not)`."""
    violations = []
    for layer, allowed in MAY_IMPORT.items():
        for path in sorted((root / layer).rglob("*.py")):
            for module in dict.fromkeys(imported_modules(path, root)):  # each once
                top = module.split(".")[0]
                if top in MAY_IMPORT and top not in allowed:
                    file = path.relative_to(root).as_posix()
                    violations.append(f"{file} imports {module} ({layer} may not)")
    return violations


def write_tree(root: Path, files: dict[str, str]) -> None:
    """A scratch project: relative path -> source text."""
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_every_package_imports_only_the_layers_below_it():
    violations = layer_violations(ROOT)
    assert not violations, "imports against the layers:\n" + "\n".join(violations)


def test_the_layer_check_sees_every_form_of_import(tmp_path: Path):
    files = {
        "alemlite/__init__.py": "import baselines.ippo\nfrom . import core\n",
        "alemlite/core/registry.py": (
            "from .. import evaluation\nfrom ..envs import dining\n"
            "FACTORIES = {'dining': 'alemlite.envs.dining:make_dining'}\n"
            "def later():\n    from llm_bridge.cli import eval_llm\n"
        ),
        "baselines/train.py": (
            "import importlib\nimportlib.import_module('llm_bridge.agents')\n"
            "TABLE = {'study': 'benchmarks.study.main:run'}\n"
            "def oracle(name):\n    return f'tests.oracles.{name}'\n"
            "NOTE = 'the tests: see tests'\n"
        ),
        "llm_bridge/agents.py": "import baselines\nfrom alemlite_app.cli import main\n",
        "benchmarks/harness.py": "import tests.llm_server\nfrom baselines import load\n",
        "alemlite_app/cli.py": "import benchmarks.harness, tests\nimport numpy\n",
        "tests/test_x.py": "import alemlite_app.cli\nfrom tests.llm_server import ChatServer\n",
    }
    write_tree(tmp_path, files)

    assert sorted(layer_violations(tmp_path)) == [
        "alemlite/__init__.py imports baselines.ippo (alemlite may not)",
        "alemlite/core/registry.py imports llm_bridge.cli (alemlite may not)",
        "alemlite_app/cli.py imports tests (alemlite_app may not)",
        "baselines/train.py imports benchmarks.study.main (baselines may not)",
        "baselines/train.py imports llm_bridge.agents (baselines may not)",
        "baselines/train.py imports tests.oracles (baselines may not)",
        "benchmarks/harness.py imports tests.llm_server (benchmarks may not)",
        "llm_bridge/agents.py imports alemlite_app.cli (llm_bridge may not)",
    ]
    # relative imports resolve inside their own package
    assert imported_modules(tmp_path / "alemlite/core/registry.py", tmp_path)[:2] == [
        "alemlite",
        "alemlite.envs",
    ]


# ---- commands read specs, never environments ------------------------------------------------
# Above the library only benchmarks may name an environment's modules (a peer comparison or a
# published result is about one world); everything else finds environments through
# `alemlite.spec(name)`. Inside the library only the registry names them, and no
# environment reaches into another.
SPEC_READERS = ("baselines", "llm_bridge", "alemlite_app")


def environment_imports(root: Path) -> list[str]:
    """One line per import of an environment's module from outside its folder (bar the
    registry's table and the benchmarks)."""
    found = []
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        layer = relative.parts[0]
        if layer not in (*SPEC_READERS, "alemlite") or relative.as_posix() == REGISTRY:
            continue
        own = ".".join(relative.parts[:3]) if relative.parts[:2] == ("alemlite", "envs") else ""
        for module in dict.fromkeys(imported_modules(path, root)):
            if module.startswith("alemlite.envs") and not (own and module.startswith(own)):
                found.append(f"{relative.as_posix()} imports {module}")
    return found


REGISTRY = "alemlite/core/registry.py"


def test_only_the_registry_names_environments():
    found = environment_imports(ROOT)
    assert not found, "modules that should read a spec instead:\n" + "\n".join(found)


def test_the_environment_check_sees_names_and_strings(tmp_path: Path):
    files = {
        REGISTRY: "SPECS = {'dining': 'alemlite.envs.dining.spec:SPEC'}\n",
        "alemlite/envs/dining/env.py": "from alemlite.envs.dining import state\n",
        "alemlite/envs/matrix/env.py": "from alemlite.envs.dining.max_meals import x\n",
        "alemlite/evaluation.py": "import alemlite.core\n",
        "baselines/train.py": "def later():\n    from alemlite.envs.craft import policies\n",
        "llm_bridge/agents.py": "NAME = f'alemlite.envs.{name}.policies'\n",
        "benchmarks/peers.py": "from alemlite.envs.craft.env import CraftEnv\n",
    }
    write_tree(tmp_path, files)
    assert environment_imports(tmp_path) == [
        "alemlite/envs/matrix/env.py imports alemlite.envs.dining.max_meals",
        "baselines/train.py imports alemlite.envs.craft",
        "llm_bridge/agents.py imports alemlite.envs",
    ]


# ---- no import cycles ---------------------------------------------------------------------
def module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph(root: Path) -> dict[str, set[str]]:
    """module -> the modules of ours it imports by an import statement (a deferred one
    counts; strings do not: a lazy "module:attribute" table is how cycles are avoided)."""
    paths = {
        module_name(path, root): path
        for layer in MAY_IMPORT
        if layer != "tests"
        for path in sorted((root / layer).rglob("*.py"))
    }
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1]) if node.level else ""
                module = ".".join(part for part in (base, node.module or "") if part)
                # `from package import module` imports the module
                targets = [
                    f"{module}.{alias.name}" if f"{module}.{alias.name}" in paths else module
                    for alias in node.names
                ]
            else:
                continue
            edges.update(target for target in targets if target in paths and target != name)
        graph[name] = edges
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str]:
    """One import cycle `a -> b -> ... -> a` of `graph` (module -> modules it imports), or []."""
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as error:
        return list(reversed(error.args[1]))
    return []


def test_no_module_imports_itself_through_others():
    cycle = find_cycle(import_graph(ROOT))
    assert cycle == [], "import cycle: " + " -> ".join(cycle)


def test_the_cycle_check_sees_a_cycle(tmp_path: Path):
    files = {
        "alemlite/__init__.py": "",
        "alemlite/a.py": "from alemlite import b\n",
        "alemlite/b.py": "def later():\n    from .c import x\n",
        "alemlite/c.py": "import alemlite.a\n",
        "baselines/__init__.py": "REGISTRY = {'a': 'alemlite.a:thing'}\n",
    }
    write_tree(tmp_path, files)
    cycle = find_cycle(import_graph(tmp_path))
    assert set(cycle) == {"alemlite.a", "alemlite.b", "alemlite.c"} and cycle[0] == cycle[-1]
