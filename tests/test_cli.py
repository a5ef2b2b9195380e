"""The `alemlite` command: dispatch, evaluation reports and clear errors."""

import dataclasses
import json
import typing

import pytest

from alemlite.cli import COMMANDS, _load, main
from alemlite.core import ConfigError


def test_eval_dining_prints_a_table_and_writes_per_episode_json(tmp_path, capsys):
    main(["eval", "dining", "--policy", "greedy_left", "--episodes", "8", "--out", str(tmp_path)])
    printed = capsys.readouterr().out
    assert "deadlock" in printed and "95% CI" in printed
    report = json.loads((tmp_path / "dining_5_greedy_left_shaped.json").read_text())
    # greedy-left deadlocks at the first step of every episode.
    assert report["episodes"]["deadlock"] == [True] * 8
    assert report["summary"]["deadlock"]["ci"] == "wilson"
    assert report["summary"]["episode_length"]["mean"] == 1.0


def test_eval_craft_reports_achievements(tmp_path, capsys):
    argv = ["eval", "craft", "--policy", "random", "--episodes", "2", "--agents", "2"]
    main([*argv, "--map-size", "16", "--max-steps", "12", "--out", str(tmp_path)])
    report = json.loads((tmp_path / "craft_2_16_medium_random.json").read_text())
    assert report["summary"]["episode_length"]["mean"] <= 12
    assert len(report["episodes"]["episode_return"]) == 2


def test_unknown_policy_is_named_with_the_choices(tmp_path):
    with pytest.raises(ConfigError, match=r"unknown policy 'greedy'.*resource_ordering"):
        main(["eval", "dining", "--policy", "greedy", "--out", str(tmp_path)])


def test_unknown_command_prints_usage_and_fails(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["evaluate"])
    assert exit_info.value.code == 2
    assert "alemlite eval dining" in capsys.readouterr().err


def test_every_command_names_a_function_of_one_typed_config():
    for words, target in COMMANDS.items():
        function = _load(target)
        hints = typing.get_type_hints(function)
        assert dataclasses.is_dataclass(hints["config"]), (words, target)
