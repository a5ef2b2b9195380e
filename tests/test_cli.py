"""The `alemlite` command: dispatch, evaluation reports, rendering and clear errors."""

import dataclasses
import json
import re
import subprocess
import sys
import typing
from pathlib import Path

import imageio.v3 as iio
import jax
import pytest

import alemlite
from alemlite.core import ConfigError, registry
from alemlite_app.cli import (
    COMMANDS,
    _load,
    _one_line,
    command_flags,
    flag_names,
    main,
    with_env_options,
)
from alemlite_app.demo import DemoConfig, _training

ENVIRONMENTS = ", ".join(alemlite.registered_environments())


def test_eval_dining_prints_a_table_and_writes_per_episode_json(tmp_path, capsys):
    argv = ["eval", "--env", "dining", "--team", "greedy_left", "--episodes", "8"]
    main([*argv, "--out", str(tmp_path)])
    printed = capsys.readouterr().out
    assert "deadlock" in printed and "95% CI" in printed
    (path,) = tmp_path.glob("dining_5_shaped_greedy_left_*.json")
    report = json.loads(path.read_text())
    # greedy-left deadlocks at the first step of every episode.
    assert report["episodes"]["deadlock"] == [True] * 8
    assert report["summary"]["deadlock"]["ci"] == "wilson"
    assert report["summary"]["episode_length"]["mean"] == 1.0


def test_eval_craft_reports_achievements(tmp_path, capsys):
    argv = ["eval", "--env", "craft", "--team", "random", "--episodes", "2", "--num-agents", "2"]
    # The plain world: the command is under test here, the coordination layer elsewhere.
    argv += ["--no-coordination", "--map-size", "16", "--max-steps", "12"]
    main([*argv, "--out", str(tmp_path)])
    (path,) = tmp_path.glob("craft_2_16_medium_plain_random_*.json")
    report = json.loads(path.read_text())
    assert report["summary"]["episode_length"]["mean"] <= 12
    assert len(report["episodes"]["episode_return"]) == 2


def test_runs_with_other_settings_keep_their_own_reports(tmp_path):
    argv = ["eval", "--env", "dining", "--team", "backoff", "--episodes", "4"]
    argv += ["--out", str(tmp_path)]
    main(argv)
    main([*argv, "--mode", "sequential"])
    main(argv)  # the same settings again: its own report, rewritten
    reports = sorted(tmp_path.glob("dining_5_shaped_backoff_*.json"))
    modes = {json.loads(path.read_text())["config"]["options"]["mode"] for path in reports}
    assert len(reports) == 2 and modes == {"simultaneous", "sequential"}


def _refusal(argv, capsys) -> str:
    """What `alemlite ARGV` prints when it refuses: one line on stderr, exit status 2."""
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    printed = capsys.readouterr()
    assert printed.out == ""
    return printed.err


def test_unknown_policy_is_named_with_the_choices_in_one_line(tmp_path, capsys):
    argv = ["eval", "--env", "dining", "--team", "greedy", "--out", str(tmp_path)]
    error = _refusal(argv, capsys)
    assert error.count("\n") == 1 and "Traceback" not in error
    assert error.startswith("alemlite eval: error: unknown dining policy 'greedy'")
    assert "resource_ordering" in error


def test_debug_shows_the_error_itself(tmp_path):
    with pytest.raises(ConfigError, match="unknown dining policy 'greedy'"):
        main(["eval", "--env", "dining", "--team", "greedy", "--debug", "--out", str(tmp_path)])


def test_errors_name_the_flags_the_user_typed(capsys):
    error = _refusal(["train", "--num-envs", "6", "--ppo.num-minibatches", "4"], capsys)
    assert error == (
        "alemlite train: error: --num-envs=6 must be divisible by --ppo.num-minibatches=4\n"
    )
    error = _refusal(["train", "--ppo.gamma", "2"], capsys)  # checked by the nested config
    assert error == "alemlite train: error: --ppo.gamma=2.0 must lie in [0, 1]\n"
    error = _refusal(["eval", "--env", "dining", "--episodes", "0"], capsys)
    assert error == "alemlite eval: error: --episodes=0 must be at least 1\n"
    error = _refusal(["eval", "--num-agents", "1"], capsys)  # the environment's own check
    assert error.startswith("alemlite eval: error: --num-agents=1 is too small")


