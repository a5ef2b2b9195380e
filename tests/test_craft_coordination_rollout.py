"""The coordination layer over rollouts: invariants, metrics and the scripted team."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from alemlite.envs.craft import constants as C
from alemlite.envs.craft import make_craft
from alemlite.envs.craft.policies import team_policy

NUM_ENVS, NUM_STEPS = 8, 300
ENV = make_craft(map_size=24, num_agents=3, difficulty="sampled")


@pytest.fixture(scope="module")
def records():
    """The scripted team in NUM_ENVS worlds (no auto-reset: one episode each)."""
    params = ENV.default_params
    policy = team_policy(ENV)

    def run(key):
        _, state = jax.vmap(ENV.reset, in_axes=(0, None))(jax.random.split(key, NUM_ENVS), params)

        def one_step(state, step_key):
            policy_keys, env_keys = jnp.split(jax.random.split(step_key, 2 * NUM_ENVS), 2)
            actions = jax.vmap(policy, in_axes=(0, 0, None))(policy_keys, state, params)
            mask = jax.vmap(ENV.action_mask, in_axes=(0, None))(state, params)
            legal = jnp.take_along_axis(mask, actions[..., None], -1)[..., 0]
            _, state, reward, _, _ = jax.vmap(ENV.step, in_axes=(0, 0, 0, None))(
                env_keys, state, actions, params
            )
            return state, {"coordination": state.coordination, "agents": state.agents,
                           "mobs": state.mobs, "reward": reward, "legal": legal}  # fmt: skip

        state, trace = jax.lax.scan(one_step, state, jax.random.split(key, NUM_STEPS))
        metrics = jax.vmap(ENV.episode_metrics, in_axes=(0, None))(state, params)
        return trace, metrics

    return jax.device_get(jax.jit(run)(jax.random.PRNGKey(0)))


def test_tables_and_counters_stay_in_range(records):
    trace, _ = records
    coordination, agents = trace["coordination"], trace["agents"]
    assert agents.inventory.min() >= 0 and agents.inventory.max() <= C.INVENTORY_MAX
    assert agents.stats.min() >= 0 and agents.stats.max() <= C.STAT_MAX
    assert coordination.task_starter.min() >= -1 and coordination.task_starter.max() < 3
    assert coordination.task_timer.min() >= 0
    assert np.all(coordination.task_timer[coordination.task_starter < 0] == 0)
    assert np.all((coordination.request_item >= -1) & (coordination.request_item < 8))
    for name in ("syncs", "handovers", "lapsed", "failed_solo", "gives", "revives"):
        counts = getattr(coordination, name)
        assert np.all(np.diff(counts, axis=0) >= 0)
    sites = coordination.sites
    assert np.all(np.diff(sites.building, axis=0)[sites.building[:-1] >= 0] == 0)  # they stay
    assert np.all(sites.timer[sites.starter < 0] == 0) and sites.timer.max() <= 24
    assert np.all(trace["mobs"].health[trace["mobs"].alive] > 0)
    assert np.isfinite(trace["reward"]).all()


def test_the_team_completes_tasks_and_takes_only_legal_actions(records):
    trace, metrics = records
    assert trace["legal"].all()
    assert metrics["coordination/task_completions"].sum() >= 3
    assert metrics["achievement/complete_sync"].any()
    alpha = metrics["alpha"]
    assert alpha.min() >= 0.2 and alpha.max() <= 0.85 and np.unique(alpha).size == NUM_ENVS
    expected = {
        "coordination_achievement_percent",
        "coordination/failed_solo",
        "coordination/lapsed",
        "coordination/gives",
        "coordination/revives",
        "construction/shelters",
        "construction/diamond_swords",
        "normalised_return",
        "team_achievement_percent",
    }
    assert expected <= set(metrics)
    assert np.all((metrics["normalised_return"] >= 0) & (metrics["normalised_return"] <= 100))
