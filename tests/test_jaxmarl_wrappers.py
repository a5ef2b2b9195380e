"""JaxMARL's own wrappers (its PyPI package) over `JaxMARLAdapter`, on dining and a tiny Craft.

`CTRolloutManager(LogWrapper(adapter))` as JaxMARL's Q-learning baselines stack them,
unmodified: a batch of environments stepped with legal random actions (masks from
`get_avail_actions`) through episode ends, its per-agent observations (padded, with agent
ids), global state and reward, and the returns and lengths `LogWrapper` reports.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import alemlite
from alemlite.core import JaxMARLAdapter

baselines = pytest.importorskip(
    "jaxmarl.wrappers.baselines",
    reason="JaxMARL is not installed (pip install 'jaxmarl>=0.2'); its wrappers are tested here",
)

NUM_ENVS, NUM_STEPS, MAX_STEPS = 4, 9, 4


@pytest.fixture(scope="module", params=["dining", "craft"])
def rollout(request):
    spec = alemlite.spec(request.param)
    options = dataclasses.replace(spec.options(**spec.small_options), max_steps=MAX_STEPS)
    adapter = JaxMARLAdapter(spec.build(options))
    manager = baselines.CTRolloutManager(baselines.LogWrapper(adapter), batch_size=NUM_ENVS)

    def run(key):
        obs, state = manager.batch_reset(key)

        def one_step(carry, step_key):
            obs, state = carry
            action_key, env_key = jax.random.split(step_key)
            masks = jax.vmap(adapter.get_avail_actions)(state.env_state)
            keys = dict(
                zip(adapter.agents, jax.random.split(action_key, adapter.num_agents), strict=True)
            )
            actions = {
                agent: jax.random.categorical(keys[agent], jnp.where(masks[agent], 0.0, -jnp.inf))
                for agent in adapter.agents
            }
            next_obs, state, reward, done, info = manager.batch_step(env_key, state, actions)
            record = {"obs": obs, "actions": actions, "masks": masks, "reward": reward}
            return (next_obs, state), record | {"done": done, "info": info, "next_obs": next_obs}

        keys = jax.random.split(key, NUM_STEPS)
        return jax.lax.scan(one_step, (obs, state), keys)[1]

    records = jax.device_get(jax.jit(run)(jax.random.PRNGKey(0)))
    return adapter, manager, records


def test_the_manager_pads_ids_and_sums_for_the_centralised_learner(rollout):
    adapter, manager, records = rollout
    obs_size = adapter.observation_space("agent_0").shape[0]
    assert manager.obs_size == obs_size + adapter.num_agents
    for index, agent in enumerate(adapter.agents):
        obs = records["obs"][agent]
        assert obs.shape == (NUM_STEPS, NUM_ENVS, obs_size + adapter.num_agents)
        np.testing.assert_array_equal(
            obs[0, :, obs_size:], np.eye(adapter.num_agents)[[index] * NUM_ENVS]
        )
        # JaxMARL's manager zeroes the observation of an agent that is done.
        assert not records["next_obs"][agent][records["done"][agent]].any()
    stacked = np.stack([records["reward"][agent] for agent in adapter.agents])
    np.testing.assert_allclose(records["reward"]["__all__"], stacked.sum(0), rtol=1e-6)
    assert records["obs"]["__all__"].shape == (NUM_STEPS, NUM_ENVS, adapter.num_agents * obs_size)
    samples = manager.batch_sample(jax.random.PRNGKey(1), "agent_0")
    assert (
        samples.shape == (NUM_ENVS,)
        and 0 <= samples.min() <= samples.max() < adapter.env.num_actions
    )


def test_actions_follow_the_masks_and_episodes_end_and_restart(rollout):
    adapter, _, records = rollout
    for agent in adapter.agents:
        chosen = np.take_along_axis(
            records["masks"][agent], records["actions"][agent][..., None], -1
        )
        assert chosen.all()
    done = records["done"]["__all__"]
    # Every episode ends by the time limit (dining's may end sooner, in a deadlock).
    assert done[:MAX_STEPS].any(axis=0).all() and done.sum() >= 2 * NUM_ENVS
    for agent in adapter.agents:
        np.testing.assert_array_equal(records["done"][agent], done)


def test_log_wrapper_reports_each_finished_episode_return_and_length(rollout):
    adapter, _, records = rollout
    rewards = np.stack([records["reward"][agent] for agent in adapter.agents], -1)  # (T, B, A)
    done = records["done"]["__all__"]
    info = records["info"]
    np.testing.assert_array_equal(
        info["returned_episode"], np.repeat(done[..., None], adapter.num_agents, -1)
    )
    running, length = np.zeros(rewards.shape[1:]), np.zeros(NUM_ENVS)
    finished = 0
    for t in range(NUM_STEPS):
        running, length = running + rewards[t], length + 1
        for env in np.flatnonzero(done[t]):
            np.testing.assert_allclose(
                info["returned_episode_returns"][t, env], running[env], rtol=1e-5
            )
            np.testing.assert_array_equal(info["returned_episode_lengths"][t, env], length[env])
            finished += 1
        running[done[t]], length[done[t]] = 0.0, 0
    assert finished == done.sum() > 0
    # alemlite's own infos ride along, one value per agent.
    assert info["truncated"].shape == (NUM_STEPS, NUM_ENVS, adapter.num_agents)
