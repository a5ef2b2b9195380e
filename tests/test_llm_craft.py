"""The Craft serialiser (golden texts of a hand-built coordination scene, the prompt
variants and switches), and a Craft evaluation through the loopback server."""

from __future__ import annotations

from pathlib import Path

import jax
import numpy as np
import pytest

import alemlite
from alemlite.core.prompting import PromptOptions
from alemlite.envs.craft.coordination import constants as L
from alemlite.envs.craft.coordination import tasks
from alemlite.envs.craft.prompting import CRAFT_VARIANTS, CraftRenderer
from alemlite.envs.craft.prompting.coordination import handover_window_range, quorum
from llm_bridge.agents import LLMAgent
from llm_bridge.clients.openai_backend import OpenAIBackend, OpenAIConfig
from llm_bridge.runner import RunConfig, run_evaluation
from tests.llm_craft_scene import SCENE_MESSAGES, batched, craft_scene
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
    assert "Team progress: 0/22 achievements, 0/10 team achievements." in text
    assert "going for wood" not in renderer.system_prompt(PromptOptions())
    # Beside a picture of the view: the same text without the view's tiles and creatures.
    (beside,) = renderer.observations(
        batch, jax.device_get(params), np.array([0]), np.array([0]), messages, mask,
        PromptOptions(variant="collaborative"), picture=True,
    )  # fmt: skip
    assert "In view:" in text and "In view:" not in beside and "Creatures:" not in beside
    dropped = [line for line in text.splitlines() if line.startswith(("In view:", "Creatures:"))]
    assert beside.splitlines() == [line for line in text.splitlines() if line not in dropped]


@pytest.mark.parametrize("variant", CRAFT_VARIANTS)
def test_craft_system_prompts(env, variant):
    prompt = CraftRenderer(env).system_prompt(PromptOptions(variant=variant))
    assert all(name in prompt for name in env.action_names)
    assert "collect_diamond" in prompt and "<action>NAME</action>" in prompt
    assert ("stone pickaxe" in prompt) == (variant != "general")
    assert ("## Coordination\n" in prompt) == (variant == "collaborative")
    assert "## Roles" in prompt and "- give_to_1:" in prompt  # two agents: one give action
    assert "- message_0, message_1, message_2, message_3: send that signal" in prompt
    full_rules = ("## Coordination tasks", "## Elite creatures", "## Construction")
    assert all((section in prompt) == (variant != "general") for section in full_rules)


