"""`alemlite gap`: a model's team (the loopback server playing resource ordering), the shipped
MARL agent and a scripted team on the same seeds at two table sizes, one of which no
checkpoint plays; the gaps' stratified bootstrap; each environment's scores; the scripted
stand-in server; refusals."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

import alemlite
from alemlite_app.cli import main
from llm_bridge.compare import read_result
from llm_bridge.gap.config import GapConfig
from llm_bridge.gap.main import GAP_FORMAT
from llm_bridge.gap.plan import plan_stratum
from llm_bridge.gap.report import markdown_report, number
from llm_bridge.gap.scores import DERIVED, gap_interval, role_metrics, with_derived
from llm_bridge.stand_in import StandInServer, choices
from llm_bridge.transcripts import read_records
from tests.llm_server import ChatServer, dining_resource_ordering

# One checkpoint named, so that n3 stays a stratum no checkpoint plays whatever else is shipped.
GAP = ["gap", "--env", "dining", "--team-sizes", "3", "5", "--max-steps", "4", "--episodes", "3",
       "--scripted", "resource_ordering", "--model", "scripted", "--checkpoints", "ippo-dining-5",
       "--no-progress"]  # fmt: skip


PASSWORD = "PwOfTheServer"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """The report of a server reached with a password in its URL, typed on the command line."""
    out = tmp_path_factory.mktemp("gap")
    with ChatServer(dining_resource_ordering) as server, pytest.MonkeyPatch.context() as patch:
        url = server.base_url.replace("://", f"://user:{PASSWORD}@")
        argv = [*GAP, "--base-url", url, "--out", str(out)]
        patch.setattr(sys, "argv", ["alemlite", *argv])  # the command the report records
        main(argv)
    return out, json.loads((out / "gap.json").read_text())


def test_no_file_of_the_report_holds_the_password(report):
    out, results = report
    assert "--base-url http://127.0.0.1:" in results["provenance"]["command"]
    assert results["config"]["base_url"][0].startswith("http://127.0.0.1:")
    files = [path for path in out.rglob("*") if path.is_file()]
    assert len(files) > 3 and not [path for path in files if PASSWORD.encode() in path.read_bytes()]


def test_the_report_is_written_as_json_markdown_and_plots(report):
    out, results = report
    assert [s["key"] for s in results["strata"]] == ["n3", "n5"]
    assert results["roles"] == {
        "base": "throughput", "coordination": "meal_efficiency", "return": "episode_return"
    }  # fmt: skip
    for figure in ("scores.png", "gaps.png"):
        assert (out / "figures" / figure).stat().st_size > 0
    markdown = (out / "gap.md").read_text()
    # Each gap names the reference it is taken against, not only its kind.
    assert "| LLM - MARL (ippo-dining-5) |" in markdown and "![gaps](figures/gaps.png)" in markdown
    assert "| **LLM - scripted (resource_ordering)** |" in markdown
    assert "-0.000" not in markdown
    # What made it: the command as the process was started (here, pytest), commit, machine.
    assert {"command", "commit", "machine", "libraries"} <= set(results["provenance"])
    assert len(results["provenance"]["commit"]) == 40


def test_a_model_playing_the_scripted_team_has_no_gap_to_it(report):
    # The server answers as resource ordering does, so the model's team is that team.
    _, results = report
    gap = results["gaps"]["LLM - scripted"]
    assert gap["strata"] == ["n3", "n5"]
    for role in ("base", "coordination", "return"):
        assert gap[role] == {"gap": 0.0, "low": 0.0, "high": 0.0}


def test_the_marl_gap_is_measured_where_a_checkpoint_plays_and_said_missing_elsewhere(report):
    out, results = report
    small, large = results["strata"]
    assert small["references"] == {"marl": None, "scripted": "scripted:resource_ordering",
                                   "mixed": None}  # fmt: skip
    assert list(small["teams"]) == ["llm", "scripted:resource_ordering"]
    assert any("ippo-dining-5 does not play here: trained with num_agents=5" in note
               for note in small["notes"])  # fmt: skip
    assert list(large["teams"]) == [
        "llm", "marl:ippo-dining-5", "scripted:resource_ordering", "mixed:ippo-dining-5"
    ]  # fmt: skip
    gap = results["gaps"]["LLM - MARL"]
    assert (gap["strata"], gap["missing"]) == (["n5"], ["n3"])
    # One stratum: the gap is the difference of the two teams' means, from their own files.
    llm = read_result(out / large["teams"]["llm"]["result"])["episodes"]["throughput"]
    marl = read_result(out / large["teams"]["marl:ippo-dining-5"]["result"])["episodes"]
    assert gap["base"]["gap"] == pytest.approx(np.mean(llm) - np.mean(marl["throughput"]))
    assert gap["base"]["low"] <= gap["base"]["gap"] <= gap["base"]["high"]
    assert "not measured" in (out / "gap.md").read_text()


def test_team_intervals_stay_in_the_range_of_a_share(report):
    _, results = report
    for stratum in results["strata"]:
        for team in stratum["teams"].values():
            values = team["episodes"]["coordination"]
            score = team["scores"]["coordination"]
            assert score["ci"] == "bootstrap" and len(values) == score["n"] == 3
            assert 0.0 <= min(values) <= score["low"] <= score["mean"] <= score["high"] <= 1.0


def test_numbers_that_round_to_zero_print_without_a_sign_of_their_own():
    assert number(-0.0001, signed=True) == "+0.000" and number(-0.0004) == "0.000"
    assert number(-0.0006, signed=True) == "-0.001" and number(0.25, signed=True) == "+0.250"


def _dining_scores(policy: str, size: int) -> dict[str, float]:
    from alemlite.evaluation import evaluate
    from baselines.seats import team_policy, team_seats

    env_spec = alemlite.spec("dining")
    options = env_spec.options(num_agents=size, max_steps=30, reward="shaped")
    env = env_spec.build(options)
    policy_fn = team_policy(env, team_seats((f"policy:{policy}",), size))
    episodes = evaluate(env, policy_fn, env.default_params, 16, 0)
    scored = with_derived("dining", {"num_agents": size, "max_steps": 30}, episodes)
    return {name: float(np.mean(scored[name])) for name in ("meal_efficiency", "fed_share")}


@pytest.mark.parametrize("size", [3, 5])
def test_dining_coordination_score_ranks_resource_ordering_high_and_random_play_low(size):
    scores = {p: _dining_scores(p, size) for p in
              ("resource_ordering", "backoff", "uniform_random", "all_wait")}  # fmt: skip
    efficiency = {policy: s["meal_efficiency"] for policy, s in scores.items()}
    assert efficiency["resource_ordering"] > 0.7 and efficiency["uniform_random"] < 0.35
    assert efficiency["resource_ordering"] > efficiency["backoff"] > efficiency["all_wait"] == 0
    if size == 5:
        # What the old score missed: random play feeds about as many seats once as ordering.
        fed = {policy: s["fed_share"] for policy, s in scores.items()}
        assert abs(fed["resource_ordering"] - fed["uniform_random"]) < 0.1


def test_a_mixed_team_seats_the_model_beside_the_checkpoint(report):
    out, results = report
    mixed = results["strata"][1]["teams"]["mixed:ippo-dining-5"]
    assert mixed["seats"] == ["llm"] + ["checkpoint:ippo-dining-5"] * 4
    turns = [r for r in read_records(out / "runs" / "n5" / "mixed-ippo-dining-5" /
                                     "transcript.jsonl") if r["type"] == "turn"]  # fmt: skip
    assert {turn["seat"] for turn in turns} == {0}
    assert mixed["usage"]["requests"] == len(turns) == 3 * 4
    assert mixed["usage"]["parse_rate"] == 1.0
    # Tokens per episode too (seed order), for a leaderboard that keeps the first episodes.
    per_episode = mixed["episode_usage"]
    for name in ("prompt_tokens", "completion_tokens"):
        by_episode = [sum(t[name] for t in turns if t["episode"] == e) for e in range(3)]
        assert per_episode[name] == by_episode and sum(by_episode) == mixed["usage"][name] > 0
    assert per_episode["cost"] == [0.0] * 3


def test_every_team_plays_the_same_seeds(report):
    out, results = report
    for stratum in results["strata"]:
        configs = [read_result(out / team["result"])["config"]
                   for team in stratum["teams"].values()]  # fmt: skip
        assert {(c["seed"], c["episodes"], json.dumps(c["options"])) for c in configs} == {
            (0, 3, json.dumps(stratum["options"]))
        }


def test_the_gap_bootstrap_resamples_within_strata():
    # Constant within each stratum, different across: a bootstrap that mixed strata would
    # spread; the stratified one cannot.
    a = [np.full(5, 1.0), np.full(3, 4.0)]
    b = [np.full(4, 0.0), np.full(6, 1.0)]
    assert gap_interval(a, b) == {"gap": 2.0, "low": 2.0, "high": 2.0}
    rng = np.random.default_rng(0)
    a = [rng.normal(1.0, 1.0, 30), rng.normal(3.0, 1.0, 20)]
    b = [rng.normal(0.0, 1.0, 30), rng.normal(3.0, 1.0, 20)]
    gap = gap_interval(a, b)
    assert gap["gap"] == pytest.approx(np.mean([a[0].mean() - b[0].mean(), 0.0]), abs=0.5)
    assert gap["low"] < gap["gap"] < gap["high"]


@pytest.mark.parametrize("env", alemlite.registered_environments())
def test_every_environment_names_its_base_and_coordination_scores(env):
    env_spec = alemlite.spec(env)
    roles = role_metrics(env_spec)
    assert {"base", "coordination", "return"} <= set(roles)
    assert {roles["base"], roles["coordination"]} <= {*env_spec.metrics, *DERIVED.get(env, ())}


def test_craft_strata_sweep_difficulties_and_say_where_the_checkpoint_was_trained():
    config = GapConfig(
        env="craft", difficulties=("easy", "medium"), team_sizes=(3, 2),
        options=alemlite.spec("craft").options(map_size=32, max_steps=500),
    )  # fmt: skip
    assert config.checkpoints == (
        "craft-easy",
        "craft-easy-curriculum",
        "craft-easy-ippo",
        "craft-hard",
        "craft-hard-curriculum",
        "craft-medium",
        "craft-medium-curriculum",
        "craft-medium-ippo",
        "ippo-craft-medium",
    )
    strata = config.strata()
    assert [s.key for s in strata] == ["easy-n3", "easy-n2", "medium-n3", "medium-n2"]
    env_spec = alemlite.spec("craft")
    # The dense observation: the imitation references (symbolic) do not play, IPPO's does.
    easy = plan_stratum(env_spec, strata[0], config)
    assert easy.references["marl"] == "marl:ippo-craft-medium"
    refused = [note for note in easy.notes if "does not play here" in note]
    assert len(refused) == 8 and all("observation shape" in note for note in refused)
    assert easy.notes[-1] == ("MARL reference ippo-craft-medium was trained with "
                              "difficulty=medium (here easy)")  # fmt: skip
    assert not any(
        "trained with" in note for note in plan_stratum(env_spec, strata[2], config).notes
    )
    pair = plan_stratum(env_spec, strata[1], config)
    assert pair.references["marl"] is None and "num_agents=3" in pair.notes[0]
    # The symbolic observation: each difficulty's own reference.
    symbolic = GapConfig(
        env="craft", difficulties=("easy", "hard"), team_sizes=(3,),
        options=alemlite.spec("craft").options(map_size=32, max_steps=500, obs_encoding="symbolic"),
    )  # fmt: skip
    plans = [plan_stratum(env_spec, stratum, symbolic) for stratum in symbolic.strata()]
    # the last of each chain (clone -> IPPO -> curriculum) stands before those it started from
    assert [plan.references["marl"] for plan in plans] == [
        "marl:craft-easy-curriculum",
        "marl:craft-hard-curriculum",
    ]
    assert not any("trained with" in note for plan in plans for note in plan.notes)


def test_the_stand_in_answers_random_names_the_prompt_offers(tmp_path):
    names = ("WAIT", "GRAB_LEFT", "GRAB_RIGHT", "RELEASE")
    request = {"messages": [{"role": "user", "content": "choose WAIT or RELEASE (not WAITING)"}]}
    assert choices(names, request) == ["WAIT", "RELEASE"]
    assert choices(names, {**request, "guided_choice": ["GRAB_LEFT"]}) == ["GRAB_LEFT"]
    assert choices(names, {"messages": [{"role": "user", "content": "hello"}]}) == list(names)
    with StandInServer("dining") as server:
        main(["eval-llm", "--env", "dining", "--num-agents", "3", "--max-steps", "4",
              "--episodes", "2", "--base-url", server.base_url, "--model", "stand-in",
              "--no-progress", "--out", str(tmp_path)])  # fmt: skip
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["usage"]["parse_rate"] == 1.0
    turns = [r for r in read_records(tmp_path / "transcript.jsonl") if r["type"] == "turn"]
    assert len({turn["action"] for turn in turns}) > 1
    # Episodes start alike at dining's table; random answers still play them differently.
    first_moves = {(t["episode"], t["seat"]): t["action"] for t in turns if t["step"] == 0}
    assert len(first_moves) == 6 and len(set(first_moves.values())) > 1


def _refusal(flags, capsys, tmp_path) -> str:
    with pytest.raises(SystemExit) as caught:
        main(["gap", "--base-url", "http://127.0.0.1:9/v1", "--out", str(tmp_path / "g"), *flags])
    assert caught.value.code == 2
    [line] = capsys.readouterr().err.splitlines()
    assert not (tmp_path / "g").exists()
    return line.removeprefix("alemlite gap: error: ")


def test_bad_options_are_refused_before_anything_runs(capsys, tmp_path):
    assert _refusal(["--difficulties", "hard"], capsys, tmp_path).startswith(
        "--difficulties=hard: --env=dining has no difficulty option"
    )
    assert _refusal(["--team-sizes", "3", "3"], capsys, tmp_path).startswith(
        "--team-sizes=3 3 must name each value once"
    )
    assert _refusal(["--team-sizes", "1"], capsys, tmp_path).startswith(
        "--team-sizes=1 is not a team size --env=dining takes (--num-agents=1 is too small"
    )
    assert "unknown dining policy 'oracle'" in _refusal(["--scripted", "oracle"], capsys, tmp_path)
    assert _refusal(["--mixed-llm-seats", "-1"], capsys, tmp_path).startswith(
        "--mixed-llm-seats=-1 must be 0"
    )
    assert "sweeps prompts" in _refusal(["--ablation", "cot"], capsys, tmp_path)
    assert _refusal(["--checkpoints", "nowhere"], capsys, tmp_path).startswith("nowhere: no such")
    message = _refusal(["--env", "craft", "--difficulties", "easy", "impossible"], capsys, tmp_path)
    assert message.startswith("--difficulty='impossible' must be one of")


PUBLISHED = sorted((Path(__file__).resolve().parents[1] / "benchmarks/results").glob("gap_*"))


@pytest.mark.parametrize("folder", PUBLISHED, ids=lambda folder: folder.name)
def test_the_published_report_is_the_one_its_json_renders(folder):
    results = json.loads((folder / "gap.json").read_text())
    assert results.get("format") == GAP_FORMAT, "an older layout: republish it with its command"
    figures = {name: folder / "figures" / f"{name}.png" for name in ("scores", "gaps")}
    assert all(path.exists() for path in figures.values())
    assert markdown_report(results, figures, folder) == (folder / "gap.md").read_text()
    assert not results["provenance"]["dirty"]
