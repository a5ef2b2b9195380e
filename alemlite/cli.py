"""The `alemlite` command.

Each command is a function taking one typed dataclass config; tyro builds its
command line from the dataclass. Commands are imported only when called, so
`alemlite --help` stays fast and one command's heavy imports never slow another.
"""

from __future__ import annotations

import importlib
import sys
import typing
from collections.abc import Callable, Sequence

import tyro

# command words -> "module:function"
COMMANDS: dict[tuple[str, ...], str] = {
    ("demo",): "alemlite.demo:demo",
    ("eval", "dining"): "alemlite.eval_cli:eval_dining",
    ("eval", "craft"): "alemlite.eval_cli:eval_craft",
    ("eval-llm",): "llm_bridge.cli:eval_llm",
    ("compare",): "llm_bridge.cli:compare",
    ("bench", "dining"): "benchmarks.dining_throughput:run",
    ("bench", "craft"): "benchmarks.craft_throughput:run",
    ("bench", "policies"): "benchmarks.dining_reference_policies:run",
    ("bench", "prompts"): "benchmarks.prompt_throughput:run",
    ("bench", "training"): "benchmarks.training_speed:main",
    ("study",): "benchmarks.study.main:run",
    ("train",): "baselines.train:main",
    ("render", "craft"): "alemlite.envs.craft.render_cli:render_craft",
}


def _load(target: str) -> Callable:
    module_name, function_name = target.split(":")
    return getattr(importlib.import_module(module_name), function_name)


def _usage() -> str:
    commands = "\n".join(f"  alemlite {' '.join(words)}" for words in sorted(COMMANDS))
    return f"usage: alemlite COMMAND [options]\n\ncommands:\n{commands}\n\n" + (
        "`alemlite COMMAND --help` lists a command's options."
    )


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    matches = [words for words in COMMANDS if tuple(argv[: len(words)]) == words]
    if not matches:
        print(_usage(), file=sys.stderr)
        raise SystemExit(0 if not argv or argv[0] in ("-h", "--help") else 2)
    words = max(matches, key=len)
    function = _load(COMMANDS[words])
    config_type = typing.get_type_hints(function)["config"]
    config = tyro.cli(
        config_type,
        args=argv[len(words) :],
        prog=f"alemlite {' '.join(words)}",
        description=function.__doc__,
    )
    function(config)


if __name__ == "__main__":
    main()
