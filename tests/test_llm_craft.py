"""The Craft serialiser, and a Craft evaluation through the loopback server."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import alemlite
from llm_bridge.agents import LLMAgent
from llm_bridge.clients.openai_backend import OpenAIBackend, OpenAIConfig
from llm_bridge.render.base import PromptOptions
from llm_bridge.render.craft import CRAFT_VARIANTS, CraftRenderer
from llm_bridge.runner import RunConfig, run_evaluation
from tests.llm_server import ChatServer, craft_alternating

AGENTS, EPISODES, MAX_STEPS = 2, 2, 4


@pytest.fixture(scope="module")
def env():
    return alemlite.make("craft", num_agents=AGENTS, map_size=16, max_steps=MAX_STEPS)


def test_craft_evaluation_through_the_server(env, tmp_path):
    with ChatServer(craft_alternating) as server:
        backend = OpenAIBackend(OpenAIConfig(model="scripted", base_urls=(server.base_url,)))
        report = run_evaluation(
            env,
            CraftRenderer(env),
            [LLMAgent(backend, "scripted")] * AGENTS,
            PromptOptions(variant="collaborative", history=2),
            RunConfig(episodes=EPISODES, seed=3, out=tmp_path, progress=False),
        )
    lengths = report["episodes"]["episode_length"]
    assert lengths == [MAX_STEPS] * EPISODES  # nobody dies in four steps
    assert set(report["episodes"]) >= {"normalised_return", "team_achievement_percent"}
    usage = report["usage"]
    assert usage["requests"] == AGENTS * MAX_STEPS * EPISODES == server.log.requests
    assert usage["parse_methods"]["tag"] == usage["parse_methods"]["line"] == usage["requests"] // 2
    # Every turn's prompt (history of 2 kept) shows the step it was asked at.
    steps = [t["prompt"][-1]["content"].split(".")[0] for t in _turns(tmp_path)]
    assert sorted(set(steps)) == [f"Step {t}" for t in range(1, MAX_STEPS + 1)]


def _turns(out):
    from llm_bridge.transcripts import read_records

    return [r for r in read_records(out / "transcript.jsonl") if r["type"] == "turn"]


def test_craft_observation_is_the_agents_own_view(env):
    params = env.default_params
    _, state = jax.jit(env.reset)(jax.random.PRNGKey(0), params)
    batch = jax.device_get(jax.tree.map(lambda leaf: leaf[None], state))
    mask = jax.device_get(jax.jit(env.action_mask)(state, params))[None]
    messages = np.array([["", "going for wood"]], dtype=object)
    renderer = CraftRenderer(env)
    (text,) = renderer.observations(
        batch, jax.device_get(params), np.array([0]), np.array([0]), messages, mask,
        PromptOptions(variant="collaborative"),
    )  # fmt: skip
    row, col = np.asarray(state.agents.position[0]).tolist()
    assert text.startswith("Step 1. Day")
    assert f"You are agent 0 (warrior) at (row {row}, col {col}), facing down" in text
    assert "Stats: health 9/9, food 9/9, drink 9/9, energy 9/9." in text
    assert "Inventory: empty." in text
    assert "- agent 1 (forager): alive, health 9/9" in text and 'says: "going for wood"' in text
    assert "Legal actions now: noop, move_left, move_right, move_up, move_down, do" in text
    assert "Team progress: 0/22 achievements." in text
    assert "going for wood" not in renderer.system_prompt(PromptOptions())


@pytest.mark.parametrize("variant", CRAFT_VARIANTS)
def test_craft_system_prompts(env, variant):
    prompt = CraftRenderer(env).system_prompt(PromptOptions(variant=variant))
    assert all(name in prompt for name in env.action_names)
    assert "collect_diamond" in prompt and "<action>NAME</action>" in prompt
    assert ("stone pickaxe" in prompt) == (variant != "general")
    assert ("## Coordination" in prompt) == (variant == "collaborative")
