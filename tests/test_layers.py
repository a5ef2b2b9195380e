"""The package layers point one way: app -> benchmarks -> baselines, llm_bridge -> alemlite.

Every module of every package is parsed, not imported, so a lazy import inside a
function, an `importlib.import_module("...")` argument and a "module:function" string in a
command or registry table count as much as an `import` at the top of a file.
"""

from __future__ import annotations

import ast
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
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)

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
