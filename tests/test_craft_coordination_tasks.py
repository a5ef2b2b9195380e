"""Sync and handover tasks on hand-built states (16x16, three agents, alpha 0.9)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from alemlite.envs.craft import constants as C
from alemlite.envs.craft.coordination import constants as L
from alemlite.envs.craft.world.observation import WINDOW_CHANNELS
from tests.craft_coordination_helpers import ENV, MANY_STEPS, OBSERVE, PARAMS, STEP, quiet_scene
from tests.craft_helpers import set_tiles

LEFT, RIGHT, UP, DOWN = range(4)
TREE = (5, 6)
NEEDS_TWO, NEEDS_ALL = 63, 0  # quorum rolls: k = 2, and k = P at alpha 0.9


def task_byte(kind: int, roll: int = NEEDS_TWO) -> int:
    return kind | (roll << L.TASK_KIND_BITS)


def scene(kind: int, roll: int = NEEDS_TWO, material: int = C.TREE):
    """Agent 0 left of the task tile, agent 1 right of it, agent 2 above it, all facing it."""
    state = quiet_scene([[5, 5], [5, 7], [4, 6]], facing=[RIGHT, LEFT, DOWN])
    state = set_tiles(state, {TREE: material})
    tile_task = jnp.zeros_like(state.coordination.tile_task).at[TREE].set(task_byte(kind, roll))
    return state.replace(coordination=state.coordination.replace(tile_task=tile_task))


def act(state, actions, key=0):
    _, state, reward, _, _ = STEP(jax.random.PRNGKey(key), state, jnp.array(actions), PARAMS)
    return state, np.asarray(reward)


def wood(state):
    return np.asarray(state.agents.inventory[:, C.INV_WOOD])


def coordination_unlocked(state, name):
    return np.asarray(state.coordination.achievements[:, L.COORDINATION_INDEX[name]])


def test_a_hard_sync_fails_alone_and_pays_k_k_plus_1_over_2_with_the_quorum():
    state = scene(L.TASK_HARD_SYNC)
    alone, _ = act(state, [C.DO, C.NOOP, C.NOOP])
    assert wood(alone).tolist() == [0, 0, 0]
    assert int(alone.coordination.failed_solo) == 1 and int(alone.coordination.syncs) == 0
    assert int(alone.coordination.tile_task[TREE]) == task_byte(L.TASK_HARD_SYNC)

    together, reward = act(state, [C.DO, C.DO, C.NOOP])
    assert wood(together).tolist() == [3, 3, 0]  # k = 2: 2 * 3 / 2 each
    assert int(together.coordination.syncs) == 1 and int(together.coordination.failed_solo) == 0
    assert int(together.coordination.tile_task[TREE]) == 0  # the task is done
    assert coordination_unlocked(together, "complete_sync").tolist() == [True, True, False]
    np.testing.assert_allclose(reward, [1.0 + 2.0, 1.0 + 2.0, 0.0])  # collect_wood + sync


def test_a_sync_needing_every_agent_fails_with_two_and_pays_six_with_three():
    state = scene(L.TASK_HARD_SYNC, NEEDS_ALL)
    two, _ = act(state, [C.DO, C.DO, C.NOOP])
    assert wood(two).tolist() == [0, 0, 0] and int(two.coordination.failed_solo) == 2
    three, _ = act(state, [C.DO, C.DO, C.DO])
    assert wood(three).tolist() == [6, 6, 6]


def test_a_soft_sync_alone_succeeds_with_probability_one_minus_alpha():
    state = scene(L.TASK_SOFT_SYNC)
    keys = jax.random.split(jax.random.PRNGKey(1), 1000)
    actions = jnp.array([C.DO, C.NOOP, C.NOOP])
    after = MANY_STEPS(keys, state, actions, PARAMS)[1]
    got = np.asarray(after.agents.inventory[:, 0, C.INV_WOOD])
    assert set(got.tolist()) <= {0, 1}
    assert 0.07 < got.mean() < 0.13  # 1 - alpha = 0.1; sd 0.0095 over 1000 draws
    assert np.all(np.asarray(after.coordination.failed_solo) == 1 - got)


def test_a_handover_finished_by_the_starter_does_not_count_by_another_it_does():
    state = scene(L.TASK_HANDOVER)
    state, _ = act(state, [C.DO, C.NOOP, C.NOOP])  # agent 0 starts it
    assert wood(state).tolist() == [0, 0, 0]
    assert np.asarray(state.coordination.task_starter).tolist().count(0) == 1
    state, _ = act(state, [C.DO, C.NOOP, C.NOOP])  # the starter again: nothing
    assert wood(state).tolist() == [0, 0, 0] and int(state.coordination.handovers) == 0
    state, reward = act(state, [C.NOOP, C.DO, C.NOOP])  # agent 1 finishes inside the window
    assert wood(state).tolist() == [L.HANDOVER_YIELD, L.HANDOVER_YIELD, 0]
    assert int(state.coordination.handovers) == 1
    assert np.all(np.asarray(state.coordination.task_starter) == -1)
    assert int(state.coordination.tile_task[TREE]) == 0
    assert coordination_unlocked(state, "complete_handover").tolist() == [True, True, False]
    np.testing.assert_allclose(reward, [3.0, 3.0, 0.0])  # collect_wood + handover, both


def test_a_handover_lapses_after_its_window():
    state, _ = act(scene(L.TASK_HANDOVER), [C.DO, C.NOOP, C.NOOP])
    window = int(state.coordination.task_timer.max())
    assert 3 <= window <= 6  # alpha 0.9: [max(3, ceil(1.2)), max(6, ceil(2.4))]
    for _ in range(window):
        state, _ = act(state, [C.NOOP] * 3)
    assert int(state.coordination.lapsed) == 1
    assert np.all(np.asarray(state.coordination.task_starter) == -1)
    state, _ = act(state, [C.NOOP, C.DO, C.NOOP])  # too late: this only starts a new one
    assert wood(state).tolist() == [0, 0, 0] and int(state.coordination.handovers) == 0
    assert np.asarray(state.coordination.task_starter).tolist().count(1) == 1


def test_the_last_step_of_the_window_still_counts():
    state, _ = act(scene(L.TASK_HANDOVER), [C.DO, C.NOOP, C.NOOP])
    for _ in range(int(state.coordination.task_timer.max()) - 1):
        state, _ = act(state, [C.NOOP] * 3)
    state, _ = act(state, [C.NOOP, C.DO, C.NOOP])
    assert int(state.coordination.handovers) == 1 and int(state.coordination.lapsed) == 0


def test_mining_a_task_stone_consumes_it_and_clears_the_task():
    state = scene(L.TASK_HARD_SYNC, material=C.STONE)
    inventory = state.agents.inventory.at[:, C.INV_WOOD_PICKAXE].set(1)
    # At alpha 0 every role check passes (agent 1 is no miner) and k = 2.
    coordination = state.coordination.replace(alpha=jnp.float32(0.0))
    state = state.replace(
        agents=state.agents.replace(inventory=inventory), coordination=coordination
    )
    after, _ = act(state, [C.NOOP, C.DO, C.DO])
    assert int(after.coordination.syncs) == 1
    assert int(after.map[TREE]) == C.PATH and int(after.coordination.tile_task[TREE]) == 0
    assert np.asarray(after.agents.inventory[:, C.INV_STONE]).tolist() == [0, 3, 3]


def test_the_window_shows_task_kind_quorum_and_time_left():
    state, _ = act(scene(L.TASK_HANDOVER), [C.DO, C.NOOP, C.NOOP])
    height, width = ENV.config.view_height, ENV.config.view_width
    channels = ENV.window_channels  # task channels follow the base ones
    view = np.asarray(OBSERVE(state, PARAMS))[0, : height * width * channels]
    view = view.reshape(height, width, channels)
    tile = view[height // 2, width // 2 + 1]
    assert tile[WINDOW_CHANNELS + L.TASK_HANDOVER - 1] == 1.0
    assert tile[WINDOW_CHANNELS + 4] == pytest.approx(int(state.coordination.task_timer.max()) / 24)
    sync = np.asarray(OBSERVE(scene(L.TASK_HARD_SYNC, NEEDS_ALL), PARAMS))[0]
    channels = ENV.window_channels
    tile = sync[: height * width * channels].reshape(height, width, channels)[3, 5]
    assert tile[WINDOW_CHANNELS + L.TASK_HARD_SYNC - 1] == 1.0
    assert tile[WINDOW_CHANNELS + 3] == pytest.approx(1.0)  # quorum 3 of 3
