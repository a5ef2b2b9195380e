"""Constrained actions: the server is asked to choose among the agent's legal action names
(vLLM's guided_choice, else a JSON schema, else free text), steps down once per server when
refused, and the summary says which mode ran. Against the loopback server, which checks
the constraint it receives and refuses the modes it is told to."""

from __future__ import annotations

import asyncio
import json
import re

import numpy as np
import pytest

import alemlite
from alemlite.core.prompting import PromptOptions
from alemlite.envs.dining.prompting import DiningRenderer
from alemlite_app.cli import main
from llm_bridge.agents import LLMAgent
from llm_bridge.clients.base import Completion, ModelServerError
from llm_bridge.clients.openai_backend import OpenAIBackend, OpenAIConfig
from llm_bridge.parse import ParsedReply
from llm_bridge.runner import EvaluationRun, RunConfig, run_evaluation
from llm_bridge.transcripts import prompt_digest, read_records
from llm_bridge.usage import Turn
from tests.llm_server import ChatServer, Faults, Reply, dining_resource_ordering, text_of

PHILOSOPHERS, MAX_STEPS, EPISODES, SEED = 3, 4, 2, 7
FIRST_STEP = PHILOSOPHERS * EPISODES  # requests asked together before any answer comes back
_STATE = re.compile(r"You are (HUNGRY|EATING)")
_FORK = re.compile(r"Your (left|right) fork \(fork \d+\) is (free|held by you|held by philosopher)")


def legal_names(observation: str) -> list[str]:
    """Dining's legal moves, read off the observation (the rules of `move_mask`)."""
    hungry = _STATE.search(observation).group(1) == "HUNGRY"
    forks = dict(_FORK.findall(observation))
    names = ["WAIT"]
    names += [
        f"GRAB_{side.upper()}" for side in ("left", "right") if hungry and forks[side] == "free"
    ]
    if "held by you" in forks.values():
        names.append("RELEASE")
    return names


@pytest.fixture(scope="module")
def env():
    return alemlite.make("dining", num_philosophers=PHILOSOPHERS, max_steps=MAX_STEPS)


def run(env, server, out):
    backend = OpenAIBackend(
        OpenAIConfig(model="scripted", base_urls=(server.base_url,), backoff_s=0.001)
    )
    config = RunConfig(episodes=EPISODES, seed=SEED, out=out, progress=False, constrained=True)
    team = [LLMAgent(backend, "scripted")] * PHILOSOPHERS
    return run_evaluation(env, DiningRenderer(), team, PromptOptions(), config)


def constraint_fields(body: dict) -> set[str]:
    return {"guided_choice", "structured_outputs", "response_format"} & set(body)


