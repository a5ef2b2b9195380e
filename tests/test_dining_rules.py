"""Hand-made cases of the dining rules, deadlock, backoff, masks, views and mixed batches."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import alemlite
from alemlite.core import ConfigError, VecEnv
from alemlite.envs.dining import DINING_POLICIES

WAIT, LEFT, RIGHT, RELEASE = 0, 1, 2, 3


class Table:
    """An env with a jitted step, played from a fresh reset with explicit action lists."""

    def __init__(self, **options):
        self.env = alemlite.make("dining", **options)
        self.params = self.env.default_params
        self._step = jax.jit(self.env.step)
        self.key = jax.random.PRNGKey(0)
        self.reset()

    def reset(self, **params):
        """A fresh episode; `params` override the env's default dynamic params."""
        self.params = self.env.make_params(**params)
        self.obs, self.state = self.env.reset(self.key, self.params)
        return self

    def play(self, *rounds):
        for actions in rounds:
            padded = list(actions) + [WAIT] * (self.env.num_agents - len(actions))
            self.obs, self.state, self.reward, self.done, self.info = self._step(
                self.key, self.state, jnp.asarray(padded, jnp.int32), self.params
            )
        return self

    def holders(self):
        return self.state.fork_holder.tolist()


@pytest.fixture(scope="module")
def five():
    return Table(num_philosophers=5)


@pytest.fixture(scope="module")
def three():
    """Backoff compiled in; each test sets backoff_steps / backoff_prob / max_steps."""
    return Table(num_philosophers=3, backoff_steps=1)


def test_meal_counted_on_second_fork_and_forks_down_after_one_step(five):
    five.reset().play([LEFT, WAIT, WAIT, WAIT, WAIT])
    assert five.holders() == [0, -1, -1, -1, -1]
    five.play([RIGHT, WAIT, WAIT, WAIT, WAIT])
    assert five.holders() == [0, 0, -1, -1, -1]
    assert five.state.eating.tolist() == [True, False, False, False, False]
    assert five.state.meals.tolist() == [1, 0, 0, 0, 0]
    assert five.reward.tolist() == [1.0, 0.0, 0.0, 0.0, 0.0]
    # While philosopher 0 eats, its forks stay taken for the whole step.
    five.play([WAIT, LEFT, WAIT, WAIT, RIGHT])
    assert five.holders() == [-1, -1, -1, -1, -1]
    assert five.state.eating.tolist() == [False] * 5
    assert five.state.failed_grabs.tolist() == [0, 1, 0, 0, 1]


def test_lowest_id_wins_a_contested_fork(five):
    # Fork 1 is wanted by 0 (right) and 1 (left); fork 0 by 0... and by 4 (right).
    five.reset().play([RIGHT, LEFT, WAIT, WAIT, RIGHT])
    assert five.holders() == [4, 0, -1, -1, -1]
    five.reset().play([LEFT, WAIT, WAIT, WAIT, RIGHT])
    assert five.holders()[0] == 0
    assert five.state.failed_grabs.tolist() == [0, 0, 0, 0, 1]


def test_release_frees_forks_for_grabs_in_the_same_step(five):
    five.reset().play([LEFT, WAIT, WAIT, WAIT, WAIT])
    five.play([RELEASE, WAIT, WAIT, WAIT, RIGHT])
    assert five.holders()[0] == 4
    # That grab was not allowed by the mask (fork held at the start): valid 4 of 5.
    assert five.state.valid_actions.tolist() == [2, 2, 2, 2, 1]


def test_grabbing_a_held_fork_fails_and_is_invalid(five):
    five.reset().play([LEFT, WAIT, WAIT, WAIT, WAIT], [LEFT, WAIT, WAIT, WAIT, WAIT])
    assert five.holders()[0] == 0
    assert five.state.failed_grabs.tolist()[0] == 1
    assert five.state.valid_actions.tolist()[0] == 1


def test_everyone_grabbing_left_deadlocks_and_terminates(five):
    five.reset().play([LEFT] * 5)
    assert bool(five.done) and bool(five.info["terminated"]) and not bool(five.info["truncated"])
    metrics = five.env.episode_metrics(five.state, five.params)
    assert float(metrics["deadlock"]) == 1.0
    assert float(metrics["deadlock_step"]) == 1.0
    assert float(five.reward[0]) == -1.0 - 1.0  # deadlock penalty and starvation at the end


