"""`alemlite eval-llm` (with an ablation sweep) and `alemlite compare`, end to end."""

from __future__ import annotations

import json

import numpy as np
import pytest

from alemlite.core.errors import ConfigError
from alemlite.report import read_episodes, write_report
from alemlite.stats import hedges_g, mann_whitney_u, welch_t_test
from alemlite_app.cli import main
from llm_bridge.compare import compare_results
from llm_bridge.transcripts import read_records
from tests.llm_server import ChatServer, Faults, dining_resource_ordering


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep")
    # Random neighbours and some junk replies, so that per-episode values vary.
    with ChatServer(dining_resource_ordering, Faults(malformed=0.2)) as server:
        main(
            ["eval-llm", "--env", "dining", "--base-url", server.base_url, "--model", "scripted",
             "--episodes", "4", "--max-steps", "6", "--philosophers", "3", "--out", str(out),
             "--no-progress", "--ablation", "base", "no-comm",
             "--agents", "llm", "uniform_random", f"llm:other@{server.base_url}"]
        )  # fmt: skip
    return out, server.log


def test_ablation_sweep_writes_one_run_per_ablation(sweep, capsys):
    out, log = sweep
    base = json.loads((out / "base" / "summary.json").read_text())
    quiet = json.loads((out / "no-comm" / "summary.json").read_text())
    assert base["config"]["team"] == ["scripted", "uniform_random", "other"]
    assert base["config"]["prompt"]["communication"] is True
    assert quiet["config"]["prompt"]["communication"] is False
    assert base["usage"]["requests"] + quiet["usage"]["requests"] == log.requests
    failed = base["usage"]["parse_methods"]["failed"] + quiet["usage"]["parse_methods"]["failed"]
    assert failed == log.faults["malformed"] > 0
    said = ["says:" in turn["prompt"][-1]["content"] for turn in _turns(out / "base")]
    assert any(said)
    assert not any("says:" in turn["prompt"][-1]["content"] for turn in _turns(out / "no-comm"))
    header = next(read_records(out / "no-comm" / "transcript.jsonl"))
    assert "<message>" not in header["system_prompt"]


def _turns(out):
    return [r for r in read_records(out / "transcript.jsonl") if r["type"] == "turn"]


def test_compare_command_matches_the_statistics(sweep, tmp_path, capsys):
    out, _ = sweep
    a, b = out / "base" / "summary.json", out / "no-comm" / "summary.json"
    main(["compare", str(a), str(b), "--out", str(tmp_path / "cmp.json")])
    printed = capsys.readouterr().out
    assert "Welch p" in printed and "prompt_tokens" in printed
    results = json.loads((tmp_path / "cmp.json").read_text())["metrics"]
    tokens_a, tokens_b = read_episodes(a)["prompt_tokens"], read_episodes(b)["prompt_tokens"]
    entry = results["prompt_tokens"]
    assert entry["mean_a"] > entry["mean_b"]  # messages make prompts longer
    assert np.ptp(tokens_a) > 0
    assert entry["welch_p"] == pytest.approx(welch_t_test(tokens_a, tokens_b)[1])
    assert entry["hedges_g"] == pytest.approx(hedges_g(tokens_a, tokens_b))
    assert entry["mann_whitney_p"] == pytest.approx(mann_whitney_u(tokens_a, tokens_b)[1])
    assert entry["ci_a"][0] <= entry["mean_a"] <= entry["ci_a"][1]


def test_compare_reads_any_two_reports(tmp_path):
    rng = np.random.default_rng(0)
    values = {"a": rng.normal(1.0, 1.0, 40), "b": rng.normal(0.0, 1.0, 40)}
    for name, episodes in values.items():
        episodes = {"score": episodes, "per_seat": np.ones((40, 2))}
        write_report(tmp_path / f"{name}.json", {"env": "dining", "seed": 0}, episodes)
    results = compare_results(tmp_path / "a.json", tmp_path / "b.json")
    assert list(results) == ["score"]  # per-seat vectors are not compared
    assert results["score"]["hedges_g"] == pytest.approx(hedges_g(values["a"], values["b"]))
    assert results["score"]["welch_p"] < 0.05
    with pytest.raises(ConfigError, match="not in both files"):
        compare_results(tmp_path / "a.json", tmp_path / "b.json", ("meals",))


def test_an_llm_run_compares_with_an_eval_report_of_the_same_settings(sweep, tmp_path, capsys):
    out, _ = sweep
    # `alemlite eval dining` on the sweep's table, steps and seeds, with more episodes.
    main(["eval", "dining", "--philosophers", "3", "--max-steps", "6", "--episodes", "8",
          "--out", str(tmp_path)])  # fmt: skip
    llm = out / "base" / "summary.json"
    (report,) = tmp_path.glob("dining_3_resource_ordering_shaped_*.json")
    main(["compare", str(llm), str(report), "--out", str(tmp_path / "cmp.json")])
    written = json.loads((tmp_path / "cmp.json").read_text())
    assert written["mismatched_settings"] == {}
    assert written["settings"]["a"] == written["settings"]["b"]
    assert written["settings"]["b"]["env"] == "dining"
    assert written["metrics"]["episode_return"]["n_b"] == 8
    assert "settings differ" not in capsys.readouterr().out


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--concurrency", "0"], "--concurrency=0 must be at least 1"),
        (["--max-retries", "-1"], "--max-retries=-1 must be 0 or more"),
        (["--timeout-s", "0"], "--timeout-s=0.0 must be a positive number of seconds"),
        (["--episodes", "0"], "--episodes=0 must be at least 1"),
        (["--max-steps", "0"], "--max-steps=0 must be at least 1"),
        (["--max-tokens", "0"], "--max-tokens=0 must be at least 1"),
        (["--temperature", "-1"], "--temperature=-1.0 must be a finite number >= 0"),
        (["--input-price-per-mtok", "-2"], "--input-price-per-mtok=-2.0 must be a number >= 0"),
        (["--hf-batch-size", "0"], "--hf-batch-size=0 must be at least 1"),
        (["--history", "-1"], "--history=-1 must be 0 or more"),
        (["--philosophers", "1"], "--philosophers=1 is too small; a table needs at least 2"),
        (["--max-failed-fraction", "1.5"], "--max-failed-fraction=1.5 must lie in [0, 1]"),
        (["--ablation", "base", "louder"], "unknown ablation 'louder'"),
        (["--env", "craft", "--num-agents", "0"], "--num-agents=0 must lie in 1..8"),
        (["--env", "craft", "--map-size", "8"], "--map-size=8 must lie in 16..128"),
        (["--env", "craft", "--difficulty", "2"], "--difficulty=2.0 must be one of"),
    ],
)
def test_eval_llm_options_are_checked_before_anything_runs(flags, message, tmp_path, capsys):
    # No server listens at this URL: the check must come before any request.
    base = ["eval-llm", "--base-url", "http://127.0.0.1:9/v1", "--out", str(tmp_path / "run")]
    with pytest.raises(SystemExit) as caught:
        main([*base, *flags])
    assert caught.value.code == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"alemlite eval-llm: error: {message}")
    assert not (tmp_path / "run").exists()
