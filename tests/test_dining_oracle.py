"""The JAX dining table against the plain-Python oracle, step by step, on random play."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import alemlite
from benchmarks.reference.dining import DiningOracle

STEPS = 10

# (name, options); every option is passed to both engines.
CONFIGS = {
    "n2_sim_terminate": dict(num_philosophers=2),
    "n3_seq_release_messages_shared": dict(
        num_philosophers=3,
        mode="sequential",
        deadlock_mode="release",
        num_message_tokens=2,
        shared=True,
    ),
    "n5_sim_release_paper_padded": dict(
        num_philosophers=5, max_philosophers=7, deadlock_mode="release", reward="paper"
    ),
    "n7_seq_terminate_messages": dict(num_philosophers=7, mode="sequential", num_message_tokens=1),
    "n5_sim_backoff_always": dict(num_philosophers=5, backoff_steps=1, backoff_prob=1.0),
    "n3_sim_release_backoff_never": dict(
        num_philosophers=3, deadlock_mode="release", backoff_steps=2, backoff_prob=0.0
    ),
    "n7_sim_paper": dict(num_philosophers=7, reward="paper", deadlock_mode="release"),
    "n5_seq_release_backoff_always": dict(
        num_philosophers=5,
        mode="sequential",
        deadlock_mode="release",
        backoff_steps=2,
        backoff_prob=1.0,
    ),
}


def _compile(options: dict):
    env = alemlite.make("dining", max_steps=STEPS, **options)
    params = env.default_params

    def run(actions):
        _, state = env.reset(jax.random.PRNGKey(0), params)

        def one(state, step_actions):
            mask = env.action_mask(state, params)
            _, state, reward, _, info = env.step(jax.random.PRNGKey(1), state, step_actions, params)
            record = {
                "mask": mask,
                "fork_holder": state.fork_holder,
                "eating": state.eating,
                "meals": state.meals,
                "last_message": state.last_message,
                "reward": reward,
                "terminated": info["terminated"],
                "truncated": info["truncated"],
                "metrics": env.episode_metrics(state, params),
            }
            return state, record

        return jax.lax.scan(one, state, actions)[1]

    return env, jax.jit(run)


@pytest.fixture(scope="module")
def engines():
    return {name: _compile(options) for name, options in CONFIGS.items()}


def _compare(env, run, options, actions: np.ndarray) -> None:
    records = jax.device_get(run(jnp.asarray(actions, jnp.int32)))
    table_options = {key: value for key, value in options.items() if key != "max_philosophers"}
    oracle = DiningOracle(max_steps=STEPS, **table_options)
    n = oracle.num_philosophers
    for t in range(STEPS):
        where = f"step {t + 1}, actions so far {actions[: t + 1, :n].tolist()}"
        expected_mask = oracle.action_mask()
        assert records["mask"][t, :n].tolist() == expected_mask, where
        assert not records["mask"][t, n:, 1:].any(), where
        rewards, terminated, truncated = oracle.step(actions[t, :n].tolist())
        assert records["fork_holder"][t, :n].tolist() == oracle.fork_holder, where
        assert (records["fork_holder"][t, n:] == -1).all(), where
        assert records["eating"][t, :n].tolist() == oracle.eating, where
        assert records["meals"][t, :n].tolist() == oracle.meals, where
        assert records["last_message"][t, :n].tolist() == oracle.last_message, where
        np.testing.assert_allclose(records["reward"][t, :n], rewards, atol=1e-5, err_msg=where)
        assert not records["reward"][t, n:].any(), where
        assert bool(records["terminated"][t]) == terminated, where
        assert bool(records["truncated"][t]) == truncated, where
        for name, value in oracle.metrics().items():
            np.testing.assert_allclose(
                records["metrics"][name][t], value, atol=1e-5, err_msg=f"{name}, {where}"
            )
        if terminated or truncated:
            return


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_matches_oracle_on_random_play(engines, name):
    env, run = engines[name]
    options = CONFIGS[name]
    # Ids from -1 to num_actions: the out-of-range ends act as invalid WAITs.
    action = st.integers(-1, env.num_actions)

    @settings(deadline=None, max_examples=40, database=None)
    @given(
        st.lists(
            st.lists(action, min_size=env.num_agents, max_size=env.num_agents),
            min_size=STEPS,
            max_size=STEPS,
        )
    )
    def check(sequence):
        _compare(env, run, options, np.asarray(sequence))

    check()


@pytest.mark.parametrize("name", ["n5_sim_release_paper_padded", "n7_seq_terminate_messages"])
def test_matches_oracle_on_grab_heavy_play(engines, name):
    """Mostly grabs and releases, so meals, contests and deadlocks happen often."""
    env, run = engines[name]
    options = CONFIGS[name]
    moves = st.sampled_from([1, 1, 2, 2, 3, 0])

    @settings(deadline=None, max_examples=40, database=None)
    @given(
        st.lists(
            st.lists(moves, min_size=env.num_agents, max_size=env.num_agents),
            min_size=STEPS,
            max_size=STEPS,
        )
    )
    def check(sequence):
        _compare(env, run, options, np.asarray(sequence))

    check()