def test_flags_follow_tyro_and_skip_positionals():
    from baselines.common.config import TrainConfig

    flags = flag_names(TrainConfig)
    assert flags["num_envs"] == "--num-envs" and flags["ppo.gamma"] == "--ppo.gamma"
    assert flags["gamma"] == "--ppo.gamma"  # unique: the nested config's own checks use it
    assert "algorithm" not in flags  # `alemlite train ippo`: no flag to name
    # The options of the environment --env names are flags without a prefix.
    craft = command_flags(with_env_options(TrainConfig, ["--env", "craft"]))
    assert craft["map_size"].name == "--map-size" and craft["map_size"].default == 48
    assert craft["num_envs"].type is int and "map_size" not in command_flags(TrainConfig)


def test_unknown_command_prints_usage_and_fails(capsys):
    error = _refusal(["evaluate"], capsys)
    assert error.startswith("alemlite: unknown command 'evaluate'\n")
    assert "  alemlite eval\n" in error and "  alemlite bench policies\n" in error


def test_unknown_environment_is_named_with_the_environments(capsys):
    error = _refusal(["eval", "--env", "chess"], capsys)
    assert error == (
        f"alemlite eval: error: unknown environment 'chess'; choose one of: {ENVIRONMENTS}\n"
    )


def test_an_environment_named_without_env_says_how_to_name_it(capsys):
    error = _refusal(["eval", "craft", "--episodes", "4"], capsys)
    assert error == (
        "alemlite eval: name the environment with --env (alemlite eval --env craft ...)\n"
    )
    error = _refusal(["train", "dining"], capsys)  # before the algorithm's own choices
    assert error.startswith("alemlite train: name the environment with --env")
    error = _refusal(["eval", "chess"], capsys)
    assert error == (
        f"alemlite eval: unknown argument 'chess'; name the environment with --env "
        f"({ENVIRONMENTS})\n"
    )
    error = _refusal(["bench", "throughput"], capsys)
    assert error == (
        "alemlite bench: unknown benchmark 'throughput'; choose one of: gpu, policies, prompts, "
        f"training; name the environment with --env ({ENVIRONMENTS})\n"
    )


def test_the_command_exits_2_with_one_line_and_no_traceback(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "alemlite_app.cli", "eval", "--env", "craft", "--episodes", "0"],
        capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == "alemlite eval: error: --episodes=0 must be at least 1\n"


def test_render_writes_a_gif_of_an_environment_that_draws(tmp_path, capsys):
    out = tmp_path / "episode.gif"
    argv = ["render", "--env", "craft", "--seed", "1", "--policy", "scripted", "--map-size", "16"]
    main([*argv, "--steps", "8", "--stride", "3", "--out", str(out)])
    frames = iio.imread(out, index=None)
    craft = alemlite.spec("craft")
    env = craft.build(craft.options(map_size=16))
    params = env.default_params
    # The picture's shape alone, traced without compiling (run eagerly, each operation of
    # the reset and the drawing would compile on its own: hundreds of programs).
    picture = jax.eval_shape(
        lambda key: craft.render_rgb(env, env.reset(key, params)[1], params),
        jax.random.PRNGKey(0),
    )
    assert frames.shape == (3, *picture.shape)  # steps 0, 3 and 6 of the whole map
    assert capsys.readouterr().out.startswith(f"wrote {out} (")


def test_render_writes_text_frames_of_an_environment_that_describes_itself(tmp_path):
    out = tmp_path / "episode.txt"
    argv = ["render", "--env", "matrix", "--num-agents", "2", "--max-steps", "5"]
    main([*argv, "--steps", "20", "--stride", "2", "--out", str(out)])
    frames = out.read_text().split("\n\n")
    # The game ends after its 5 rounds: frames of rounds 0, 2 and 4.
    assert [re.search(r"(\d+) of 5 rounds played", f).group(1) for f in frames] == ["0", "2", "4"]


def test_render_refuses_an_environment_without_a_renderer(monkeypatch, capsys):
    blind = dataclasses.replace(alemlite.spec("matrix"), name="blind", render_text=None)
    monkeypatch.setitem(registry._SPECS, "blind", blind)
    error = _refusal(["render", "--env", "blind"], capsys)
    assert error == (
        "alemlite render: error: --env='blind' has no renderer (its spec gives neither "
        "render_rgb nor render_text); choose another environment\n"
    )
    error = _refusal(["render", "--env", "craft", "--policy", "greedy"], capsys)
    assert error.startswith("alemlite render: error: unknown craft policy 'greedy'")


