"""The `alemlite` command.

Each command is a function taking one typed dataclass config; tyro builds its
command line from the dataclass. Commands are imported only when called, so
`alemlite --help` stays fast and one command's heavy imports never slow another.

A config with an `env` field and an `options: EnvOptions | None` field takes the options
of the environment named by `--env` as flags of its own (`--num-agents`, `--map-size`,
`--game`, ...): `with_env_options` reads `--env` first and gives the field that
environment's options type, so one command serves every registered environment. An
environment named as a bare word (`alemlite eval craft`) is refused in one line that says
to name it with `--env`.

A `ConfigError`, raised while the config is built (its `__post_init__`) or while the
command runs, is printed as one line naming the flag the user typed, with exit
status 2; `--debug` shows the traceback instead.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import io
import re
import sys
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import tyro

from alemlite.core.errors import ConfigError
from alemlite.core.registry import registered_environments, spec

# command words -> "module:function"
COMMANDS: dict[tuple[str, ...], str] = {
    ("demo",): "alemlite_app.demo:demo",
    ("eval",): "alemlite_app.evaluate:evaluate",
    ("eval-llm",): "alemlite_app.evaluate:evaluate_llm",
    ("compare",): "llm_bridge.compare:compare_command",
    ("merge",): "llm_bridge.shards:merge_command",
    ("gap",): "alemlite_app.evaluate:gap",
    ("leaderboard",): "alemlite_app.evaluate:leaderboard",
    ("bench",): "alemlite_app.bench:throughput",
    ("bench", "policies"): "alemlite_app.bench:policies",
    ("bench", "prompts"): "alemlite_app.bench:prompts",
    ("bench", "training"): "alemlite_app.bench:training",
    ("bench", "gpu"): "benchmarks.engine.gpu:run",
    ("study",): "benchmarks.study.main:run",
    ("train",): "baselines.train:main",
    ("finetune",): "alemlite_app.finetune:finetune",
    ("freshness",): "alemlite_app.freshness:freshness",
    ("render",): "alemlite_app.render:render",
    ("view",): "llm_bridge.viewer:view",
}


# How an interrupted command continues (every command keeps what it wrote).
RESUME = {
    ("train",): "rerun it with --resume to continue from its last checkpoint",
    ("finetune",): "rerun it with --resume to continue from its last checkpoint",
    ("eval-llm",): "rerun the same command to continue where it stopped",
    ("study",): "rerun the same command: finished runs are reused",
    ("gap",): "rerun the same command: the model's runs resume from their transcripts",
}
# the second word of a two-word command, as a person calls it
SECOND_WORD = {"bench": "benchmark"}


def _load(target: str) -> Callable:
    module_name, function_name = target.split(":")
    return getattr(importlib.import_module(module_name), function_name)


def _usage() -> str:
    commands = "\n".join(f"  alemlite {' '.join(words)}" for words in sorted(COMMANDS))
    return f"usage: alemlite COMMAND [options]\n\ncommands:\n{commands}\n\n" + (
        "`alemlite COMMAND --help` lists a command's options."
    )


def _env_named(argv: Sequence[str], default: str) -> str:
    """The value of `--env` on a command line (the last one wins, as in the parser)."""
    env = default
    for index, arg in enumerate(argv):
        if arg == "--env" and index + 1 < len(argv):
            env = argv[index + 1]
        elif arg.startswith("--env="):
            env = arg.removeprefix("--env=")
    return env


def _takes_positionals(config_type: type) -> bool:
    hints = typing.get_type_hints(config_type, include_extras=True)
    return any(tyro.conf.Positional in getattr(hint, "__metadata__", ()) for hint in hints.values())


def _stray_word(words: tuple[str, ...], rest: Sequence[str], config_type: type) -> str | None:
    """One line for a bare word where the command takes none (`alemlite bench craft`), or
    None where there is none, or where the command's own positionals may take it."""
    if not rest or rest[0].startswith("-"):
        return None
    word, command = rest[0], " ".join(words)
    takes_env = any(field.name == "env" for field in dataclasses.fields(config_type))
    if takes_env and word in registered_environments():
        example = f"alemlite {command} --env {word}"
        return f"alemlite {command}: name the environment with --env ({example} ...)"
    if _takes_positionals(config_type):
        return None  # the parser says what it expected there
    depth = len(words)
    group = sorted(w[depth] for w in COMMANDS if w[:depth] == words and len(w) > depth)
    hints = [f"choose one of: {', '.join(group)}"] if group else []
    if takes_env:
        hints.append(f"name the environment with --env ({', '.join(registered_environments())})")
    noun = SECOND_WORD.get(words[0], "subcommand") if group else "argument"
    return f"alemlite {command}: unknown {noun} {word!r}" + "".join(f"; {hint}" for hint in hints)