def test_release_mode_frees_all_forks_counts_events_and_plays_on(five):
    table = five.reset(deadlock_mode="release").play([LEFT] * 5)
    assert not bool(table.done)
    assert table.holders() == [-1] * 5
    table.play([WAIT] * 5, [RIGHT] * 5)
    metrics = table.env.episode_metrics(table.state, table.params)
    assert float(metrics["deadlock_events"]) == 2.0
    assert float(metrics["deadlock_step"]) == 1.0
    assert float(table.reward[0]) == -1.0


def test_truncated_at_max_steps(three):
    table = three.reset(max_steps=4, backoff_steps=0)
    table.play(*[[WAIT] * 3] * 3)
    assert not bool(table.done)
    table.play([WAIT] * 3)
    assert bool(table.info["truncated"]) and not bool(table.info["terminated"])
    # Starvation at the end for every philosopher, nothing else.
    assert table.reward.tolist() == [-1.0] * 3


def test_backoff_with_probability_one_drops_after_the_streak(three):
    table = three.reset(backoff_steps=2, backoff_prob=1.0)
    table.play([LEFT, WAIT, WAIT])
    assert table.holders() == [0, -1, -1]
    assert table.state.one_fork_streak.tolist() == [1, 0, 0]
    table.play([WAIT, WAIT, WAIT])
    assert table.holders() == [-1, -1, -1]  # held for 2 steps: dropped
    assert table.state.one_fork_streak.tolist() == [0, 0, 0]


def test_backoff_with_probability_zero_never_drops(three):
    table = three.reset(backoff_steps=1, backoff_prob=0.0)
    table.play(*[[LEFT, WAIT, WAIT]] * 5)
    assert table.holders() == [0, -1, -1]
    assert table.state.one_fork_streak.tolist() == [5, 0, 0]


def test_backoff_breaks_a_deadlock_before_it_is_checked(three):
    table = three.reset(backoff_steps=1, backoff_prob=1.0)
    table.play([LEFT] * 3)
    assert not bool(table.done)
    assert table.holders() == [-1] * 3


def test_sequential_hand_off_within_a_step():
    table = Table(num_philosophers=3, mode="sequential")
    table.play([LEFT, WAIT, WAIT], [RIGHT, WAIT, WAIT])
    assert table.state.eating.tolist() == [True, False, False]
    mask = table.env.action_mask(table.state, table.params)
    # Philosopher 0 puts forks 0 and 1 down at its turn, before 1 and 2 act.
    assert mask[1].tolist() == [True, True, True, False]
    assert mask[2].tolist() == [True, True, True, False]
    table.play([WAIT, LEFT, RIGHT])
    assert table.holders() == [2, 1, -1]
    assert table.state.failed_grabs.tolist() == [0, 0, 0]
    # Now philosopher 2 eats; it acts last, so its forks are not free to 0 or 1 this step.
    table.reset().play([WAIT, WAIT, LEFT], [WAIT, WAIT, RIGHT])
    assert table.state.eating.tolist() == [False, False, True]
    mask = table.env.action_mask(table.state, table.params)
    assert mask[0].tolist() == [True, False, True, False]
    assert mask[1].tolist() == [True, True, False, False]
    table.play([LEFT, RIGHT, WAIT])
    assert table.holders() == [-1, -1, -1]
    assert table.state.failed_grabs.tolist() == [1, 1, 0]


def test_action_mask_and_names_with_messages():
    table = Table(num_philosophers=3, max_philosophers=4, num_message_tokens=2)
    env = table.env
    assert env.num_actions == 12
    assert env.action_names[:5] == ("WAIT", "GRAB_LEFT", "GRAB_RIGHT", "RELEASE", "WAIT+MSG_1")
    assert env.action_names[6] == "GRAB_RIGHT+MSG_1"
    table.play([LEFT + 4 * 2, WAIT + 4 * 1, WAIT])
    mask = np.asarray(env.action_mask(table.state, table.params))
    assert mask[0, :4].tolist() == [True, False, True, True]
    assert mask[1, :4].tolist() == [True, True, True, False]
    assert (mask[:3, 4:8] == mask[:3, :4]).all() and (mask[:3, 8:] == mask[:3, :4]).all()
    assert mask[3].tolist() == [True] + [False] * 11
    assert table.state.last_message.tolist() == [2, 1, 0, 0]
    obs = np.asarray(table.obs)
    assert obs.shape == (4, 7 + 2 * 3)
    # Philosopher 1 sees its left neighbour's token 2 and its right neighbour's silence.
    assert obs[1, 7:10].tolist() == [0, 0, 1] and obs[1, 10:13].tolist() == [1, 0, 0]
    # Philosopher 0: holds left, left fork available, right free; 1 step of 30 gone.
    np.testing.assert_allclose(obs[0, :7], [0, 1, 0, 1, 1, 0, 29 / 30])
    assert not obs[3].any()
    global_state = np.asarray(env.global_state(table.state, table.params))
    assert global_state.shape == env.global_state_shape