def test_the_demo_accepts_any_number_of_training_updates(capsys):
    for updates in (1, 50, 53, 80):
        training = _training(DemoConfig(train_updates=updates), Path("unused"))
        assert training.num_updates == updates  # a valid TrainConfig was built
        assert updates / 8 <= training.eval_interval <= max(1, updates / 2)
    error = _refusal(["demo", "--train-updates", "0"], capsys)
    assert error == "alemlite demo: error: --train-updates=0 must be at least 1\n"


def test_every_command_names_a_function_of_one_typed_config():
    for words, target in COMMANDS.items():
        function = _load(target)
        hints = typing.get_type_hints(function)
        assert dataclasses.is_dataclass(hints["config"]), (words, target)


NUMERIC = (int, float, int | None, float | None, tuple[int, ...], tuple[float, ...])


def _negative(default) -> bool:
    return isinstance(default, int | float) and default < 0


def _command_lines(config_type) -> list[list[str]]:
    """The ways to call a command: once per registered environment where it takes one."""
    if with_env_options(config_type, []) is config_type:
        return [[]]
    return [["--env", name] for name in alemlite.registered_environments()]


@pytest.mark.parametrize("words", sorted(COMMANDS), ids=" ".join)
def test_every_numeric_option_is_checked_when_the_command_line_is_read(words, monkeypatch, capsys):
    config_type = typing.get_type_hints(_load(COMMANDS[words]))["config"]

    def never_run(config):
        raise AssertionError(f"alemlite {' '.join(words)} ran with a bad value: {config}")

    never_run.__annotations__ = {"config": config_type}
    monkeypatch.setattr("alemlite_app.cli._load", lambda target: never_run)
    unchecked = []
    for env in _command_lines(config_type):
        flags = command_flags(with_env_options(config_type, env))
        # Left out: seeds (any integer is a seed) and options whose default is negative (a
        # penalty), which take -1.
        numeric = [
            flag.name
            for name, flag in flags.items()
            if flag.type in NUMERIC and "seed" not in name and not _negative(flag.default)
        ]
        for flag in numeric:
            with pytest.raises(SystemExit) as exit_info:
                main([*words, *env, f"{flag}=-1"])
            error = capsys.readouterr().err
            if exit_info.value.code != 2 or f"{flag}=" not in error or error.count("\n") != 1:
                unchecked.append((*env, flag, error))
    assert not unchecked


def test_an_interrupted_command_says_how_to_continue(monkeypatch, capsys):
    def interrupted(config):
        raise KeyboardInterrupt

    config_type = typing.get_type_hints(_load(COMMANDS[("train",)]))["config"]
    interrupted.__annotations__ = {"config": config_type}
    monkeypatch.setattr("alemlite_app.cli._load", lambda target: interrupted)
    with pytest.raises(SystemExit) as exit_info:
        main(["train", "--num-updates", "10"])
    assert exit_info.value.code == 130
    assert capsys.readouterr().err == (
        "\nalemlite train: interrupted; what it wrote is kept; rerun it with --resume to "
        "continue from its last checkpoint\n"
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["eval", "--env", "matrix", "--game", "chess_game"],
            "invalid choice 'chess_game' for argument '--game'. Expected one of ('climbing', "
            "'penalty', 'stag_hunt', 'prisoners_dilemma')",
        ),
        (
            ["eval", "--episodes", "abc"],
            "Error parsing --episodes: invalid literal for int() with base 10: 'abc'",
        ),
        (["eval", "--bogus", "3"], "Unrecognized options: --bogus, 3"),
    ],
    ids=["choice", "value", "unknown"],
)
def test_a_value_the_parser_refuses_is_one_line(argv, message, capsys):
    """tyro draws these in a box of many lines; the command says them in one."""
    error = _refusal(argv, capsys)
    assert error == f"alemlite eval: error: {message}; `alemlite eval --help` lists the options\n"


def test_the_utf8_box_gives_the_same_line():
    """A UTF-8 terminal gets tyro's box with its title in the border."""
    box = (
        "╭─ Value error ───────────────────────────────────────────────────────────╮\n"
        "│ Error parsing --episodes: invalid literal for int() with base 10: 'abc' │\n"
        "│ ─────────────────────────────────────────────────────────────────────── │\n"
        "│ Argument helptext:                                                      │\n"
        "│     --episodes INT                                                      │\n"
        "╰─────────────────────────────────────────────────────────────────────────╯\n"
    )
    assert (
        _one_line(box) == "Error parsing --episodes: invalid literal for int() with base 10: 'abc'"
    )
