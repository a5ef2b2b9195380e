"""The wrappers of the environment contract, on a tiny environment with known answers."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import alemlite
from alemlite.core import ConfigError, JaxMARLAdapter, LogWrapper, VecEnv
from tests.toy_env import ToyEnv


@pytest.fixture(scope="module")
def env():
    return LogWrapper(ToyEnv(num_agents=2, max_steps=3))


def test_log_wrapper_accumulates_returns_and_reports_them_at_the_end(env):
    params = env.default_params
    _, state = env.reset(jax.random.PRNGKey(0), params)
    actions = jnp.array([1, 0])
    for expected_length in (1, 2, 3):
        _, state, _, done, info = env.step(jax.random.PRNGKey(1), state, actions, params)
        assert int(info["episode_length"]) == expected_length
    assert bool(done) and bool(info["truncated"]) and not bool(info["terminated"])
    np.testing.assert_array_equal(info["episode_return"], [3.0, 0.0])
    assert int(info["episode_metrics"]["total"]) == 3


def test_vec_env_restarts_finished_episodes_and_keeps_the_final_observation(env):
    vec = VecEnv(env, num_envs=3)
    params = env.default_params
    obs, state = vec.reset(jax.random.PRNGKey(0), params)
    step = jax.jit(vec.step)
    # Env 0 terminates at once (both ADD); the others keep going.
    actions = jnp.array([[1, 1], [0, 1], [0, 0]])
    obs, state, _, done, info = step(jax.random.PRNGKey(1), state, actions, params)
    np.testing.assert_array_equal(done, [True, False, False])
    np.testing.assert_array_equal(info["final_observation"][0, :, 1], [1, 1])  # ended on step 1
    np.testing.assert_array_equal(obs[0, :, 1], [0, 0])  # restarted: step 0 again
    np.testing.assert_array_equal(obs[1:, :, 1], [[1, 1], [1, 1]])
    np.testing.assert_array_equal(state.env_state.episode_length, [0, 1, 1])
    final = state.replace(env_state=info["final_state"])
    np.testing.assert_array_equal(info["final_state"].episode_length, [1, 1, 1])
    np.testing.assert_array_equal(vec.global_state(final, params)[0, -1], 1)


@pytest.mark.parametrize("pool_size, refresh", [(4, 1), (8, 8)])
def test_pool_restarts_every_env_even_when_more_finish_than_are_refreshed(env, pool_size, refresh):
    num_envs = 6
    vec = VecEnv(env, num_envs=num_envs, pool_size=pool_size, refresh_per_step=refresh)
    params = env.default_params
    _, state = vec.reset(jax.random.PRNGKey(0), params)
    step = jax.jit(vec.step)
    all_add = jnp.ones((num_envs, 2), jnp.int32)
    seen_offsets = set()
    for index in range(5):
        pool_before = vec.pooled_states(state, params)
        cursor = int(state.pool_cursor)
        obs, state, _, done, _ = step(jax.random.PRNGKey(index + 1), state, all_add, params)
        assert bool(done.all())  # every env finishes, more than the pool refreshes
        inner = state.env_state.env_state
        np.testing.assert_array_equal(inner.step, 0)
        np.testing.assert_array_equal(obs[..., 1], 0)
        # Each env got the pool slot at cursor + its rank, from the pool before this step.
        slots = (cursor + np.arange(num_envs)) % pool_size
        np.testing.assert_array_equal(inner.offset, np.asarray(pool_before.env_state.offset)[slots])
        assert int(state.pool_cursor) == (cursor + num_envs) % pool_size
        seen_offsets.update(np.asarray(inner.offset).tolist())
    assert len(seen_offsets) > pool_size  # refreshed worlds really come in


def test_batched_params_mix_settings_in_one_batch():
    env = ToyEnv(num_agents=1, max_steps=5)
    vec = VecEnv(env, num_envs=2)
    params = env.default_params.replace(max_steps=jnp.array([1, 3], jnp.int32))
    _, state = vec.reset(jax.random.PRNGKey(0), params)
    _, state, _, done, info = vec.step(
        jax.random.PRNGKey(1), state, jnp.zeros((2, 1), jnp.int32), params
    )
    np.testing.assert_array_equal(done, [True, False])
    np.testing.assert_array_equal(info["truncated"], [True, False])


def test_vec_env_rejects_bad_pool_settings(env):
    with pytest.raises(ConfigError, match="refresh_per_step=9"):
        VecEnv(env, num_envs=2, pool_size=4, refresh_per_step=9)
    with pytest.raises(ConfigError, match="num_envs=0"):
        VecEnv(env, num_envs=0)


def test_jaxmarl_adapter_speaks_dicts_and_restarts(env):
    adapter = JaxMARLAdapter(env)
    obs, state = adapter.reset(jax.random.PRNGKey(0))
    assert set(obs) == {"agent_0", "agent_1"}
    actions = {"agent_0": 1, "agent_1": 1}
    obs, state, reward, dones, info = adapter.step(jax.random.PRNGKey(1), state, actions)
    assert bool(dones["__all__"]) and set(dones) == {"agent_0", "agent_1", "__all__"}
    assert float(reward["agent_0"]) == 1.0
    assert float(obs["agent_0"][1]) == 0.0  # restarted
    # One value per agent in every info entry, as JaxMARL's scripts expect.
    np.testing.assert_array_equal(info["episode_length"], [1, 1])
    assert adapter.action_space("agent_0").n == 2
    assert set(adapter.get_avail_actions(state)) == {"agent_0", "agent_1"}


def test_make_names_the_known_environments_on_a_typo():
    with pytest.raises(ConfigError, match=r"unknown environment 'dinning'.*craft, dining"):
        alemlite.make("dinning")


def test_evaluation_is_the_same_whatever_the_batch_size():
    from alemlite.evaluation import evaluate

    env = ToyEnv(num_agents=2, max_steps=3)

    def random_policy(key, state, params):
        return jax.random.randint(key, (2,), 0, 2)

    whole = evaluate(env, random_policy, env.default_params, 5, base_seed=7, batch_size=5)
    padded = evaluate(env, random_policy, env.default_params, 5, base_seed=7, batch_size=2)
    assert len(padded["episode_return"]) == 5
    chex.assert_trees_all_equal(whole, padded)