# ---- the coordination layer in words, on the hand-built scene of tests/llm_craft_scene.py --
GOLDEN_AGENT_0 = """\
Step 41. Day (daylight 0.99).
You are agent 0 (warrior) at (row 8, col 8), facing up, at tree (a hard sync task).
Stats: health 9/9, food 9/9, drink 9/9, energy 9/9.
Inventory: wood 2.
Difficulty alpha 0.60: your role's actions always succeed, other roles' succeed for you with \
chance 0.40.
Your open request: stone (3 steps left).
You hold a diamond sword (melee damage 8).
In view: water x1 (nearest 3 up, 4 right, at (row 5, col 12)); stone x1 (nearest 3 right, at \
(row 8, col 11)); tree x1 (nearest 1 up, at (row 7, col 8)); coal x1 (nearest 2 down, 1 right, \
at (row 10, col 9)); iron x1 (nearest 2 up, 2 left, at (row 6, col 6)); shelter x1 (nearest \
3 down, 4 left, at (row 11, col 4)).
Tasks in view: hard sync on tree 1 up (row 7, col 8): 3 agents do it on one step; soft sync on \
stone 3 right (row 8, col 11): 2 agents do it on one step (alone: chance 0.40); handover on \
coal 2 down, 1 right (row 10, col 9): a do starts it, then another agent must do it within 5-10 \
steps; handover on iron 2 up, 2 left (row 6, col 6): started by agent 1, do it within 4 steps to \
finish it.
Sites in view: sync site 2 up, 2 right (row 6, col 10): 2 agents build the same building on one \
step; handover site 2 down, 2 left (row 10, col 6): agent 1 started a forge, build_forge within \
5 steps to finish it.
Creatures: elite zombie (hard: only hurt when 2+ agents hit it on one step) 3 up (row 5, col 8); \
large cow (soft: half damage from a lone attacker) 3 down, 3 right (row 11, col 11).
Teammates:
- agent 1 (forager): alive, health 9/9, at (row 8, col 9), 1 right; requests wood (7 steps left; \
give_to_1); last signal message_2; says: "meet at the tree"
- agent 2 (miner): DOWNED (face it and do within 12 steps to revive it), health 0/9, at (row 9, \
col 8), 1 down
Legal actions now: noop, move_left, move_right, move_up, move_down, do, request_food, \
request_drink, request_wood, request_stone, request_coal, request_iron, request_diamond, \
request_sapling, give_to_1, message_0, message_1, message_2, message_3
Team progress: 0/22 achievements, 0/10 team achievements. Still open: collect_coal, \
collect_diamond, collect_drink, collect_iron, collect_sapling, collect_stone, collect_wood, \
defeat_skeleton, defeat_zombie, eat_cow, eat_plant, make_iron_pickaxe, make_iron_sword, \
make_stone_pickaxe, make_stone_sword, make_wood_pickaxe, make_wood_sword, place_furnace, \
place_plant, place_stone, place_table, wake_up, complete_sync, complete_handover, defeat_elite, \
eat_large_cow, give_item, revive_teammate, build_shelter, build_forge, build_beacon, \
make_diamond_sword.
Help needed: agent 2 is DOWNED: revive it; agent 1 requests wood and you have 2: give_to_1."""


@pytest.fixture(scope="module")
def team_env():
    return alemlite.make("craft", num_agents=3, map_size=16)


@pytest.fixture(scope="module")
def scene(team_env):
    """The example scene as a batch of one, its action mask and host params (one compile each)."""
    params = team_env.default_params
    state = craft_scene(team_env, params)
    mask = np.asarray(jax.jit(team_env.action_mask)(state, params))[None]
    return batched(state), mask, jax.device_get(params), team_env.action_names


def _render(env, scene, seat=0, variant="collaborative", state=None):
    batch, mask, params, names = scene
    if env.action_names != names:  # another config's actions: all shown as legal
        mask = np.ones((1, 3, env.num_actions), bool)
    (text,) = CraftRenderer(env).observations(
        batch if state is None else state, params, np.array([0]), np.array([seat]),
        SCENE_MESSAGES, mask, PromptOptions(variant=variant),
    )  # fmt: skip
    return text


def test_coordination_golden_text(team_env, scene):
    assert _render(team_env, scene) == GOLDEN_AGENT_0


def test_coordination_seen_by_the_other_agents(team_env, scene):
    starter = _render(team_env, scene, seat=1, variant="specific")
    assert "(row 6, col 6): started by you, another agent must do it within 4 steps" in starter
    assert "you started a forge, another agent must build_forge within 5 steps" in starter
    assert "- agent 2 (miner): DOWNED" in starter.split("Teammates:")[1].splitlines()[1]
    assert "requests stone (3 steps left; give_to_2)" in starter  # agent 0 is agent 1 + 2
    assert "Team progress" not in starter
    downed = _render(team_env, scene, seat=2, variant="general")
    assert "You are DOWNED: a teammate must revive you within 12 steps." in downed
    assert "Legal actions now: noop\n" in downed + "\n"


