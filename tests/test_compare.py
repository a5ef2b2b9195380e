"""`alemlite compare`: the rliable aggregates beside the per-metric tests; which files and
which pairs of results it refuses."""

import dataclasses
import json

import numpy as np
import pytest

import alemlite
from alemlite.core.errors import ConfigError
from alemlite.report import write_report
from alemlite_app.cli import main
from llm_bridge.compare import CompareConfig, compare_command, mismatched_settings
from llm_bridge.transcripts import Transcript

DINING = {
    "env": "dining",
    "options": dataclasses.asdict(alemlite.spec("dining").options(num_agents=3, max_steps=6)),
    "team": ["policy:resource_ordering"] * 3,
    "episodes": 8,
    "seed": 0,
}
"""The config block `alemlite eval --env dining --num-agents 3 --max-steps 6` writes."""


def _report(path, episodes, seed=0, **options):
    """A result file as `alemlite eval` writes it, with another seed or `options`."""
    config = {**DINING, "options": {**DINING["options"], **options}, "seed": seed}
    write_report(path, config, {"score": np.asarray(episodes)})
    return path


def _refusal(a, b, **options) -> str:
    with pytest.raises(ConfigError) as caught:
        compare_command(CompareConfig(a, b, **options))
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_compare_adds_the_iqm_and_probability_of_improvement(tmp_path, capsys):
    # Every episode of A beats every one of B; A's outlier moves its mean, not its IQM.
    a = _report(tmp_path / "a.json", [5.0, 6.0, 7.0, 8.0, 100.0, 6.5, 7.5, 5.5])
    b = _report(tmp_path / "b.json", [1.0, 2.0, 3.0, 4.0])
    out = tmp_path / "cmp.json"
    main(["compare", str(a), str(b), "--out", str(out)])
    written = json.loads(out.read_text())
    assert (written["a"], written["b"], written["mismatched_settings"]) == (str(a), str(b), {})
    entry = written["metrics"]["score"]
    assert entry["probability_of_improvement"] == 1.0
    assert entry["probability_of_improvement_ci"] == [1.0, 1.0]
    assert entry["iqm_a"] == pytest.approx(np.mean([6.0, 6.5, 7.0, 7.5]))
    assert entry["iqm_b"] == pytest.approx(2.5)
    assert entry["iqm_ci_a"][0] < entry["iqm_a"] < entry["iqm_ci_a"][1]
    printed = capsys.readouterr().out
    assert "Welch p" in printed and "P(A > B)" in printed and "1.000 [1.000, 1.000]" in printed
    assert "settings differ" not in printed


@pytest.fixture
def result(tmp_path):
    return _report(tmp_path / "result.json", [1.0, 2.0, 3.0])


def test_a_missing_or_empty_file_or_a_directory_is_refused(tmp_path, result):
    missing = tmp_path / "nowhere.json"
    assert _refusal(missing, result).startswith(f"{missing} does not exist; give a result file")
    empty = tmp_path / "empty.json"
    empty.touch()
    assert _refusal(result, empty).startswith(f"{empty} is empty; give a result file")
    # A directory of results (an ablation sweep): the message names the files inside.
    sweep = tmp_path / "sweep"
    for name in ("base", "no-comm"):
        _report(sweep / name / "summary.json", [1.0, 2.0])
    message = _refusal(sweep, result)
    assert message == (
        f"{sweep} is a directory; give a result file inside it: "
        f"{sweep / 'base' / 'summary.json'}, {sweep / 'no-comm' / 'summary.json'}"
    )


def test_a_transcript_is_refused_with_its_summary_named(tmp_path, result):
    run = tmp_path / "run"
    with Transcript(
        run / "transcript.jsonl", "fingerprint", {"config": {"env": "dining"}}
    ) as transcript:
        transcript.write({"type": "step", "step": 0, "live": [0], "actions": [[0, 1, 2]]})
    message = _refusal(run / "transcript.jsonl", result)
    assert message.startswith(f"{run / 'transcript.jsonl'} is an eval-llm transcript")
    assert "has not finished" in message and str(run / "summary.json") in message
    _report(run / "summary.json", [1.0, 2.0])  # the run finished
    assert _refusal(run / "transcript.jsonl", result).endswith(
        f"give the run's result file {run / 'summary.json'}"
    )


def test_a_training_summary_and_other_json_are_refused(tmp_path, result):
    from baselines.common.reporting import held_out_summary, to_json

    # The layout of `alemlite train`'s summary.json: aggregates, no per-episode section.
    held_out = held_out_summary({"episode_return": np.arange(8.0).reshape(2, 4)})
    summary = {"algorithm": "ippo", "env": {"name": "dining"}, "final": held_out}
    run = tmp_path / "ippo-dining"
    run.mkdir()
    (run / "summary.json").write_text(to_json({**summary, "best": held_out}))
    message = _refusal(result, run / "summary.json")
    assert message.startswith(f"{run / 'summary.json'} is a training summary (`alemlite train`)")
    assert f"`alemlite eval --env dining --team checkpoint:{run / 'policy' / 'best'}`" in message
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"episodes": {"score": [1.0, 2.0]}}))
    assert _refusal(result, other).startswith(
        f"{other} is not an evaluation result: it has no config, summary sections"
    )
    other.write_text("{'score': 1}")
    assert _refusal(result, other).startswith(f"{other} is not JSON (")


