"""The matrix games' prompt builder: system prompts with the payoffs, batched observations."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import alemlite
from alemlite.core import VecEnv
from alemlite.core.prompting import PromptOptions

SPEC = alemlite.spec("matrix")


def builder(**options):
    env = SPEC.build(SPEC.options(**options))
    return env, SPEC.prompts(env)


def test_system_prompt_states_the_payoffs_rounds_and_moves():
    _, prompts = builder(max_steps=12)
    text = prompts.system_prompt(SPEC.prompt_defaults)
    assert "2 players" in text and "12 rounds" in text
    for row in ("PLAY_A      11     -30       0", "PLAY_B     -30       7       6"):
        assert row in text
    assert "PLAY_A, PLAY_B, PLAY_C" in text
    assert "team payoff" in text
    assert "<action>NAME</action>" in text
    assert "climbing" not in text  # the game is not named: the payoffs speak


def test_general_sum_tables_show_both_payoffs():
    _, prompts = builder(game="prisoners_dilemma", num_agents=3)
    text = prompts.system_prompt(PromptOptions(variant="minimal", communication=False))
    assert "PLAY_B    5, 0    1, 1" in text
    assert "average, over the other players" in text
    assert "PLAY_C" not in text and "<message>" not in text
    _, stag = builder(game="stag_hunt", num_agents=3)
    assert "if every other player played PLAY_A" in stag.system_prompt(PromptOptions())


def test_tokens_are_explained_when_moves_carry_them():
    _, prompts = builder(num_message_tokens=2)
    assert "PLAY_A+MSG_1 (tokens 1 to 2)" in prompts.system_prompt(PromptOptions())


@pytest.mark.parametrize("variant", SPEC.prompts(SPEC.build(SPEC.options())).variants)
def test_every_variant_renders(variant):
    _, prompts = builder(game="penalty", penalty=-40.0)
    assert "-40" in prompts.system_prompt(PromptOptions(variant=variant))


def test_observations_of_a_batch():
    env, prompts = builder(num_agents=3, max_steps=5, num_message_tokens=1)
    params = env.default_params
    vec = VecEnv(env, num_envs=2)
    _, state = vec.reset(jax.random.PRNGKey(0), params)
    messages = np.array([["", "", ""], ["", "", ""]], dtype=object)
    everyone = (np.array([0, 0, 0, 1, 1, 1]), np.array([0, 1, 2, 0, 1, 2]))
    mask = np.asarray(vec.action_mask(state, params))
    first = prompts.observations(
        state.env_state, params, *everyone, messages, mask, PromptOptions()
    )
    assert first[0].startswith("Round 1 of 5. You are player 0 of 3.")
    assert "This is the first round." in first[4]
    # Episode 0: b, c, a with a token from player 2; episode 1: all-a.
    actions = jnp.array([[1, 2, 0 + 3], [0, 0, 0]], jnp.int32)
    _, state, *_ = vec.step(jax.random.PRNGKey(1), state, actions, params)
    messages = np.array([["let us play A", "", "ok"], ["", "", ""]], dtype=object)
    texts = prompts.observations(
        jax.device_get(state.env_state),
        params,
        np.array([0, 0, 1]),
        np.array([0, 2, 1]),
        messages,
        mask,
        PromptOptions(),
    )
    team = (6 - 30 + 0) / 3  # pairs (b, c), (b, a), (c, a) of the climbing matrix
    assert texts[0].startswith("Round 2 of 5. You are player 0 of 3.")
    assert (
        "Last round: player 0 played PLAY_B, player 1 played PLAY_C, player 2 played PLAY_A. "
        f"Your payoff was {team:g}."
    ) in texts[0]
    assert "Tokens sent last round: player 2 sent MSG_1." in texts[0]
    # Each player reads the others' messages, not its own.
    assert 'Player 2 says: "ok"' in texts[0] and "Player 0 says" not in texts[0]
    assert "Player 2 says" not in texts[1] and 'Player 0 says: "let us play A"' in texts[1]
    assert "Your payoff was 11." in texts[2] and "Your total payoff so far: 11." in texts[2]
    assert "Tokens" not in texts[2] and "says" not in texts[2]