def test_facing_a_site_hard_specialisation_and_give_range(team_env, scene):
    batch, mask, params, _ = scene
    agents = batch.agents
    moved = batch.replace(agents=agents.replace(position=agents.position.copy()))
    moved.agents.position[0, 0] = (7, 10)  # below the sync site, facing up
    assert "facing up, at site (an unbuilt sync site)." in _render(team_env, scene, state=moved)
    changed = params.replace(hard_specialisation=np.bool_(True), give_range=np.int32(3))
    (text,) = CraftRenderer(team_env).observations(
        batch, changed, np.array([0]), np.array([0]), SCENE_MESSAGES, mask, PromptOptions()
    )
    assert "other roles' always fail for you (hard specialisation)." in text
    assert "requests wood (7 steps left; give_to_1 reaches 3 tiles, it is 1 away)" in text


@pytest.mark.parametrize("variant", CRAFT_VARIANTS)
def test_every_variant_shows_the_coordination_layer(team_env, scene, variant):
    text = _render(team_env, scene, variant=variant)
    for line in GOLDEN_AGENT_0.splitlines()[:-2]:  # all but the collaborative cues
        assert line in text
    assert ("Team progress" in text) == (variant == "collaborative")


# Each switch and the lines (in the observation of agent 0) that must go with it.
SWITCHES = {
    "coordination": ({"coordination": False}, ("alpha", "sync", "site", "elite", "request",
                                               "signal", "give_to", "(warrior)", "team achiev")),
    "specialisation": ({"specialisation": False}, ("role", "(warrior)", "(forager)")),
    "tasks": ({"tasks": False}, ("Tasks in view", "a hard sync task")),
    "elites": ({"elites": False}, ("elite", "large cow")),
    "trading": ({"trading": False}, ("request", "give_to")),
    "messages": ({"num_message_tokens": 0}, ("signal", "message_")),
    "construction": ({"construction": False}, ("site", "diamond sword", "build")),
}  # fmt: skip


@pytest.mark.parametrize("switch", SWITCHES)
def test_switches_drop_their_lines(scene, switch):
    config, gone = SWITCHES[switch]
    env = alemlite.make("craft", num_agents=3, map_size=16, **config)
    text = _render(env, scene).lower()
    assert [word for word in gone if word.lower() in text] == []
    assert "teammates:" in text and "legal actions now: noop" in text
    system = CraftRenderer(env).system_prompt(PromptOptions(variant="specific")).lower()
    assert all(name in system for name in env.action_names)
    if switch == "coordination":
        assert "## roles" not in system and "team achievements" not in system
        assert "mod 3" not in system and "request_" not in system


def test_the_prompts_state_the_environments_own_handover_windows_and_quorums():
    # The renderer reads the rules from the environment; here, that reading stays exact
    # across the whole difficulty range and at the ends of every window.
    alpha = np.linspace(0.0, 1.0, 101, dtype=np.float32)
    low, high = handover_window_range(alpha)
    np.testing.assert_array_equal(low, tasks.handover_window(alpha, np.zeros_like(alpha)))
    np.testing.assert_array_equal(high, tasks.handover_window(alpha, np.full_like(alpha, 0.999)))
    assert (low[0], high[0], low[-1], high[-1]) == (12, 24, 3, 6)
    byte = (np.arange(L.QUORUM_LEVELS, dtype=np.uint8) << L.TASK_KIND_BITS)[:, None]
    for agents in (1, 2, 3, 5):
        needed = quorum(byte, alpha[None, :], agents)
        np.testing.assert_array_equal(needed, tasks.quorum(byte, alpha[None, :], agents))
        assert needed.min() == min(2, agents) and needed.max() == agents


def test_documented_example_is_what_the_code_writes(team_env, scene):
    docs = (Path(__file__).parents[1] / "docs" / "llm_bridge.md").read_text(encoding="utf-8")
    example = docs.split("<!-- craft-example:start -->")[1].split("<!-- craft-example:end -->")[0]
    system = CraftRenderer(team_env).system_prompt(PromptOptions(variant="collaborative"))
    assert f"```text\n{system}\n```" in example
    assert f"```text\n{GOLDEN_AGENT_0}\n```" in example