def test_results_of_other_settings_compare_only_when_allowed(tmp_path, capsys):
    a = _report(tmp_path / "a.json", [1.0, 2.0, 3.0, 4.0])
    b = _report(tmp_path / "b.json", [2.0, 3.0, 4.0], max_steps=10, reward="paper", seed=7)
    # The number of episodes is no setting: an 8-episode report compares with a 500 one;
    # nor is the team, which is what a comparison compares.
    assert mismatched_settings(DINING, {**DINING, "episodes": 500}) == {}
    assert mismatched_settings(DINING, {**DINING, "team": ["llm-model", "backoff", "x"]}) == {}
    assert _refusal(a, b) == (
        f"{a} and {b} were measured under different settings: max_steps 6 vs 10, "
        "reward shaped vs paper, seed 0 vs 7; compare results of the same settings, "
        "or pass --allow-mismatch to compare them anyway"
    )
    out = tmp_path / "cmp.json"
    compare_command(CompareConfig(a, b, out=out, allow_mismatch=True))
    printed = capsys.readouterr().out
    assert printed.startswith(
        "settings differ (--allow-mismatch): max_steps 6 vs 10, reward shaped vs paper, seed 0 vs 7"
    )
    written = json.loads(out.read_text())
    assert written["mismatched_settings"] == {
        "max_steps": [6, 10],
        "reward": ["shaped", "paper"],
        "seed": [0, 7],
    }
    assert written["metrics"]["score"]["n_b"] == 3


def test_settings_are_the_environment_its_options_and_the_seed():
    options = dataclasses.asdict(alemlite.spec("craft").options(difficulty="0.5"))
    craft = {"env": "craft", "options": options, "team": ["policy:team"] * 3, "seed": 0}
    # `alemlite eval-llm` records the model too, which is no setting; "0.50" is 0.5.
    llm = {"env": "craft", "options": {**options, "difficulty": "0.50"}, "model": "m",
           "temperature": 0.0, "team": ["m", "m", "m"], "seed": 0, "episodes": 4}  # fmt: skip
    assert mismatched_settings(craft, llm) == {}
    more = {**llm, "options": {**options, "num_agents": 4}}
    assert mismatched_settings(craft, more) == {"num_agents": [3, 4]}
    assert mismatched_settings(craft, {**llm, "seed": 32}) == {"seed": [0, 32]}
    # Another environment: its own options are not listed one by one.
    assert mismatched_settings(DINING, llm) == {
        "env": ["dining", "craft"],
        "max_steps": [6, 10_000],
    }
    # The same environment, an option one result does not record.
    fewer = {**llm, "options": {k: v for k, v in options.items() if k != "coordination"}}
    assert mismatched_settings(craft, fewer) == {"coordination": [True, "(not recorded)"]}


def test_out_never_replaces_anything_but_the_same_comparison(tmp_path, result, capsys):
    other = _report(tmp_path / "other.json", [2.0, 3.0, 4.0])
    before = result.read_text()
    message = _refusal(result, other, out=result)
    assert message.startswith(f"out={result} must be a new file or an earlier comparison")
    assert result.read_text() == before
    out = tmp_path / "cmp.json"
    compare_command(CompareConfig(result, other, out=out))
    compare_command(CompareConfig(result, other, out=out))
    assert capsys.readouterr().out.rstrip().endswith(f"replaced {out}")
    assert _refusal(other, result, out=out).startswith(f"out={out} must be a new file")


def test_each_metric_is_named_once(result):
    with pytest.raises(ConfigError, match=r"^metrics=score score must name each metric once"):
        CompareConfig(result, result, metrics=("score", "score"))


def test_a_run_marked_not_valid_is_refused(tmp_path):
    path = _report(tmp_path / "a.json", [1.0, 2.0])
    body = json.loads(path.read_text())
    path.write_text(json.dumps({**body, "valid": False, "reason": "40% of LLM turns failed"}))
    message = _refusal(path, _report(tmp_path / "b.json", [1.0, 2.0]))
    assert "marked not valid (40% of LLM turns failed)" in message


def test_a_run_stopped_as_not_valid_is_refused_as_such(tmp_path):
    """A run stopped early writes no summary or episodes: the refusal says why it is not valid,
    not that sections are missing."""
    path = tmp_path / "summary.json"
    reason = "stopped at step 0: more than max_failed_fraction=0.01 of the at most 24 turns failed"
    config = {**DINING, "episodes": 2}
    path.write_text(json.dumps({"config": config, "valid": False, "reason": reason}))
    message = _refusal(path, _report(tmp_path / "b.json", [1.0, 2.0]))
    assert message == (
        f"{path} is from a run marked not valid ({reason}); rerun its `alemlite eval-llm` "
        "command to ask the failed turns again"
    )