@pytest.mark.parametrize(
    ("unsupported", "mode"),
    [
        ((), "constrained:guided_choice"),
        (("guided_choice",), "constrained:json_schema"),
        (("guided_choice", "response_format"), "free"),
    ],
)
def test_the_server_chooses_among_legal_actions_or_the_client_steps_down(
    env, tmp_path, unsupported, mode
):
    with ChatServer(dining_resource_ordering, unsupported=unsupported) as server:
        report = run(env, server, tmp_path)
    log, usage = server.log, report["usage"]
    assert not log.malformed_requests
    assert usage["mode"] == mode and usage["modes"] == {mode: usage["requests"]}
    refused = sum(log.unsupported_refused.values())
    # Refused only while the first step's requests were in flight, never after.
    assert len(log.bodies) == usage["requests"] + refused
    assert sum(log.unsupported_refused[name] > 0 for name in unsupported) == len(unsupported)
    # Two modes send a response format (OpenAI's and llama.cpp's), each refused in turn.
    sent_by = {"guided_choice": 1, "response_format": 2}
    assert all(
        0 < log.unsupported_refused[name] <= FIRST_STEP * sent_by[name] for name in unsupported
    )
    for body in log.bodies[FIRST_STEP + refused :]:
        assert (
            constraint_fields(body)
            == {
                "constrained:guided_choice": {"guided_choice", "structured_outputs"},
                "constrained:json_schema": {"response_format"},
                "free": set(),
            }[mode]
        )
    for body in log.bodies:  # the refused requests too
        legal = legal_names(text_of(body["messages"][-1]["content"]))
        if "guided_choice" in body:
            assert body["guided_choice"] == body["structured_outputs"]["choice"] == legal
        if "response_format" in body:
            form = body["response_format"]
            schema = form["json_schema"]["schema"] if "json_schema" in form else form["schema"]
            assert schema["properties"]["action"]["enum"] == legal
    assert usage["parse_rate"] == 1.0
    turns = [r for r in read_records(tmp_path / "transcript.jsonl") if r["type"] == "turn"]
    assert {t["mode"] for t in turns} == {mode}
    if mode != "free":
        # A constrained reply is the action alone (or its JSON), and it is a legal one.
        for turn in turns:
            legal = legal_names(text_of(turn["prompt"][-1]["content"]))
            reply = (
                turn["reply"] if mode.endswith("choice") else json.loads(turn["reply"])["action"]
            )
            assert reply == turn["action"] and reply in legal and turn["message"] == ""
    # The system prompt asks for the name alone, and the chat remembers the replies as given.
    header = next(read_records(tmp_path / "transcript.jsonl"))
    constrained, free = header["system_prompt"], header["free_system_prompt"]
    assert constrained == DiningRenderer().system_prompt(PromptOptions(), constrained=True)
    assert free == DiningRenderer().system_prompt(PromptOptions())
    assert "the action alone" not in constrained and "<action>" not in constrained
    assert "with the exact name of one legal action alone" in constrained
    assert header["config"]["constrained"] is True
    assert header["config"]["system_prompt_sha256"] == prompt_digest([constrained])
    # Once stepped down to free text (during the first step), later requests no longer say
    # the server restricts replies: they carry the free-text prompt, and their turns say so.
    for body in log.bodies:
        first = text_of(body["messages"][-1]["content"]).startswith("Step 1 ")
        assert body["messages"][0]["content"] == (
            free if mode == "free" and not first else constrained
        )
    for turn in turns:
        later = turn["step"] > 0 and mode == "free"
        assert turn.get("system") == ("free" if later else None)
        remembered = [m["content"] for m in turn["prompt"] if m["role"] == "assistant"]
        # Free-text replies (the first step's too, once stepped down) are kept in their tags.
        names = [re.sub(r"^<action>(\w+)</action>(<message>.*</message>)?$", r"\1", text)
                 for text in remembered] if mode == "free" else remembered  # fmt: skip
        assert set(names) <= set(env.action_names)
        assert all(text.startswith("<action>") == (mode == "free") for text in remembered)
    assert f"mode {mode}" in (tmp_path / "summary.txt").read_text()


