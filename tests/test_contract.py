"""The contract every registered environment keeps (an "env is not a smoke" test).

Each environment runs once through reset, a short random rollout under jit and
vmap, every wrapper, and the checks below. Small configs keep compiles cheap.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import alemlite
from alemlite.core import JaxMARLAdapter, LogWrapper, VecEnv

SMALL_CONFIGS = {
    "dining": {"num_philosophers": 3, "max_steps": 6},
    "craft": {"map_size": 16, "num_agents": 2, "max_steps": 6},
}
NUM_ENVS, NUM_STEPS = 4, 8


def test_every_registered_environment_has_a_small_config():
    assert set(SMALL_CONFIGS) == set(alemlite.registered_environments())


@pytest.fixture(scope="module", params=sorted(SMALL_CONFIGS))
def rollout(request):
    """A jitted, vmapped rollout with random legal actions, run twice from one key."""
    env = LogWrapper(alemlite.make(request.param, **SMALL_CONFIGS[request.param]))
    vec = VecEnv(env, num_envs=NUM_ENVS)
    params = env.default_params

    def run(key):
        obs, state = vec.reset(key, params)

        def one_step(carry, step_key):
            obs, state = carry
            action_key, env_key = jax.random.split(step_key)
            mask = vec.action_mask(state, params)
            actions = jax.random.categorical(action_key, jnp.where(mask, 0.0, -jnp.inf))
            obs, state, reward, done, info = vec.step(env_key, state, actions, params)
            record = {
                "obs": obs,
                "mask": mask,
                "actions": actions,
                "reward": reward,
                "done": done,
                "terminated": info["terminated"],
                "truncated": info["truncated"],
                "global_state": vec.global_state(state, params),
                "metrics": info["episode_metrics"],
            }
            return (obs, state), record

        keys = jax.random.split(key, NUM_STEPS)
        (_, state), records = jax.lax.scan(one_step, (obs, state), keys)
        return obs, records

    compiled = jax.jit(run)
    first = jax.device_get(compiled(jax.random.PRNGKey(0)))
    again = jax.device_get(compiled(jax.random.PRNGKey(0)))
    other = jax.device_get(compiled(jax.random.PRNGKey(1)))
    return env, first, again, other


def test_shapes_and_dtypes(rollout):
    env, (obs, records), _, _ = rollout
    agents = env.num_agents
    assert obs.shape == (NUM_ENVS, agents, *env.observation_shape) and obs.dtype == np.float32
    assert records["reward"].shape == (NUM_STEPS, NUM_ENVS, agents)
    assert records["reward"].dtype == np.float32
    assert records["mask"].shape == (NUM_STEPS, NUM_ENVS, agents, env.num_actions)
    assert records["mask"].dtype == bool
    assert records["global_state"].shape == (NUM_STEPS, NUM_ENVS, *env.global_state_shape)
    for flag in ("done", "terminated", "truncated"):
        assert records[flag].shape == (NUM_STEPS, NUM_ENVS) and records[flag].dtype == bool
    assert len(env.action_names) == env.num_actions == len(set(env.action_names))


def test_masks_allow_an_action_and_sampled_actions_are_legal(rollout):
    _, (_, records), _, _ = rollout
    assert records["mask"].any(axis=-1).all()
    chosen = np.take_along_axis(records["mask"], records["actions"][..., None], axis=-1)
    assert chosen.all()


def test_done_is_terminated_or_truncated_never_both(rollout):
    _, (_, records), _, _ = rollout
    np.testing.assert_array_equal(records["done"], records["terminated"] | records["truncated"])
    assert not (records["terminated"] & records["truncated"]).any()
    # The small configs truncate within the rollout, so auto-reset is exercised.
    assert records["done"].any()


def test_values_are_finite(rollout):
    _, (obs, records), _, _ = rollout
    for name in ("obs", "reward", "global_state"):
        assert np.isfinite(records[name]).all(), name
    assert np.isfinite(obs).all()
    for name, values in records["metrics"].items():
        assert np.isfinite(np.asarray(values, dtype=np.float64)).all(), name


def test_deterministic_from_the_key(rollout):
    _, first, again, other = rollout
    jax.tree.map(np.testing.assert_array_equal, first, again)
    leaves_first = jax.tree.leaves(first)
    leaves_other = jax.tree.leaves(other)
    assert any(not np.array_equal(a, b) for a, b in zip(leaves_first, leaves_other, strict=True))


def test_jaxmarl_adapter_round_trip(rollout):
    env = rollout[0].inner
    adapter = JaxMARLAdapter(env)
    obs, state = adapter.reset(jax.random.PRNGKey(0))
    actions = {agent: jnp.int32(0) for agent in adapter.agents}
    obs, state, reward, dones, _ = jax.jit(adapter.step)(jax.random.PRNGKey(1), state, actions)
    assert set(obs) == set(reward) == set(adapter.agents)
    assert "__all__" in dones
