"""Complete evaluations through the real client against a loopback server.

The server answers with resource ordering read off each prompt, so an LLM team must
play exactly as `DINING_POLICIES["resource_ordering"]` does through `alemlite.evaluate`,
on the same seeds, whatever transient faults the server throws in.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import jax.numpy as jnp
import numpy as np
import pytest

import alemlite
from alemlite.core.errors import ConfigError
from alemlite.core.prompting import PromptOptions
from alemlite.envs.dining.policies import DINING_POLICIES
from alemlite.envs.dining.prompting import DiningRenderer
from alemlite.evaluation import evaluate
from alemlite_app.cli import main
from llm_bridge.agents import LLMAgent, PolicyAgent, build_team
from llm_bridge.clients.openai_backend import OpenAIBackend, OpenAIConfig
from llm_bridge.runner import RunConfig, run_evaluation
from llm_bridge.transcripts import TranscriptMismatch, read_records
from tests.llm_server import ChatServer, Faults, dining_resource_ordering

EPISODES, PHILOSOPHERS, MAX_STEPS, SEED = 6, 5, 8, 11
TRANSIENT = Faults(rate_limit=0.1, server_error=0.1, drop=0.05, slow=0.05, slow_s=0.01)


@pytest.fixture(scope="module")
def env():
    return alemlite.make("dining", num_philosophers=PHILOSOPHERS, max_steps=MAX_STEPS)


@pytest.fixture(scope="module")
def direct(env):
    """The same policy run directly through the environment, on the same seeds."""
    return evaluate(env, DINING_POLICIES["resource_ordering"], env.default_params, EPISODES, SEED)


def backend(*urls, **overrides) -> OpenAIBackend:
    config = dict(model="scripted", base_urls=urls, backoff_s=0.001, timeout_s=10.0)
    return OpenAIBackend(OpenAIConfig(**(config | overrides)))


def run(env, team, out, max_failed_fraction=0.01, **overrides):
    config = RunConfig(
        episodes=EPISODES,
        seed=SEED,
        out=out,
        progress=False,
        max_failed_fraction=max_failed_fraction,
    )
    options = PromptOptions(**overrides)
    return run_evaluation(env, DiningRenderer(), team, options, config)


def assert_same_episodes(report, direct):
    for name, values in direct.items():
        np.testing.assert_allclose(np.asarray(report["episodes"][name]), values, err_msg=name)


@pytest.fixture(scope="module")
def reference(env, tmp_path_factory):
    """An uninterrupted all-LLM run, with transient faults on the way."""
    out = tmp_path_factory.mktemp("reference")
    with ChatServer(dining_resource_ordering, TRANSIENT) as server:
        report = run(env, [LLMAgent(backend(server.base_url), "scripted")] * PHILOSOPHERS, out)
    return report, server.log, out


def test_llm_team_equals_the_scripted_policy(reference, direct):
    report, log, out = reference
    assert_same_episodes(report, direct)
    usage = report["usage"]
    assert usage["requests"] == PHILOSOPHERS * np.sum(direct["episode_length"])
    assert usage["failed_requests"] == 0 and usage["parse_rate"] == 1.0
    assert (
        usage["retries"]
        == log.faults["rate_limit"] + log.faults["server_error"] + log.faults["drop"]
    )
    assert usage["retries"] > 0
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    headline = f"LLM turns: {usage['requests']} answered, 0 failed, 0 unparsed"
    assert (out / "summary.txt").read_text().startswith(headline)
    written = json.loads((out / "summary.json").read_text())
    assert list(written)[:5] == ["valid", "reason", "complete", "turns", "headline"]
    assert written["valid"] is True and written["reason"] is None
    assert written["turns"] == {"total": usage["requests"], "answered": usage["requests"],
                                "failed": 0, "unparsed": 0}  # fmt: skip
    assert written["usage"] == usage


def test_transcript_records_every_request(reference):
    report, _, out = reference
    records = list(read_records(out / "transcript.jsonl"))
    kinds = [record["type"] for record in records]
    assert kinds[0] == "header" and kinds[-1] == "end"
    turns = [record for record in records if record["type"] == "turn"]
    assert len(turns) == report["usage"]["requests"]
    assert len({(t["episode"], t["step"], t["seat"]) for t in turns}) == len(turns)
    steps = [record for record in records if record["type"] == "step"]
    assert len(steps) == max(report["episodes"]["episode_length"])
    assert all(turn["prompt"][-1]["role"] == "user" for turn in turns)
    assert all(turn["prompt"][0]["role"] != "system" for turn in turns)


def test_mixed_team_of_llm_scripted_and_trained_agents(env, tmp_path):
    """LLM seats 0 and 2, resource ordering at 1, the shipped IPPO agent at 3 and 4."""
    with ChatServer(dining_resource_ordering) as server:
        specs = ("llm", "resource_ordering", "llm") + ("checkpoint:ippo-dining-5",) * 2
        team = build_team(specs, env, lambda model: backend(server.base_url))
        trained = team[3]
        assert isinstance(trained, PolicyAgent) and team[4] is trained
        ordering = DINING_POLICIES["resource_ordering"]

        def same_team_directly(key, state, params):
            seat = jnp.arange(PHILOSOPHERS)
            actions = ordering(key, state, params), trained.policy(key, state, params)
            return jnp.where(seat < 3, *actions)

        direct = evaluate(env, same_team_directly, env.default_params, EPISODES, SEED)
        report = run(env, team, tmp_path)
    assert_same_episodes(report, direct)
    assert (
        report["config"]["team"]
        == ["scripted", "resource_ordering", "scripted"] + ["ippo-dining-5"] * 2
    )
    lengths = np.asarray(direct["episode_length"])
    assert report["usage"]["requests"] == 2 * lengths.sum() == server.log.requests


def test_malformed_replies_become_counted_noops(env, tmp_path):
    with ChatServer(dining_resource_ordering, Faults(malformed=0.3)) as server:
        report = run(env, [LLMAgent(backend(server.base_url), "scripted")] * PHILOSOPHERS, tmp_path)
    usage = report["usage"]
    assert usage["parse_methods"]["failed"] == server.log.faults["malformed"] > 0
    assert usage["failed_requests"] == 0
    assert report["turns"]["unparsed"] == server.log.faults["malformed"]
    assert report["valid"]  # a reply that does not parse is the model's score, not a failure
    expected = 1 - server.log.faults["malformed"] / usage["requests"]
    assert usage["parse_rate"] == pytest.approx(expected)
    assert 0 < np.mean(report["episodes"]["parse_rate"]) < 1


def test_unanswered_turns_are_counted_noops_when_allowed(env, tmp_path):
    """With every failure allowed (--max-failed-fraction 1), a failed turn is the no-op."""
    all_wait = evaluate(env, DINING_POLICIES["all_wait"], env.default_params, EPISODES, SEED)
    with ChatServer(dining_resource_ordering, Faults(server_error=1.0, transient=False)) as server:
        team = [LLMAgent(backend(server.base_url, max_retries=1), "scripted")] * PHILOSOPHERS
        report = run(env, team, tmp_path, max_failed_fraction=1.0)
    usage = report["usage"]
    assert report["valid"] and report["turns"]["failed"] == report["turns"]["total"]
    assert report["headline"].startswith(f"LLM turns: 0 answered, {usage['requests']} failed")
    assert usage["failed_requests"] == usage["requests"] > 0
    assert server.log.requests == 2 * usage["requests"]
    assert usage["parse_rate"] == 0.0
    assert_same_episodes(report, all_wait)


class SimulatedCrash(Exception):
    pass


class CrashAfter:
    """A backend whose run dies when its answer number `limit + 1` arrives."""

    def __init__(self, inner, limit: int):
        self.inner, self.limit, self.answered, self.name = inner, limit, 0, inner.name

    async def check(self):
        await self.inner.check()

    async def complete(self, messages, seed=None):
        completion = await self.inner.complete(messages, seed)
        if self.answered >= self.limit:
            raise SimulatedCrash
        self.answered += 1
        return completion

    async def close(self):
        await self.inner.close()


def _settled(server, quiet_s: float = 0.3) -> int:
    """The server's request count once the crashed run's last sent requests have reached it:
    they were on the wire when the run died, and the server's threads read them a little
    later, so an early count would charge them to the resumed run."""
    count = -1
    while count != server.log.requests or server.log.in_flight:
        count = server.log.requests
        time.sleep(quiet_s)
    return count


def test_a_crashed_run_resumes_to_the_same_summary(env, reference, tmp_path):
    reference_report, _, _ = reference
    crash_at = 37  # part-way through a step: some of its requests are answered, some not
    with ChatServer(dining_resource_ordering) as server:
        crashing = CrashAfter(backend(server.base_url), crash_at)
        with pytest.raises(SimulatedCrash):
            run(env, [LLMAgent(crashing, "scripted")] * PHILOSOPHERS, tmp_path)
        assert not (tmp_path / "summary.json").exists()
        # A torn last line, as a kill in the middle of a write leaves it.
        with (tmp_path / "transcript.jsonl").open("a") as stream:
            stream.write('{"type": "turn", "episode": 0, "st')
        before = _settled(server)
        resumed = run(
            env, [LLMAgent(backend(server.base_url), "scripted")] * PHILOSOPHERS, tmp_path
        )
        asked_again = server.log.requests - before
    usage = resumed["usage"]
    assert usage["reused_from_transcript"] == crash_at
    assert asked_again == usage["requests"] - crash_at  # nothing asked twice, nothing lost
    assert resumed["episodes"] == reference_report["episodes"]
    for key in ("requests", "parse_rate", "prompt_tokens", "completion_tokens", "parse_methods"):
        assert usage[key] == reference_report["usage"][key], key
    turns = [r for r in read_records(tmp_path / "transcript.jsonl") if r["type"] == "turn"]
    assert (
        len(turns)
        == len({(t["episode"], t["step"], t["seat"]) for t in turns})
        == usage["requests"]
    )


def test_resume_refuses_another_configuration(env, reference):
    _, _, out = reference
    with pytest.raises(TranscriptMismatch, match="another configuration"):
        run(
            env,
            [LLMAgent(backend("http://127.0.0.1:9/v1"), "scripted")] * PHILOSOPHERS,
            out,
            history=0,
        )


def test_a_killed_process_resumes_without_losing_or_repeating_turns(env, direct, tmp_path):
    """SIGKILL mid-run (the transcript may end in a torn line), then the same command again."""
    arguments = [
        "eval-llm", "--base-url", "URL", "--model", "scripted", "--episodes", str(EPISODES),
        "--seed", str(SEED), "--num-agents", str(PHILOSOPHERS), "--max-steps", str(MAX_STEPS),
        "--out", str(tmp_path), "--no-progress", "--max-retries", "0",
    ]  # fmt: skip
    transcript = tmp_path / "transcript.jsonl"
    with ChatServer(dining_resource_ordering, Faults(slow=1.0, slow_s=0.05)) as server:
        arguments[2] = server.base_url
        process = subprocess.Popen(
            [sys.executable, "-m", "alemlite_app.cli", *arguments],
            cwd=Path(__file__).resolve().parents[1],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            for _ in range(1200):  # bounded wait: until a few steps are on disk
                if transcript.exists() and transcript.read_text().count('"type": "turn"') >= 70:
                    break
                time.sleep(0.05)
        finally:
            process.kill()
            process.wait(timeout=30)
        written = sum(1 for r in read_records(transcript) if r["type"] == "turn")
        assert 0 < written < PHILOSOPHERS * np.sum(direct["episode_length"])
        main(arguments)
    report = json.loads((tmp_path / "summary.json").read_text())
    assert_same_episodes(report, direct)
    usage = report["usage"]
    assert usage["reused_from_transcript"] == written
    turns = [r for r in read_records(transcript) if r["type"] == "turn"]
    assert (
        len(turns)
        == len({(t["episode"], t["step"], t["seat"]) for t in turns})
        == usage["requests"]
    )


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("episodes", 0, "episodes=0 must be at least 1"),
        ("max_failed_fraction", -0.1, "max_failed_fraction=-0.1 must lie in [0, 1]"),
        ("output_price_per_mtok", float("nan"), "output_price_per_mtok=nan must be a number"),
    ],
)
def test_the_run_config_is_checked_when_built(field, value, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        RunConfig(**{field: value})
