"""Invariants over random rollouts, determinism, state size and auto-reset from the pool."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from alemlite.core import LogWrapper, VecEnv
from alemlite.envs.craft import constants as C
from alemlite.envs.craft import make_craft
from alemlite.envs.craft.world.mobs import MOB_WALKABLE

NUM_ENVS, NUM_STEPS = 8, 300
ENV = make_craft(map_size=24, num_agents=3)


def rollout(key):
    """Random legal actions in NUM_ENVS worlds; records what the invariants need."""
    params = ENV.default_params
    vec = VecEnv(ENV, NUM_ENVS)  # episodes where every agent dies restart
    _, state = vec.reset(key, params)

    def one_step(state, step_key):
        action_key, env_key = jax.random.split(step_key)
        mask = vec.action_mask(state, params)
        actions = jax.random.categorical(action_key, jnp.where(mask, 0.0, -jnp.inf))
        obs, state, reward, done, _ = vec.step(env_key, state, actions, params)
        env_state = state.env_state
        rows, cols = env_state.agents.position[..., 0], env_state.agents.position[..., 1]
        mob_rows, mob_cols = env_state.mobs.position[..., 0], env_state.mobs.position[..., 1]
        envs = jnp.arange(NUM_ENVS)[:, None]
        record = {
            "agents": env_state.agents,
            "mobs": env_state.mobs,
            "under_agents": env_state.map[envs, rows, cols],
            "under_mobs": env_state.map[envs, mob_rows, mob_cols],
            "reward": reward,
            "done": done,
            "obs_finite": jnp.all(jnp.isfinite(obs)),
        }
        return state, record

    _, records = jax.lax.scan(one_step, state, jax.random.split(key, NUM_STEPS))
    return records


@pytest.fixture(scope="module")
def compiled_rollout():
    return jax.jit(rollout)


@pytest.fixture(scope="module")
def records(compiled_rollout):
    return jax.device_get(compiled_rollout(jax.random.PRNGKey(7)))


def test_stats_and_inventory_stay_in_bounds(records):
    agents = records["agents"]
    assert agents.stats.min() >= 0 and agents.stats.max() <= C.STAT_MAX
    assert agents.inventory.min() >= 0 and agents.inventory.max() <= C.INVENTORY_MAX
    assert agents.downed_timer.min() >= 0
    assert np.all(np.isin(agents.status, [C.ALIVE, C.DOWNED, C.DEAD]))
    assert records["obs_finite"].all() and np.isfinite(records["reward"]).all()


def test_no_two_agents_share_a_tile_and_none_stands_in_a_block(records):
    agents = records["agents"]
    present = agents.status != C.DEAD
    position = agents.position
    same = np.all(position[:, :, :, None, :] == position[:, :, None, :, :], axis=-1)
    both = present[:, :, :, None] & present[:, :, None, :]
    off_diagonal = ~np.eye(ENV.num_agents, dtype=bool)
    assert not np.any(same & both & off_diagonal)
    assert np.all(C.WALKABLE[records["under_agents"]][present])
    # Sleeping, downed and dead agents never sleep at once with being down.
    assert not np.any(agents.sleeping & (agents.status != C.ALIVE))


def test_mobs_stand_on_their_materials_and_never_on_agents(records):
    mobs, agents = records["mobs"], records["agents"]
    kinds = ENV.config.mob_kinds()
    allowed = MOB_WALKABLE[kinds[None, None, :], records["under_mobs"]]
    assert np.all(allowed[mobs.alive])
    on_agent = np.all(mobs.position[:, :, :, None, :] == agents.position[:, :, None, :, :], -1)
    on_agent &= (agents.status != C.DEAD)[:, :, None, :] & mobs.alive[..., None]
    assert not on_agent.any()
    assert np.all(mobs.health[mobs.alive] > 0)


def test_achievements_never_get_lost_and_some_are_unlocked(records):
    unlocked = records["agents"].achievements
    lost = np.any(unlocked[:-1] & ~unlocked[1:], axis=(2, 3))
    assert not np.any(lost & ~records["done"][1:])  # only a reset clears them
    assert unlocked.any(axis=(0, 1, 2)).sum() >= 3


def test_deterministic_from_the_key(compiled_rollout, records):
    again = jax.device_get(compiled_rollout(jax.random.PRNGKey(7)))
    chex.assert_trees_all_equal(records, again)
    other = jax.device_get(compiled_rollout(jax.random.PRNGKey(8)))
    assert not np.array_equal(records["agents"].position, other["agents"].position)


def test_state_fits_in_16_kib_for_three_agents_on_48x48():
    env = make_craft(num_agents=3, map_size=48)
    shapes = jax.eval_shape(env.generate, jax.random.PRNGKey(0), env.default_params)
    nbytes = sum(np.prod(leaf.shape) * leaf.dtype.itemsize for leaf in jax.tree.leaves(shapes))
    assert nbytes <= 16 * 1024


def test_more_finished_than_refreshed_all_restart_from_valid_states():
    """max_steps=1 ends every episode on every step: 8 finish, the pool refreshes 1."""
    env = LogWrapper(make_craft(map_size=16, num_agents=2, max_steps=1))
    params = env.default_params
    vec = VecEnv(env, num_envs=8, pool_size=3, refresh_per_step=1)
    obs, state = jax.jit(vec.reset)(jax.random.PRNGKey(0), params)
    step, observe = jax.jit(vec.step), jax.jit(vec.observe)
    for index in range(4):
        actions = jnp.full((8, 2), C.MOVE_RIGHT, jnp.int32)
        obs, state, _, done, info = step(jax.random.PRNGKey(index), state, actions, params)
        assert bool(done.all()) and bool(info["truncated"].all())
        restarted = jax.device_get(state.env_state.env_state)
        assert np.all(restarted.step == 0)
        assert np.all(restarted.agents.stats == C.STAT_MAX)
        assert np.all(restarted.agents.status == C.ALIVE)
        assert not restarted.agents.achievements.any() and not restarted.agents.inventory.any()
        envs = np.arange(8)[:, None]
        rows, cols = restarted.agents.position[..., 0], restarted.agents.position[..., 1]
        assert np.all(restarted.map[envs, rows, cols] == C.GRASS)
        assert np.all(
            np.any(restarted.agents.position[:, 0] != restarted.agents.position[:, 1], -1)
        )
        np.testing.assert_allclose(obs, observe(state, params))
        assert np.all(np.asarray(state.env_state.episode_length) == 0)
        # The episode that just ended moved right once: its final observation differs.
        assert not np.allclose(info["final_observation"], obs)
