"""The `alemlite` command: dispatch, evaluation reports and clear errors."""

import dataclasses
import json
import subprocess
import sys
import typing
from pathlib import Path

import pytest

from alemlite.core import ConfigError
from alemlite_app.cli import COMMANDS, _load, flag_names, main
from alemlite_app.demo import DemoConfig, _training


def test_eval_dining_prints_a_table_and_writes_per_episode_json(tmp_path, capsys):
    main(["eval", "dining", "--policy", "greedy_left", "--episodes", "8", "--out", str(tmp_path)])
    printed = capsys.readouterr().out
    assert "deadlock" in printed and "95% CI" in printed
    (path,) = tmp_path.glob("dining_5_greedy_left_shaped_*.json")
    report = json.loads(path.read_text())
    # greedy-left deadlocks at the first step of every episode.
    assert report["episodes"]["deadlock"] == [True] * 8
    assert report["summary"]["deadlock"]["ci"] == "wilson"
    assert report["summary"]["episode_length"]["mean"] == 1.0


def test_eval_craft_reports_achievements(tmp_path, capsys):
    argv = ["eval", "craft", "--policy", "random", "--episodes", "2", "--agents", "2"]
    # The plain world: the command is under test here, the coordination layer elsewhere.
    argv += ["--no-coordination", "--map-size", "16", "--max-steps", "12"]
    main([*argv, "--out", str(tmp_path)])
    (path,) = tmp_path.glob("craft_2_16_medium_random_*.json")
    report = json.loads(path.read_text())
    assert report["summary"]["episode_length"]["mean"] <= 12
    assert len(report["episodes"]["episode_return"]) == 2


def test_runs_with_other_settings_keep_their_own_reports(tmp_path):
    argv = ["eval", "dining", "--policy", "backoff", "--episodes", "4", "--out", str(tmp_path)]
    main(argv)
    main([*argv, "--mode", "sequential"])
    main(argv)  # the same settings again: its own report, rewritten
    reports = sorted(tmp_path.glob("dining_5_backoff_shaped_*.json"))
    modes = {json.loads(path.read_text())["config"]["mode"] for path in reports}
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
    error = _refusal(["eval", "dining", "--policy", "greedy", "--out", str(tmp_path)], capsys)
    assert error.count("\n") == 1 and "Traceback" not in error
    assert error.startswith("alemlite eval dining: error: unknown policy 'greedy'")
    assert "resource_ordering" in error


def test_debug_shows_the_error_itself(tmp_path):
    with pytest.raises(ConfigError, match="unknown policy 'greedy'"):
        main(["eval", "dining", "--policy", "greedy", "--debug", "--out", str(tmp_path)])


def test_errors_name_the_flags_the_user_typed(capsys):
    error = _refusal(["train", "--num-envs", "6", "--ppo.num-minibatches", "4"], capsys)
    assert error == (
        "alemlite train: error: --num-envs=6 must be divisible by --ppo.num-minibatches=4\n"
    )
    error = _refusal(["train", "--ppo.gamma", "2"], capsys)  # checked by the nested config
    assert error == "alemlite train: error: --ppo.gamma=2.0 must lie in [0, 1]\n"
    error = _refusal(["eval", "dining", "--episodes", "0"], capsys)
    assert error == "alemlite eval dining: error: --episodes=0 must be at least 1\n"
    error = _refusal(["eval", "dining", "--philosophers", "1"], capsys)  # the environment's check
    assert error.startswith("alemlite eval dining: error: --philosophers=1 is too small")


def test_flags_follow_tyro_and_skip_positionals():
    from baselines.common.config import TrainConfig

    flags = flag_names(TrainConfig)
    assert flags["num_envs"] == "--num-envs" and flags["ppo.gamma"] == "--ppo.gamma"
    assert flags["gamma"] == "--ppo.gamma"  # unique: the nested config's own checks use it
    assert "algorithm" not in flags  # `alemlite train ippo`: no flag to name


def test_unknown_command_prints_usage_and_fails(capsys):
    error = _refusal(["evaluate"], capsys)
    assert error.startswith("alemlite: unknown command 'evaluate'\n")
    assert "alemlite eval dining" in error


def test_unknown_environment_is_named_with_the_environments(capsys):
    error = _refusal(["eval", "chess"], capsys)
    assert error.startswith(
        "alemlite eval: unknown environment 'chess'; choose one of: craft, dining"
    )


def test_the_command_exits_2_with_one_line_and_no_traceback(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "alemlite_app.cli", "eval", "craft", "--episodes", "0"],
        capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == "alemlite eval craft: error: --episodes=0 must be at least 1\n"


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


def _numeric_flags(config_type) -> list[str]:
    """Every numeric option of a command (nested configs included), seeds left out: any
    integer is a seed."""
    from alemlite_app.cli import _dotted_flags

    hints = {}

    def collect(kind, prefix=""):
        for field in dataclasses.fields(kind):
            hint = typing.get_type_hints(kind)[field.name]
            if dataclasses.is_dataclass(hint):
                collect(hint, f"{prefix}{field.name}.")
            else:
                hints[f"{prefix}{field.name}"] = hint

    collect(config_type)
    numeric = (int, float, int | None, float | None, tuple[int, ...], tuple[float, ...])
    return [
        flag
        for name, flag in _dotted_flags(config_type).items()
        if hints[name] in numeric and "seed" not in name
    ]


@pytest.mark.parametrize("words", sorted(COMMANDS), ids=" ".join)
def test_every_numeric_option_is_checked_when_the_command_line_is_read(words, monkeypatch, capsys):
    config_type = typing.get_type_hints(_load(COMMANDS[words]))["config"]

    def never_run(config):
        raise AssertionError(f"alemlite {' '.join(words)} ran with a bad value: {config}")

    never_run.__annotations__ = {"config": config_type}
    monkeypatch.setattr("alemlite_app.cli._load", lambda target: never_run)
    unchecked = []
    for flag in _numeric_flags(config_type):
        with pytest.raises(SystemExit) as exit_info:
            main([*words, f"{flag}=-1"])
        error = capsys.readouterr().err
        if exit_info.value.code != 2 or f"{flag}=" not in error or error.count("\n") != 1:
            unchecked.append((flag, error))
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
