"""`alemlite eval` and `alemlite eval-llm` (mixed teams, an ablation sweep, the compiled path
and their refusals) and `alemlite compare`, end to end."""

from __future__ import annotations

import dataclasses
import json
import uuid

import jax.numpy as jnp
import numpy as np
import pytest

import alemlite
from alemlite.core import registry
from alemlite.core.errors import ConfigError
from alemlite.core.spec import EnvOptions, EnvSpec
from alemlite.evaluation import evaluate, seat_policies
from alemlite.report import read_episodes, write_report
from alemlite.stats import hedges_g, mann_whitney_u, welch_t_test
from alemlite_app.cli import main
from llm_bridge.compare import compare_results
from llm_bridge.transcripts import read_records
from tests.llm_server import ChatServer, Faults, craft_alternating, dining_resource_ordering
from tests.toy_env import ToyEnv


@pytest.fixture(scope="module")
def sweep(tmp_path_factory):
    out = tmp_path_factory.mktemp("sweep")
    # Random neighbours and some junk replies, so that per-episode values vary.
    with ChatServer(dining_resource_ordering, Faults(malformed=0.2)) as server:
        main(
            ["eval-llm", "--env", "dining", "--base-url", server.base_url, "--model", "scripted",
             "--episodes", "4", "--max-steps", "6", "--num-agents", "3", "--out", str(out),
             "--no-progress", "--ablation", "base", "no-comm",
             "--team", "llm", "uniform_random", f"llm:other@{server.base_url}"]
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
    # `alemlite eval` (the default team) on the sweep's table, steps and seeds, more episodes.
    main(["eval", "--env", "dining", "--num-agents", "3", "--max-steps", "6", "--episodes", "8",
          "--out", str(tmp_path)])  # fmt: skip
    llm = out / "base" / "summary.json"
    (report,) = tmp_path.glob("dining_3_shaped_resource_ordering_*.json")
    main(["compare", str(llm), str(report), "--out", str(tmp_path / "cmp.json")])
    written = json.loads((tmp_path / "cmp.json").read_text())
    assert written["mismatched_settings"] == {}
    assert written["settings"]["a"] == written["settings"]["b"] == {
        "env": "dining", "num_agents": 3, "max_steps": 6, "reward": "shaped",
        "mode": "simultaneous", "deadlock_mode": "terminate", "seed": 0,
    }  # fmt: skip
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
        (["--num-agents", "1"], "--num-agents=1 is too small; a table needs at least 2"),
        (["--max-failed-fraction", "1.5"], "--max-failed-fraction=1.5 must lie in [0, 1]"),
        (["--ablation", "base", "louder"], "unknown ablation 'louder'"),
        (["--env", "craft", "--num-agents", "0"], "--num-agents=0 must lie in 1..8"),
        (["--env", "craft", "--map-size", "8"], "--map-size=8 must lie in 16..128"),
        (["--env", "craft", "--difficulty", "2"], "--difficulty=2.0 must be one of"),
        (["--seed", "-3000000000"], "--seed=-3000000000 must keep every episode's seed"),
        (["--episodes", "2", "--seed", str(2**31 - 1)], "--seed=2147483647 must keep every"),
        (["--team", "llm", "oracle:best"], "--team seat 'oracle:best' has an unknown kind"),
        (["--team", "checkpoint:"], "--team seat 'checkpoint:' names nothing"),
        (["--team", "llm", "llm"], "--team=llm llm gives 2 seat specs for 5 seats; give 1"),
        (["--team", "resource_ordering", "--ablation", "cot"], "--ablation=cot sweeps prompt"),
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


# ---- any environment, any team -------------------------------------------------------------
CRAFT = ["--env", "craft", "--map-size", "16", "--max-steps", "4", "--episodes", "2"]


def test_eval_plays_a_mixed_craft_team_with_a_language_model(tmp_path):
    """`alemlite eval --env craft --team policy:team policy:team llm`: two scripted seats and
    a model, which plays exactly as the same team does with the model's moves compiled in."""
    with ChatServer(craft_alternating) as server:
        main(["eval", *CRAFT, "--team", "policy:team", "policy:team", "llm", "--model", "scripted",
              "--base-url", server.base_url, "--out", str(tmp_path), "--no-progress"])  # fmt: skip
    report = json.loads((tmp_path / "summary.json").read_text())
    config = report["config"]
    assert config["team"] == ["team", "team", "scripted"]
    assert config["options"] == {"num_agents": 3, "map_size": 16, "max_steps": 4,
                                 "difficulty": "medium", "coordination": True,
                                 "obs_encoding": "dense", "building_cost": 3}  # fmt: skip
    assert (config["env"], config["episodes"], config["seed"]) == ("craft", 2, 0)
    assert (config["prompt"]["variant"], config["prompt"]["history"]) == ("specific", 8)
    turns = _turns(tmp_path)
    assert {turn["seat"] for turn in turns} == {2}
    assert report["usage"]["requests"] == len(turns) == server.log.requests == 4 * 2

    env_spec = alemlite.spec("craft")
    env = env_spec.build(env_spec.options(map_size=16, max_steps=4))
    left, do = env.action_names.index("move_left"), env.action_names.index("do")

    def alternating(key, state, params):  # the server's moves: step t (from 0) shows "Step t+1"
        return jnp.full((env.num_agents,), jnp.where(state.step % 2 == 0, left, do), jnp.int32)

    team = env_spec.policy("team", env)
    direct = evaluate(env, seat_policies([team, team, alternating]), env.default_params, 2, 0)
    for name, values in direct.items():
        np.testing.assert_allclose(report["episodes"][name], values, err_msg=name)


def test_eval_of_a_scripted_craft_team_is_compiled_and_reported(tmp_path, capsys):
    argv = ["eval", *CRAFT, "--num-agents", "2", "--no-coordination", "--out", str(tmp_path)]
    main([*argv, "--team", "team"])
    printed = capsys.readouterr().out
    (path,) = tmp_path.glob("craft_2_16_medium_plain_team_*.json")
    report = json.loads(path.read_text())
    assert report["config"] == {
        "env": "craft",
        "options": {"num_agents": 2, "map_size": 16, "max_steps": 4, "difficulty": "medium",
                    "coordination": False, "obs_encoding": "dense", "building_cost": 3},
        "team": ["policy:team", "policy:team"],
        "episodes": 2,
        "seed": 0,
    }  # fmt: skip
    assert report["episodes"]["episode_length"] == [4, 4]
    # The spec's headline metrics (those of the plain world) lead the table, in its order.
    headline = [name for name in alemlite.spec("craft").metrics if name in report["summary"]]
    assert len(headline) == 3 and list(report["summary"])[:3] == headline
    assert (
        printed.splitlines()[0]
        == "craft P=2, 16x16, difficulty=medium, no coordination layer, team=team"
    )
    assert printed.splitlines()[3].startswith("team_achievement_percent")
    # The same team spelled per seat is the same evaluation: its report is rewritten.
    main([*argv, "--team", "policy:team", "team"])
    assert list(tmp_path.glob("*.json")) == [path]
    assert not (tmp_path / "summary.json").exists()  # no LLM run


def _flags(options: dict) -> list[str]:
    """Command-line flags for environment options given by field name."""
    flags = []
    for name, value in options.items():
        flag = name.replace("_", "-")
        if isinstance(value, bool):
            flags.append(f"--{flag}" if value else f"--no-{flag}")
        else:
            flags += [f"--{flag}", str(value)]
    return flags


PLAYABLE = [name for name in alemlite.registered_environments() if alemlite.spec(name).prompts]


@pytest.mark.parametrize("env_name", PLAYABLE)
def test_every_environment_with_prompts_is_played_by_models_as_its_actions_say(env_name, tmp_path):
    """From the spec alone: a model that always answers action 0 plays as the policy of zeros."""
    env_spec = alemlite.spec(env_name)
    with ChatServer(lambda messages: "<action>0</action>") as server:
        main(["eval-llm", "--env", env_name, *_flags(env_spec.small_options), "--episodes", "2",
              "--model", "zero", "--base-url", server.base_url, "--out", str(tmp_path),
              "--no-progress"])  # fmt: skip
    report = json.loads((tmp_path / "summary.json").read_text())
    assert report["valid"] and report["usage"]["parse_rate"] == 1.0
    assert report["usage"]["requests"] == server.log.requests > 0
    options = env_spec.options(**env_spec.small_options)
    assert report["config"]["options"] == dataclasses.asdict(options)
    assert report["config"]["prompt"]["variant"] == env_spec.prompt_defaults.variant
    env = env_spec.build(options)

    def zeros(key, state, params):
        return jnp.zeros((env.num_agents,), jnp.int32)

    direct = evaluate(env, zeros, env.default_params, 2, 0)
    for name, values in direct.items():
        np.testing.assert_allclose(report["episodes"][name], values, err_msg=name)


@pytest.mark.parametrize("command", ["eval", "eval-llm"])
def test_a_team_of_the_wrong_size_is_refused_naming_team(command, tmp_path, capsys):
    argv = [command, "--env", "dining", "--num-agents", "3", "--team", "backoff", "llm:x"]
    with pytest.raises(SystemExit) as caught:
        main([*argv, "--base-url", "http://127.0.0.1:9/v1", "--out", str(tmp_path / "run")])
    assert caught.value.code == 2
    assert capsys.readouterr().err == (
        f"alemlite {command}: error: --team=backoff llm:x gives 2 seat specs for 3 seats; "
        "give 1 (for every seat) or 3\n"
    )
    assert not (tmp_path / "run").exists()


@dataclasses.dataclass(frozen=True)
class MuteOptions(EnvOptions):
    num_agents: int = 2
    max_steps: int = 3


@pytest.fixture
def mute_env(monkeypatch):
    """An environment whose spec has no prompts, registered under a unique name for this test
    only (the registry is global: the test's copy of it goes when the test ends)."""
    name = f"mute-{uuid.uuid4().hex[:8]}"
    environment = type("MuteToy", (ToyEnv,), {"name": name})

    def always_add(env):
        return lambda key, state, params: jnp.ones((env.num_agents,), jnp.int32)

    monkeypatch.setattr(registry, "_SPECS", dict(registry._SPECS))
    registry.register(
        EnvSpec(
            name=name,
            make=environment,
            options=MuteOptions,
            policies={"add": always_add},
            default_policy="add",
            prompts=None,
        )
    )
    return name


def test_an_environment_without_prompts_is_refused_to_language_models(mute_env, tmp_path, capsys):
    argv = ["--env", mute_env, "--episodes", "3", "--out", str(tmp_path / "out")]
    with pytest.raises(SystemExit) as caught:
        main(["eval-llm", *argv, "--base-url", "http://127.0.0.1:9/v1"])
    assert caught.value.code == 2
    assert capsys.readouterr().err == (
        f"alemlite eval-llm: error: --env={mute_env} has no prompt builder in its spec, so "
        "language models cannot play it; give --team seats without llm\n"
    )
    assert not (tmp_path / "out").exists()
    # Its scripted team plays: every agent adds on the first step, which ends the episode.
    main(["eval", *argv, "--max-steps", "2"])
    (path,) = (tmp_path / "out").glob(f"{mute_env}_2_2_add_*.json")
    assert json.loads(path.read_text())["episodes"]["total"] == [2, 2, 2]