def with_env_options(config_type: type, argv: Sequence[str]) -> type:
    """`config_type` whose `options` field is the options of the environment `--env` names
    in `argv` (flags without a prefix); a config without env options is returned as it is."""
    names = {field.name: field for field in dataclasses.fields(config_type)}
    if "env" not in names or "options" not in names:
        return config_type
    env = _env_named(argv, names["env"].default)
    options = spec(env).options
    subtype = dataclasses.make_dataclass(
        config_type.__name__,
        [
            ("env", str, dataclasses.field(default=env)),
            (
                "options",
                typing.Annotated[options, tyro.conf.OmitArgPrefixes],
                dataclasses.field(default_factory=options),
            ),
        ],
        bases=(config_type,),
        frozen=True,
    )
    subtype.__doc__ = config_type.__doc__
    subtype.__module__ = config_type.__module__
    return subtype


@dataclass(frozen=True)
class Flag:
    """One option of a command as a person types it."""

    name: str
    """the flag: `--num-envs`, `--ppo.gamma`"""
    type: Any
    """the field's type"""
    default: Any
    """its default (`dataclasses.MISSING` where it has none)"""


def _default(field: dataclasses.Field) -> Any:
    if field.default is not dataclasses.MISSING:
        return field.default
    if field.default_factory is not dataclasses.MISSING:
        return field.default_factory()
    return dataclasses.MISSING


def command_flags(config_type: type, prefix: str = "") -> dict[str, Flag]:
    """Dotted config field (`num_envs`, `ppo.gamma`) -> its flag, as tyro makes them: a nested
    config's fields carry its name as a prefix unless it omits prefixes (env options);
    positional fields have no flag."""
    flags: dict[str, Flag] = {}
    hints = typing.get_type_hints(config_type, include_extras=True)
    for field in dataclasses.fields(config_type):
        hint = hints[field.name]
        metadata = getattr(hint, "__metadata__", ())
        if tyro.conf.Positional in metadata:
            continue
        kind = typing.get_args(hint)[0] if metadata else hint
        dotted = f"{prefix}{field.name}"
        if tyro.conf.OmitArgPrefixes in metadata:
            flags.update(command_flags(kind, prefix))
        elif dataclasses.is_dataclass(kind):
            flags.update(command_flags(kind, f"{dotted}."))
        else:
            flags[dotted] = Flag("--" + dotted.replace("_", "-"), kind, _default(field))
    return flags


def flag_names(config_type: type) -> dict[str, str]:
    """Config field -> the flag tyro makes of it (`num_envs` -> `--num-envs`, a nested
    `ppo.gamma` -> `--ppo.gamma`). A nested field is also found by its own name where that
    name is unique (its config's own checks know no prefix); positional fields have no flag."""
    flags = {name: flag.name for name, flag in command_flags(config_type).items()}
    leaves = [name.rsplit(".", 1)[-1] for name in flags if "." in name]
    for name, flag in list(flags.items()):
        leaf = name.rsplit(".", 1)[-1]
        if "." in name and leaves.count(leaf) == 1 and leaf not in flags:
            flags[leaf] = flag
    return flags


