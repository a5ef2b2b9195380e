"""Whether a rerun of a recorded command repeats the published experiment: the options a
results file records (its `config`) against those its rerun records, or would run.

A default that changed since a file was published makes the same command another
experiment (the trainers' reward became the team's, for one); the options that moved name
it. Options renamed since are followed, and those that only say where and how a run is
written are left out.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import tyro

BOOKKEEPING_OPTIONS = {"publish", "out", "reuse_runs", "allow_dirty"}


def flat_options(options: object, prefix: str = "") -> dict[str, object]:
    """Nested options as `{"ppo.rewards": "team", ...}`."""
    if not isinstance(options, dict):
        return {prefix: options}
    flat: dict[str, object] = {}
    for key, value in options.items():
        flat.update(flat_options(value, f"{prefix}.{key}" if prefix else key))
    return flat


def moved_options(
    published: dict, rerun: dict, renamed: Mapping[str, str] | None = None
) -> list[str]:
    """'name: before -> after' for every option whose recorded value differs between a
    published results file and its rerun ('absent' where one does not record it); `renamed`
    maps an option's earlier name to today's. A file that records no options (an older
    layout) has none to compare."""
    if "config" not in published:
        return []
    renamed = renamed or {}
    before = {renamed.get(k, k): v for k, v in flat_options(published["config"]).items()}
    after = flat_options(rerun.get("config", {}))
    return [
        f"{name}: {before.get(name, 'absent')} -> {after.get(name, 'absent')}"
        for name in sorted(before.keys() | after.keys())
        if name not in BOOKKEEPING_OPTIONS
        and before.get(name, "absent") != after.get(name, "absent")
    ]


def script_options(module: str, path: Path, args: Sequence[str]) -> dict | None:
    """The options a benchmark script resolves `args` to, read without running it: parsed
    into the config its module (source file `path`) hands `run_script`; None for a module
    that hands none."""
    for node in ast.walk(ast.parse(path.read_text())):
        if (
            isinstance(node, ast.Call)
            and getattr(node.func, "id", None) == "run_script"
            and node.args
            and isinstance(node.args[0], ast.Name)
        ):
            config_type = getattr(importlib.import_module(module), node.args[0].id)
            config = tyro.cli(config_type, args=list(args))
            return json.loads(json.dumps(dataclasses.asdict(config), default=str))
    return None


def report_moved(name: str, changes: list[str], outcome: str) -> None:
    """One line on stderr: which options moved for results file `name`, and what follows."""
    print(
        f"{name}: its command runs other options now ({'; '.join(changes)}); {outcome}: if "
        "each keeps the experiment (a new option whose default is the earlier behaviour), "
        "pass --accept-moved-options, else rerun it with the earlier options spelled out",
        file=sys.stderr,
    )
