"""Golden texts for hand-built dining states, and the system prompt variants."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import alemlite
from alemlite.core.prompting import PromptOptions
from alemlite.envs.dining.prompting import DINING_VARIANTS, DiningRenderer

GOLDEN = {
    0: (
        "Step 5 of 8.\n"
        "You are philosopher 0 of 5. You are HUNGRY, and have eaten 1 meal.\n"
        "Your left fork (fork 0) is held by you. Your right fork (fork 1) is free.\n"
        'Philosopher 4 (left neighbour) says: "I am starving"\n'
        'Philosopher 1 (right neighbour) says: "after you"'
    ),
    3: (
        "Step 5 of 8.\n"
        "You are philosopher 3 of 5. You are EATING (your forks go back on the table after "
        "this step), and have eaten 2 meals.\n"
        "Your left fork (fork 3) is held by you. Your right fork (fork 4) is held by you.\n"
        'Philosopher 4 (right neighbour) says: "I am starving"'
    ),
    4: (
        "Step 5 of 8.\n"
        "You are philosopher 4 of 5. You are HUNGRY, and have eaten 1 meal.\n"
        "Your left fork (fork 4) is held by philosopher 3 (your left neighbour). "
        "Your right fork (fork 0) is held by philosopher 0 (your right neighbour)."
    ),
}


@pytest.fixture(scope="module")
def batch():
    """Two tables: a fresh one, and a hand-built one in the middle of play."""
    env = alemlite.make("dining", num_philosophers=5, max_steps=8)
    _, fresh = env.reset(jax.random.PRNGKey(0), env.default_params)
    built = fresh.replace(
        fork_holder=fresh.fork_holder.at[:5].set(jnp.array([0, -1, 1, 3, 3])),
        eating=fresh.eating.at[3].set(True),
        meals=fresh.meals.at[:5].set(jnp.array([1, 0, 0, 2, 1])),
        step=jnp.asarray(4, fresh.step.dtype),
    )
    state = jax.device_get(jax.tree.map(lambda *leaves: jnp.stack(leaves), fresh, built))
    messages = np.full((2, env.num_agents), "", dtype=object)
    messages[1, 1], messages[1, 4] = "after you", "I am starving"
    return env, state, jax.device_get(env.default_params), messages


def test_golden_observations(batch):
    _, state, params, messages = batch
    renderer = DiningRenderer()
    seats = np.array([4, 0, 3])
    episodes = np.ones(3, int)
    texts = renderer.observations(state, params, episodes, seats, messages, None, PromptOptions())
    assert texts == [GOLDEN[4], GOLDEN[0], GOLDEN[3]]


def test_fresh_table_and_batch_order(batch):
    _, state, params, messages = batch
    renderer = DiningRenderer()
    episodes = np.array([1, 0, 1, 0])
    seats = np.array([0, 4, 4, 2])
    texts = renderer.observations(state, params, episodes, seats, messages, None, PromptOptions())
    assert texts[0] == GOLDEN[0] and texts[2] == GOLDEN[4]
    assert texts[1] == (
        "Step 1 of 8.\n"
        "You are philosopher 4 of 5. You are HUNGRY, and have eaten 0 meals.\n"
        "Your left fork (fork 4) is free. Your right fork (fork 0) is free."
    )
    assert "philosopher 2 of 5" in texts[3] and "fork 3" in texts[3]


def test_two_philosophers_hear_their_one_neighbour_once():
    env = alemlite.make("dining", num_philosophers=2, max_steps=8)
    _, state = env.reset(jax.random.PRNGKey(0), env.default_params)
    state = jax.device_get(jax.tree.map(lambda leaf: leaf[None], state))
    messages = np.array([["", "hello"]], dtype=object)
    (text,) = DiningRenderer().observations(
        state,
        jax.device_get(env.default_params),
        np.array([0]),
        np.array([0]),
        messages,
        None,
        PromptOptions(),
    )
    assert text.count("hello") == 1 and "Philosopher 1 (left neighbour)" in text


@pytest.mark.parametrize("variant", DINING_VARIANTS)
def test_system_prompt_variants(variant):
    prompt = DiningRenderer().system_prompt(PromptOptions(variant=variant))
    for name in ("WAIT", "GRAB_LEFT", "GRAB_RIGHT", "RELEASE"):
        assert name in prompt
    assert "<action>NAME</action>" in prompt and "<message>" in prompt
    assert ("lower-numbered" in prompt) == (variant == "resource_ordering")
    assert ("even number" in prompt) == (variant == "symmetry_breaking")
    assert ("think about your neighbours" in prompt) == (variant == "theory_of_mind")
    assert "deadlocked and the episode ends" in prompt
    assert ("Rules, applied to everyone at the same time" in prompt) == (variant != "minimal")


def test_prompt_switches_shape_the_answer_format():
    renderer = DiningRenderer()
    quiet = renderer.system_prompt(PromptOptions(communication=False))
    assert "<message>" not in quiet and "<think>" not in quiet and "<scratchpad>" not in quiet
    full = renderer.system_prompt(PromptOptions(chain_of_thought=True, scratchpad=True))
    assert "<think>" in full and "<scratchpad>" in full and "<message>" in full


def test_the_constrained_format_asks_for_the_name_alone():
    renderer = DiningRenderer()
    options = PromptOptions(chain_of_thought=True, scratchpad=True)
    free, constrained = (renderer.system_prompt(options, c) for c in (False, True))
    # Only the answer format differs: no tag, thought, note or message is asked for.
    assert constrained.split("## How to answer")[0] == free.split("## How to answer")[0]
    assert "answer\nwith the exact name of one legal action alone" in constrained
    for tag in ("<action>", "<message>", "<think>", "<scratchpad>"):
        assert tag in free and tag not in constrained


def test_rules_follow_the_environment_config():
    env = alemlite.make("dining", num_philosophers=3, mode="sequential", deadlock_mode="release")
    prompt = DiningRenderer.for_env(env).system_prompt(PromptOptions())
    assert "one philosopher at a time each step, in number order" in prompt
    assert "every fork is put back on the table" in prompt and "episode ends" not in prompt


def test_the_example_prompt_is_the_builders_own_after_steps_of_the_default_team(capsys):
    from llm_bridge.example_prompt import ExamplePromptConfig, main

    text = main(ExamplePromptConfig(env="dining", steps=3, seat=1, system=True))
    assert capsys.readouterr().out == text + "\n"
    system = DiningRenderer.for_env(alemlite.make("dining")).system_prompt(PromptOptions())
    assert text.startswith(system + "\n\n---\n\nStep 4 of 30.\nYou are philosopher 1 of 5.")