def in_flags(message: str, config_type: type) -> str:
    """`message` with every `field=` of the config written as the flag the user typed."""
    flags = flag_names(config_type)
    names = sorted(flags, key=len, reverse=True)
    pattern = re.compile(r"(?<![\w.-])(" + "|".join(map(re.escape, names)) + r")=")
    return pattern.sub(lambda match: flags[match.group(1)] + "=", message) if names else message


# tyro draws its errors in a box: a title, a rule, the message, then rules between the
# argument's help and the pointer to --help. The UTF-8 box carries its title in its top
# border, the ASCII one (a stdout that is not UTF-8) on a line of its own.
_TITLE_BORDER = re.compile(r"^\s*╭─ (.*?) ─+╮\s*$", re.M)
_RULE = re.compile(r"[─-]+")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _one_line(box: str) -> str:
    """The message of tyro's error box on one line (the section after its title)."""
    text = _TITLE_BORDER.sub(r"\1\n-", _ANSI.sub("", box))
    sections: list[list[str]] = [[]]
    for line in text.splitlines():
        line = line.strip().strip("│╰╯").strip()
        if _RULE.fullmatch(line):
            sections.append([])
        elif line:
            sections[-1].append(line)
    return " ".join(sections[1] if len(sections) > 1 else sections[0]).rstrip(".")


def _parse(config_type: type, args: Sequence[str], prog: str, description: str | None, debug: bool):
    """The config tyro builds from `args`; a parse error is printed in one line (exit 2),
    as every other refusal of the command (`--debug` shows tyro's own box)."""
    if debug:
        return tyro.cli(config_type, args=args, prog=prog, description=description)
    printed = io.StringIO()
    try:
        with contextlib.redirect_stderr(printed):
            config = tyro.cli(config_type, args=args, prog=prog, description=description)
    except SystemExit as exit_:
        message = _one_line(printed.getvalue())
        if exit_.code != 2 or not message:
            sys.stderr.write(printed.getvalue())
            raise
        print(f"{prog}: error: {message}; `{prog} --help` lists the options", file=sys.stderr)
        raise SystemExit(2) from None
    sys.stderr.write(printed.getvalue())  # tyro's warnings, if any
    return config


def main(argv: Sequence[str] | None = None) -> None:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv
    argv = [arg for arg in argv if arg != "--debug"]
    matches = [words for words in COMMANDS if tuple(argv[: len(words)]) == words]
    if not matches:
        if not argv or argv[0] in ("-h", "--help"):
            print(_usage(), file=sys.stderr)
            raise SystemExit(0)
        print(f"alemlite: unknown command {argv[0]!r}\n\n{_usage()}", file=sys.stderr)
        raise SystemExit(2)
    words = max(matches, key=len)
    prog = f"alemlite {' '.join(words)}"
    function = _load(COMMANDS[words])
    config_type = typing.get_type_hints(function)["config"]
    stray = _stray_word(words, argv[len(words) :], config_type)
    if stray is not None:
        print(stray, file=sys.stderr)
        raise SystemExit(2)
    try:
        config_type = with_env_options(config_type, argv[len(words) :])
        config = _parse(config_type, argv[len(words) :], prog, function.__doc__, debug)
        function(config)
    except ConfigError as error:
        if debug:
            raise
        print(f"{prog}: error: {in_flags(str(error), config_type)}", file=sys.stderr)
        raise SystemExit(2) from None
    except KeyboardInterrupt:
        if debug:
            raise
        hint = RESUME.get(words, "run it again to start over")
        print(f"\n{prog}: interrupted; what it wrote is kept; {hint}", file=sys.stderr)
        raise SystemExit(130) from None


if __name__ == "__main__":
    main()
