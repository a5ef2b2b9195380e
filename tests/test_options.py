"""One flag per concept: every command spells each shared option (`SHARED_OPTIONS`) with the
same flag, type and default, for every registered environment, and no command keeps an old
spelling of one; every `python -m benchmarks.NAME` script spells them alike too."""

import dataclasses
import types
import typing
from dataclasses import dataclass
from pathlib import Path

import pytest
import tyro

import alemlite
from alemlite.core import registry
from alemlite.core.spec import SHARED_OPTIONS, EnvOptions
from alemlite_app.bench import PoliciesConfig
from alemlite_app.cli import COMMANDS, Flag, _load, command_flags, with_env_options
from tests.test_benchmarks import MAIN_CONFIGS

# Old spellings of shared concepts: --num-agents and --out replaced them everywhere.
OLD_FLAGS = (
    "--philosophers",
    "--num-philosophers",
    "--agents",
    "--craft-agents",
    "--dining-agents",
    "--sizes",
    "--table-sizes",
    "--run-dir",
    "--out-dir",
    "--runs-dir",
)
# A benchmark that trains keeps its training runs apart from its results (--out).
BENCHMARK_FLAGS = ("--runs-dir",)
# What every command of a kind must take.
REQUIRED = {
    ("eval",): ("env", "seed", "episodes", "out"),
    ("eval-llm",): ("env", "seed", "episodes", "out"),
    ("bench", "policies"): ("env", "seed", "episodes", "out"),
    ("train",): ("env", "out"),
}


def _name(part) -> str:
    return part if isinstance(part, str) else " ".join(part or ["-"])


def config_of(words: tuple[str, ...]) -> type:
    return typing.get_type_hints(_load(COMMANDS[words]))["config"]


def takes_env(config_type: type) -> bool:
    return with_env_options(config_type, []) is not config_type


def command_lines() -> list[tuple[tuple[str, ...], str | None]]:
    """Every command, once per registered environment where it takes one."""
    return [
        (words, env)
        for words in sorted(COMMANDS)
        for env in (alemlite.registered_environments() if takes_env(config_of(words)) else [None])
    ]


def flags_of(config_type: type, env: str | None) -> dict[str, Flag]:
    if env is not None:
        config_type = with_env_options(config_type, ["--env", env])
    return command_flags(config_type)


def flag_type(kind: typing.Any) -> typing.Any:
    """The type a flag reads: `T | None` reads a T (None: the command picks), a Literal of
    strings a str."""
    args = typing.get_args(kind)
    if typing.get_origin(kind) in (typing.Union, types.UnionType) and type(None) in args:
        (kind,) = [arg for arg in args if arg is not type(None)]
    if typing.get_origin(kind) is typing.Literal and all(isinstance(a, str) for a in args):
        return str
    return kind


def drift(
    config_type: type, env: str | None, defaults: bool = True, allowed: tuple[str, ...] = ()
) -> list[str]:
    """Every way a command's flags depart from the shared table (its defaults too, unless
    `defaults` is false; `allowed`: old spellings it may keep)."""
    problems = []
    for name, flag in flags_of(config_type, env).items():
        if flag.name in OLD_FLAGS and flag.name not in allowed:
            problems.append(f"{flag.name}: an old spelling of a shared option")
        leaf = name.rsplit(".", 1)[-1]
        shared = SHARED_OPTIONS.get(leaf)
        if shared is None:
            continue
        # A group of options (one environment's, where a script plays two) keeps the spelling
        # under its prefix: --dining.num-agents.
        wanted = "--" + leaf.replace("_", "-")
        if flag.name != wanted and not flag.name.endswith("." + wanted.removeprefix("--")):
            problems.append(f"{flag.name}: the shared option {leaf} is spelled {wanted}")
        # A sweep over values of the option reads several: `tuple[T, ...]`.
        if flag_type(flag.type) not in (shared.type, tuple[shared.type, ...]):
            problems.append(f"{flag.name}: type {flag.type}, the table's is {shared.type}")
        # The env's default is the environment named (with_env_options); checked below.
        if not defaults or shared.default is None or leaf == "env":
            continue
        if flag.default != shared.default:
            table = shared.default
            problems.append(f"{flag.name}: default {flag.default!r}, the table's is {table!r}")
    if env is not None:
        env_default = command_flags(config_type)["env"].default
        if env_default != SHARED_OPTIONS["env"].default:
            problems.append(f"--env: default {env_default!r}")
    return problems


@pytest.mark.parametrize("words, env", command_lines(), ids=_name)
def test_every_command_spells_shared_options_as_the_table_does(words, env):
    assert drift(config_of(words), env) == []


def script_config(module: str) -> type:
    module_name, class_name = MAIN_CONFIGS[module].split(":")
    return getattr(__import__(module_name, fromlist=[class_name]), class_name)


@pytest.mark.parametrize("module", sorted(MAIN_CONFIGS))
def test_every_benchmark_script_spells_shared_options_as_the_table_does(module):
    # A script's defaults are its published protocol (16 Craft episodes per team, 300 dining
    # episodes), so names and types are held to the table, not defaults.
    assert drift(script_config(module), None, defaults=False, allowed=BENCHMARK_FLAGS) == []


@pytest.mark.parametrize("words, env", command_lines(), ids=_name)
def test_every_command_line_parses_with_the_environments_options(words, env):
    config_type = config_of(words)
    if env is not None:
        config_type = with_env_options(config_type, ["--env", env])
    # A command flag that an environment's option shadows would stop the parser here.
    parser = tyro.extras.get_parser(config_type)
    assert parser.prog


@pytest.mark.parametrize("words, needed", sorted(REQUIRED.items()), ids=_name)
def test_commands_of_a_kind_take_the_options_of_their_kind(words, needed):
    for env in alemlite.registered_environments():
        flags = {flag.name for flag in flags_of(config_of(words), env).values()}
        assert {"--" + name for name in needed} <= flags, (env, sorted(flags))


def test_a_drifting_flag_is_caught(monkeypatch):
    # A command that spells the table size and its output its own way, types the seed as
    # text and plays 300 episodes by default...
    @dataclass(frozen=True)
    class Drifting(PoliciesConfig):
        philosophers: int = 5
        out_dir: Path | None = None
        seed: str = "0"
        episodes: int = 300

    assert drift(PoliciesConfig, "dining") == []
    assert drift(Drifting, "dining") == [
        "--episodes: default 300, the table's is 32",
        "--seed: type <class 'str'>, the table's is <class 'int'>",
        "--seed: default '0', the table's is 0",
        "--philosophers: an old spelling of a shared option",
        "--out-dir: an old spelling of a shared option",
    ]

    # ...and an environment whose option takes a shared name with another type.
    @dataclass(frozen=True)
    class TextTable(EnvOptions):
        num_agents: str = "5"

    text_table = dataclasses.replace(alemlite.spec("dining"), options=TextTable)
    monkeypatch.setitem(registry._SPECS, "dining", text_table)
    assert drift(PoliciesConfig, "dining") == [
        "--num-agents: type <class 'str'>, the table's is <class 'int'>"
    ]