def test_a_server_speaking_llama_cpp_is_asked_as_it_understands(env, tmp_path, capsys):
    """llama.cpp's server answers a guided_choice it does not know as free text, and refuses a
    json_schema response format with a 500 validation error; it takes a json_object with a
    schema. The client steps down through both and plays constrained from then on."""
    with ChatServer(
        dining_resource_ordering, ignored=("guided_choice",), response_formats=("json_object",)
    ) as server:
        report = run(env, server, tmp_path)
    usage = report["usage"]
    assert usage["mode"] == "constrained:json_object"
    assert usage["modes"] == {"constrained:json_object": usage["requests"]}
    assert usage["parse_rate"] == 1.0 and usage["failed_requests"] == 0
    assert 0 < server.log.unsupported_refused["json_schema"] <= FIRST_STEP
    later = server.log.bodies[-usage["requests"] // 2 :]
    assert all(body["response_format"]["type"] == "json_object" for body in later)
    notes = capsys.readouterr().err
    assert "ignored constrained:guided_choice" in notes
    assert "refused constrained:json_schema (500" in notes


def test_a_choice_ignored_is_seen_even_when_the_free_reply_is_cut_off(env, tmp_path, capsys):
    """A small model behind llama.cpp rambles past max_tokens: cut off, the reply is the start
    of no legal name, which a reply held to the choices would be; the client steps down."""

    def rambling(messages):
        return Reply("You are philosopher 0 of 5. You are HUNGRY and", finish_reason="length")

    with ChatServer(rambling, ignored=("guided_choice",)) as server:
        report = run(env, server, tmp_path)
    assert report["usage"]["mode"] == "constrained:json_schema"
    assert "ignored constrained:guided_choice" in capsys.readouterr().err


def test_a_refusal_that_names_no_constraint_stops_the_run():
    faults = Faults(status=400, status_message="no such model: scripted")
    with ChatServer(dining_resource_ordering, faults) as server:
        backend = OpenAIBackend(OpenAIConfig(model="scripted", base_urls=(server.base_url,)))

        async def ask():
            try:
                await backend.complete([{"role": "user", "content": "hi"}], choices=["WAIT"])
            finally:
                await backend.close()

        with pytest.raises(ModelServerError, match=r"answered 400 .*no such model"):
            asyncio.run(ask())
    assert server.log.requests == 1


def test_the_command_line_runs_constrained(tmp_path):
    with ChatServer(dining_resource_ordering, unsupported=("guided_choice",)) as server:
        main(
            ["eval-llm", "--env", "dining", "--base-url", server.base_url, "--model", "scripted",
             "--episodes", "1", "--max-steps", "2", "--num-agents", "3", "--out", str(tmp_path),
             "--no-progress", "--constrained"]
        )  # fmt: skip
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["usage"]["mode"] == "constrained:json_schema"
    assert summary["config"]["constrained"] is True
    assert "response_format" in server.log.bodies[-1]


def test_a_rerun_after_the_step_down_reuses_every_answer(env, tmp_path):
    """The replay steps down where the run did (the transcript keeps each reply's mode), so it
    asks the same prompts, free-text system prompt and history included, and asks nothing."""
    refusing = ("guided_choice", "response_format")
    with ChatServer(dining_resource_ordering, unsupported=refusing) as server:
        first = run(env, server, tmp_path)
    with ChatServer(dining_resource_ordering, unsupported=refusing) as server:
        again = run(env, server, tmp_path)
    assert server.log.requests == 0
    assert again["usage"]["reused_from_transcript"] == first["usage"]["requests"]
    assert again["summary"] == first["summary"]


def test_the_parse_feedback_asks_for_the_answer_the_system_prompt_asks_for(env, tmp_path):
    backend = OpenAIBackend(OpenAIConfig(model="scripted", base_urls=("http://127.0.0.1:9/v1",)))
    config = RunConfig(episodes=1, out=tmp_path, progress=False, constrained=True)
    team = [LLMAgent(backend, "scripted")] * PHILOSOPHERS
    run = EvaluationRun(env, DiningRenderer(), team, PromptOptions(), config)
    run._scratchpads = np.full((1, PHILOSOPHERS), "", dtype=object)
    run._parse_failed = np.ones((1, PHILOSOPHERS), bool)
    assert run._user_content("Step 2 of 4.", 0, 1, None).endswith("Answer with the name alone.")
    assert run.prompts.for_seat(1) == run.prompts.constrained
    assert run._assistant_text(ParsedReply(0, "name"), 1) == "WAIT"
    # The server stepped down to free text on a reply: from then on, tags, as the prompt says.
    free = Completion(text="<action>WAIT</action>", mode="free")
    run.prompts.note_step_downs([Turn(0, 1, "x", free, None, ParsedReply(0, "tag"))])
    assert run._user_content("Step 2 of 4.", 0, 1, None).endswith(
        "Answer with <action>NAME</action>."
    )
    assert run.prompts.for_seat(1) == run.prompts.free
    assert run._assistant_text(ParsedReply(0, "name"), 1) == "<action>WAIT</action>"
