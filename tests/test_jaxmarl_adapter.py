"""JaxMARL's `MultiAgentEnv` conventions on `JaxMARLAdapter` (no JaxMARL needed here).

Actions of shape `()` or `(1,)` per agent, infos with one value per agent, `reset_state`
as the fourth `step` argument, the spaces, name, observations, masks and world state
JaxMARL's tools read, and restarts from spare start states that are regenerated a few
per step for a vmapped batch (never a world per environment per step).
"""

from __future__ import annotations

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from alemlite.core import ConfigError, JaxMARLAdapter, LogWrapper
from tests.toy_env import ToyEnv

NUM_ENVS = 6


class CountingToyEnv(ToyEnv):
    """`ToyEnv` that records every start state it generates at run time (under jit and vmap)."""

    def __init__(self, generated: list, **kwargs):
        super().__init__(**kwargs)
        self.generated = generated

    def generate(self, key, params):
        # One call per generated state: a batched key calls back once per element.
        jax.debug.callback(lambda _: self.generated.append(1), key)
        return super().generate(key, params)


def all_act(adapter: JaxMARLAdapter, action: int, num_envs: int) -> dict[str, jax.Array]:
    """Actions as JaxMARL's `unbatchify` makes them: `(num_envs, 1)` per agent."""
    return {agent: jnp.full((num_envs, 1), action, jnp.int32) for agent in adapter.agents}


@pytest.fixture(scope="module")
def toy():
    return JaxMARLAdapter(LogWrapper(ToyEnv(num_agents=2, max_steps=3)), world_state=True)


@pytest.fixture(scope="module")
def batch_step(toy):
    return jax.jit(jax.vmap(toy.step))


def test_actions_of_shape_scalar_or_one_step_alike(toy):
    _, state = toy.reset(jax.random.PRNGKey(0))
    step = jax.jit(toy.step)
    scalar = step(jax.random.PRNGKey(1), state, {"agent_0": 1, "agent_1": jnp.int32(0)})
    single = step(jax.random.PRNGKey(1), state, {"agent_0": jnp.array([1]), "agent_1": [0]})
    chex.assert_trees_all_equal(scalar, single)
    assert float(scalar[2]["agent_0"]) == 1.0 and float(scalar[2]["agent_1"]) == 0.0


def test_infos_hold_one_value_per_agent_as_jaxmarl_scripts_reshape_them(toy, batch_step):
    keys = jax.random.split(jax.random.PRNGKey(0), NUM_ENVS)
    _, state = jax.vmap(toy.reset)(keys)
    for _ in range(3):  # the third step truncates every episode
        _, state, _, dones, info = batch_step(keys, state, all_act(toy, 0, NUM_ENVS))
    num_actors = NUM_ENVS * toy.num_agents
    # The line of JaxMARL's IPPO script, unmodified; nested infos (LogWrapper's metrics) too.
    per_actor = jax.tree.map(lambda x: x.reshape(num_actors), info)
    assert set(per_actor) >= {"terminated", "truncated", "episode_return", "episode_metrics"}
    assert np.asarray(per_actor["truncated"]).all()
    assert not np.asarray(per_actor["terminated"]).any()
    np.testing.assert_array_equal(per_actor["episode_length"], 3)
    np.testing.assert_array_equal(info["truncated"][:, 0], dones["__all__"])
    assert "final_observation" not in info


def test_the_fourth_argument_is_the_state_to_restart_to(toy, batch_step):
    keys = jax.random.split(jax.random.PRNGKey(0), NUM_ENVS)
    _, start = jax.vmap(toy.reset)(keys)
    _, other = jax.vmap(toy.reset)(jax.random.split(jax.random.PRNGKey(5), NUM_ENVS))
    step = jax.jit(jax.vmap(toy.step))
    # Env 0 ends at once (every agent plays 1); the others go on.
    actions = {agent: jnp.array([[1]] + [[0]] * (NUM_ENVS - 1)) for agent in toy.agents}
    obs, state, _, dones, _ = step(keys, start, actions, other)
    np.testing.assert_array_equal(dones["__all__"], [True] + [False] * (NUM_ENVS - 1))
    restarted = toy.get_obs(jax.tree.map(lambda leaf: leaf[0], other))
    np.testing.assert_array_equal(obs["agent_0"][0], restarted["agent_0"])
    np.testing.assert_array_equal(obs["agent_0"][1:, 1], 1.0)  # step 1 of the same episode
    restarted_offset = other.env_state.env_state.offset[0]
    np.testing.assert_array_equal(state.env_state.env_state.offset[0], restarted_offset)
    assert not np.asarray(state.spare_used).any()  # restarting to reset_state takes no spare