def test_config_errors_name_the_value():
    cases = {
        "num_philosophers=1": dict(num_philosophers=1),
        "'banquet'": dict(reward="banquet"),
        "'turns'": dict(mode="turns"),
        "max_philosophers=4": dict(num_philosophers=5, max_philosophers=4),
        "num_message_tokens=-1": dict(num_message_tokens=-1),
        "'wait'": dict(deadlock_mode="wait"),
        "backoff_prob=1.5": dict(backoff_prob=1.5),
        "max_steps=0": dict(max_steps=0),
        "'paper'": dict(reward="paper", mode="sequential"),
        "colour": dict(colour="red"),
        "deadlock_penalty=-1": dict(deadlock_penalty=-1.0),
    }
    for fragment, options in cases.items():
        with pytest.raises(ConfigError, match=fragment):
            alemlite.make("dining", **options)
    env = alemlite.make("dining", num_philosophers=5, max_philosophers=15)
    with pytest.raises(ConfigError, match="num_philosophers"):
        env.make_params(num_philosophers=np.array([5, 16]))


def test_small_table_in_a_mixed_batch_matches_the_standalone_table():
    big = alemlite.make("dining", num_philosophers=5, max_philosophers=15, max_steps=12)
    alone = alemlite.make("dining", num_philosophers=5, max_steps=12)
    vec = VecEnv(big, num_envs=3)
    params = big.make_params(num_philosophers=np.array([5, 10, 15]))
    steps = 12
    actions = jax.random.randint(jax.random.PRNGKey(3), (steps, 3, 15), 0, 4)

    @jax.jit
    def play_batch(actions):
        _, state = vec.reset(jax.random.PRNGKey(0), params)
        env_state = state.env_state

        def one(env_state, step_actions):
            _, env_state, reward, done, _ = jax.vmap(
                big.step, in_axes=(None, 0, 0, vec.params_axes(params))
            )(jax.random.PRNGKey(1), env_state, step_actions, params)
            return env_state, (env_state, reward, done)

        return jax.lax.scan(one, env_state, actions)[1]

    @jax.jit
    def play_alone(actions):
        _, state = alone.reset(jax.random.PRNGKey(0), alone.default_params)

        def one(state, step_actions):
            _, state, reward, done, _ = alone.step(
                jax.random.PRNGKey(1), state, step_actions, alone.default_params
            )
            return state, (state, reward, done)

        return jax.lax.scan(one, state, actions)[1]

    batch_states, batch_rewards, batch_done = play_batch(actions)
    solo_states, solo_rewards, solo_done = play_alone(actions[:, 0, :5])
    last = int(np.argmax(np.asarray(solo_done))) + 1 if bool(solo_done.any()) else steps
    for field in ("fork_holder", "eating", "meals", "failed_grabs", "valid_actions"):
        batch_field = np.asarray(getattr(batch_states, field))[:last, 0]
        solo_field = np.asarray(getattr(solo_states, field))[:last]
        np.testing.assert_array_equal(batch_field[:, :5], solo_field, err_msg=field)
        inert = -1 if field == "fork_holder" else 0
        assert (batch_field[:, 5:] == inert).all(), field
    np.testing.assert_allclose(batch_rewards[:last, 0, :5], solo_rewards[:last])
    assert not np.asarray(batch_rewards[:, 0, 5:]).any()
    np.testing.assert_array_equal(batch_done[:last, 0], solo_done[:last])


def test_policies_are_pure_and_fill_inert_seats_with_wait():
    env = alemlite.make("dining", num_philosophers=4, max_philosophers=6)
    _, state = env.reset(jax.random.PRNGKey(0), env.default_params)
    for name, policy in DINING_POLICIES.items():
        actions = jax.jit(policy)(jax.random.PRNGKey(1), state, env.default_params)
        assert actions.shape == (6,) and actions.dtype == jnp.int32, name
        assert actions[4:].tolist() == [WAIT, WAIT], name
        assert (actions >= 0).all() and (actions < 4).all(), name
