"""Prefix reuse: every request of a run carries the same system prompt, and each agent's
chat at one turn begins, byte for byte, with its chat of the turn before, except where the
history window drops its oldest half (`llm_bridge.history`). Checked on the requests the
loopback server receives during a real run."""

from __future__ import annotations

import itertools
import json
from collections import defaultdict

import pytest

import alemlite
from alemlite.core.prompting import PromptOptions
from alemlite.envs.dining.prompting import DiningRenderer
from llm_bridge.agents import LLMAgent
from llm_bridge.clients.openai_backend import OpenAIBackend, OpenAIConfig
from llm_bridge.history import History
from llm_bridge.runner import RunConfig, run_evaluation
from llm_bridge.transcripts import read_records
from tests.llm_server import ChatServer, dining_resource_ordering

# One table: every request's messages are then its agent's own (no two agents ask alike).
PHILOSOPHERS, MAX_STEPS, EPISODES, SEED, HISTORY = 3, 10, 1, 2, 4


def remembered(limit: int, turns: int) -> list[int]:
    """How many turns the window holds when each of `turns` turns is asked."""
    history, sizes = History(limit), []
    for turn in range(turns):
        sizes.append(len(history.turns))
        history.add(f"observation {turn}", "answer")
    return sizes


@pytest.mark.parametrize(
    ("limit", "sizes"),
    [
        (0, [0] * 8),
        (1, [0, 1, 1, 1, 1, 1, 1, 1]),
        (4, [0, 1, 2, 3, 4, 3, 4, 3, 4, 3]),
        (8, [0, 1, 2, 3, 4, 5, 6, 7, 8, 5, 6, 7, 8, 5]),
    ],
)
def test_the_window_drops_its_oldest_half_at_once(limit, sizes):
    assert remembered(limit, len(sizes)) == sizes
    history = History(limit)
    for turn in range(len(sizes)):
        history.add(f"observation {turn}", "answer")
    kept = [message["content"] for message in history.messages()[::2]]
    # Always the most recent turns, oldest first, as many as the next turn is asked with.
    assert len(kept) == remembered(limit, len(sizes) + 1)[-1]
    assert kept == [f"observation {turn}" for turn in range(len(sizes) - len(kept), len(sizes))]


def serialised(messages: list[dict]) -> str:
    return json.dumps(messages, ensure_ascii=False, separators=(",", ":"))


@pytest.fixture(scope="module")
def requests(tmp_path_factory):
    """Each request's messages as the server received them, by agent, in turn order."""
    env = alemlite.make("dining", num_philosophers=PHILOSOPHERS, max_steps=MAX_STEPS)
    out = tmp_path_factory.mktemp("prefix")
    with ChatServer(dining_resource_ordering) as server:
        backend = OpenAIBackend(OpenAIConfig(model="scripted", base_urls=(server.base_url,)))
        run_evaluation(
            env,
            DiningRenderer(),
            [LLMAgent(backend, "scripted")] * PHILOSOPHERS,
            PromptOptions(history=HISTORY),
            RunConfig(episodes=EPISODES, seed=SEED, out=out, progress=False),
        )
    records = [r for r in read_records(out / "transcript.jsonl") if r["type"] == "turn"]
    turns = {serialised(record["prompt"]): record for record in records}
    assert len(turns) == len(records) == len(server.log.bodies)
    chats = defaultdict(list)
    for body in server.log.bodies:
        turn = turns[serialised(body["messages"][1:])]
        chats[turn["episode"], turn["seat"]].append((turn["step"], body["messages"]))
    return {agent: [messages for _, messages in sorted(chat)] for agent, chat in chats.items()}


def test_every_request_has_the_same_system_prompt(requests):
    systems = {serialised(chat[:1]) for chats in requests.values() for chat in chats}
    assert len(systems) == 1 and '"role":"system"' in systems.pop()


def test_consecutive_turns_extend_the_previous_chat_byte_for_byte(requests):
    assert len(requests) == EPISODES * PHILOSOPHERS
    sizes = remembered(HISTORY, MAX_STEPS)
    expected = [later == earlier + 1 for earlier, later in itertools.pairwise(sizes)]
    assert sum(expected) == 6 and not all(expected)  # 3 window drops in 10 turns
    for chats in requests.values():
        assert len(chats) == MAX_STEPS
        extends = [
            serialised(later).startswith(serialised(earlier)[:-1])
            for earlier, later in itertools.pairwise(chats)
        ]
        assert extends == expected
        assert all(later[0] == earlier[0] for earlier, later in itertools.pairwise(chats))