def test_the_interface_jaxmarl_tools_read(toy):
    obs, state = toy.reset(jax.random.PRNGKey(0))
    env = toy.env
    assert toy.name == "toy" and toy.agents == ["agent_0", "agent_1"] and toy.num_agents == 2
    assert set(toy.observation_spaces) == set(toy.action_spaces) == set(toy.agents)
    assert toy.observation_space("agent_0").shape == env.observation_shape
    assert toy.action_spaces["agent_1"].n == env.num_actions
    sample = jax.vmap(toy.action_space("agent_0").sample)
    samples = sample(jax.random.split(jax.random.PRNGKey(0), 64))
    assert samples.shape == (64,) and set(np.asarray(samples).tolist()) == {0, 1}
    chex.assert_trees_all_equal(toy.get_obs(state), obs)
    masks = toy.get_avail_actions(state)
    assert set(masks) == set(toy.agents) and masks["agent_0"].shape == (env.num_actions,)
    # The world state for centralised critics, as SMAX gives it: obs["world_state"], state_size.
    assert toy.state_size == 3 and obs["world_state"].shape == (3,)
    expected = env.global_state(state.env_state, env.default_params)
    np.testing.assert_array_equal(obs["world_state"], expected)
    np.testing.assert_array_equal(toy.get_world_state(state), expected)
    assert "world_state" not in JaxMARLAdapter(env).get_obs(state)
    with pytest.raises(ConfigError, match="refresh_per_step=0"):
        JaxMARLAdapter(env, refresh_per_step=0)


def test_a_batch_regenerates_only_the_spares_it_used_a_few_per_step():
    generated: list = []
    env = CountingToyEnv(generated, num_agents=2, max_steps=3)
    adapter = JaxMARLAdapter(env, refresh_per_step=2)
    keys = jax.random.split(jax.random.PRNGKey(0), NUM_ENVS)
    _, state = jax.jit(jax.vmap(adapter.reset))(keys)
    jax.effects_barrier()
    assert len(generated) == 2 * NUM_ENVS  # each episode and its spare
    step = jax.jit(jax.vmap(adapter.step))
    spares = state.spare.offset
    counts, restarts = [], []
    for t in range(7):
        generated.clear()
        keys = jax.random.split(jax.random.PRNGKey(t), NUM_ENVS)
        obs, state, _, dones, _ = step(keys, state, all_act(adapter, 0, NUM_ENVS))
        jax.effects_barrier()
        counts.append(len(generated))
        if bool(dones["__all__"].all()):
            restarts.append(np.asarray(state.env_state.offset))
            np.testing.assert_array_equal(state.env_state.offset, spares)  # each took its own spare
            np.testing.assert_array_equal(obs["agent_0"][:, 0], spares)
        spares = state.spare.offset
    # Every episode is truncated on steps 3 and 6; two used spares are regenerated per step,
    # the first environments' first, so after step 7 the last two still wait.
    assert counts == [0, 0, 2, 2, 2, 2, 2]
    assert len(restarts) == 2 and not np.array_equal(restarts[0], restarts[1])
    np.testing.assert_array_equal(state.spare_used, [False] * 4 + [True] * 2)


def test_one_environment_alone_regenerates_its_spare_when_it_ends():
    generated: list = []
    adapter = JaxMARLAdapter(CountingToyEnv(generated, num_agents=2, max_steps=2))
    _, state = adapter.reset(jax.random.PRNGKey(0))
    step = jax.jit(adapter.step)
    counts = []
    for t in range(4):
        generated.clear()
        _, state, _, _, _ = step(jax.random.PRNGKey(t), state, {"agent_0": 0, "agent_1": 0})
        jax.effects_barrier()
        counts.append(len(generated))
        assert not bool(state.spare_used)
    assert counts == [0, 1, 0, 1]


def test_seeds_vmapped_over_a_vmapped_batch_step_as_each_batch_alone():
    # JaxMARL's scripts vmap training over seeds around their vmap over environments.
    adapter = JaxMARLAdapter(ToyEnv(num_agents=2, max_steps=2), refresh_per_step=1)
    seeds = 3

    def rollout(key):
        keys = jax.random.split(key, NUM_ENVS)
        _, state = jax.vmap(adapter.reset)(keys)
        for t in range(5):
            actions = all_act(adapter, t % 2, NUM_ENVS)
            _, state, _, _, _ = jax.vmap(adapter.step)(keys + t, state, actions)
        return state

    keys = jax.random.split(jax.random.PRNGKey(3), seeds)
    together = jax.jit(jax.vmap(rollout))(keys)
    for seed in range(seeds):
        alone = jax.jit(rollout)(keys[seed])
        picked = jax.tree.map(lambda leaf, seed=seed: leaf[seed], together)
        chex.assert_trees_all_equal(picked, alone)
