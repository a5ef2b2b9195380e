"""Reasoning models: thoughts split from the answer (a reasoning field, `<think>` blocks, a
block cut off by the token budget), kept in the transcript, counted when they crowd out the
answer, and read back alike when a run resumes. Against the loopback server."""

from __future__ import annotations

import asyncio
import hashlib
import json

import pytest

import alemlite
from alemlite.core.prompting import PromptOptions
from alemlite.envs.dining.prompting import DiningRenderer
from llm_bridge.agents import LLMAgent
from llm_bridge.clients.openai_backend import OpenAIBackend, OpenAIConfig
from llm_bridge.parse import split_reasoning
from llm_bridge.runner import RunConfig, run_evaluation
from llm_bridge.transcripts import read_records
from tests.llm_server import ChatServer, Reply, dining_resource_ordering

PHILOSOPHERS, MAX_STEPS, EPISODES, SEED = 3, 4, 2, 5


@pytest.mark.parametrize(
    ("text", "reasoning", "answer"),
    [
        ("<action>WAIT</action>", None, "<action>WAIT</action>"),
        ("<think>forks?</think>\n<action>WAIT</action>", "forks?", "<action>WAIT</action>"),
        ("<THINK>a</THINK>x<think>b</think>y", "a\nb", "x y"),
        ("<think>I should grab the left fork because", "I should grab the left fork because", ""),
        ("opened in the prompt</think>RELEASE", "opened in the prompt", "RELEASE"),
        ("<think></think>GRAB_LEFT", None, "GRAB_LEFT"),
        ("<think>a</think>b</think>c", "a", "b c"),  # a stray tag is no answer either
    ],
)
def test_reasoning_is_split_from_the_answer(text, reasoning, answer):
    assert split_reasoning(text) == (reasoning, answer)
    assert split_reasoning(answer) == (None, answer)  # splitting again changes nothing


def kind_of(messages) -> str:
    """One reply form per prompt, drawn from its hash (the same prompt, the same form)."""
    digest = hashlib.sha256(json.dumps(messages).encode()).digest()[0]
    return ("field", "think", "cut", "plain")[digest % 4]


def reasoning_model(messages) -> Reply:
    answer = dining_resource_ordering(messages).split("</think>")[-1]
    kind = kind_of(messages)
    if kind == "field":
        return Reply(answer, reasoning="weighing the forks")
    if kind == "think":
        return Reply(f"<think>weighing the forks</think>\n{answer}")
    if kind == "cut":  # the budget ran out mid-thought
        return Reply("<think>weighing the forks, first the left", finish_reason="length")
    return Reply(answer)


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_the_client_reads_the_reasoning_field_and_the_cut_off(field):
    replies = [Reply("GRAB_LEFT", reasoning="thinking"), Reply("", finish_reason="length")]

    def model(messages):
        return replies[int(messages[-1]["content"])]

    async def ask():
        backend = OpenAIBackend(OpenAIConfig(model="scripted", base_urls=(server.base_url,)))
        try:
            return [await backend.complete([{"role": "user", "content": str(i)}]) for i in range(2)]
        finally:
            await backend.close()

    with ChatServer(model, reasoning_field=field) as server:
        first, second = asyncio.run(ask())
    assert (first.text, first.reasoning, first.cut_off) == ("GRAB_LEFT", "thinking", False)
    assert (second.text, second.reasoning, second.cut_off) == ("", None, True)


@pytest.fixture(scope="module")
def env():
    return alemlite.make("dining", num_philosophers=PHILOSOPHERS, max_steps=MAX_STEPS)


def run(env, url, out):
    backend = OpenAIBackend(
        OpenAIConfig(model="scripted", base_urls=(url,), max_tokens=32, backoff_s=0.001)
    )
    config = RunConfig(episodes=EPISODES, seed=SEED, out=out, progress=False)
    team = [LLMAgent(backend, "scripted")] * PHILOSOPHERS
    return run_evaluation(env, DiningRenderer(), team, PromptOptions(), config)


@pytest.fixture(scope="module")
def reasoning_run(env, tmp_path_factory):
    out = tmp_path_factory.mktemp("reasoning")
    with ChatServer(reasoning_model) as server:
        report = run(env, server.base_url, out)
    return report, server.log, out


def test_thoughts_are_kept_and_only_the_answer_is_parsed(reasoning_run):
    report, log, out = reasoning_run
    turns = [r for r in read_records(out / "transcript.jsonl") if r["type"] == "turn"]
    kinds = [kind_of(body["messages"]) for body in log.bodies]
    assert set(kinds) == {"field", "think", "cut", "plain"}
    assert len(turns) == len(log.bodies) == report["usage"]["requests"]
    assert all(body["max_tokens"] == 32 for body in log.bodies)  # the per-turn budget
    by_prompt = {json.dumps(t["prompt"]): t for t in turns}
    for body, kind in zip(log.bodies, kinds, strict=True):
        turn = by_prompt[json.dumps(body["messages"][1:])]
        assert "<think>" not in turn["reply"] and turn["cut_off"] == (kind == "cut")
        if kind == "plain":
            assert turn["reasoning"] is None and turn["parse"] == "tag"
        elif kind == "cut":
            assert turn["reasoning"] == "weighing the forks, first the left"
            assert turn["reply"] == "" and turn["parse"] == "failed"
            assert turn["action"] == "WAIT"  # the no-op is played, and counted
        else:
            assert turn["reasoning"] == "weighing the forks" and turn["parse"] == "tag"
    cut = kinds.count("cut")
    usage = report["usage"]
    assert usage["cut_off"] == usage["empty_answers"] == cut > 0
    assert report["turns"]["unparsed"] == cut
    assert usage["parse_rate"] == pytest.approx(1 - cut / len(kinds))
    assert (
        f"cut off by --max-tokens {cut}, empty answers after reasoning {cut}"
        in (out / "summary.txt").read_text()
    )


def test_a_resumed_reasoning_run_gives_the_same_summary(env, reasoning_run, tmp_path):
    report, _, out = reasoning_run
    lines = (out / "transcript.jsonl").read_text().splitlines(keepends=True)
    kept = len(lines) // 2  # the header and the first turns (and steps) of the run
    (tmp_path / "transcript.jsonl").write_text("".join(lines[:kept]))
    reused = sum('"type": "turn"' in line for line in lines[:kept])
    with ChatServer(reasoning_model) as server:
        resumed = run(env, server.base_url, tmp_path)
    assert resumed["usage"]["reused_from_transcript"] == reused > 0
    assert server.log.requests == report["usage"]["requests"] - reused
    assert resumed["episodes"] == report["episodes"]
    for key in ("requests", "parse_rate", "parse_methods", "cut_off", "empty_answers", "mode"):
        assert resumed["usage"][key] == report["usage"][key], key
