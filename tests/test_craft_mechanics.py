"""Each Craft mechanic on a small hand-built state (16x16, two agents, no spawning)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from alemlite.envs.craft import constants as C
from alemlite.envs.craft import make_craft
from tests.craft_helpers import blank_state, place_mob, quiet_params, set_inventory, set_tiles

LEFT, RIGHT, UP, DOWN = range(4)
ENV = make_craft(map_size=16, num_agents=2, revive_window=3, coordination=False)
PARAMS = quiet_params(ENV)
STEP = jax.jit(ENV.step)
MASK = jax.jit(ENV.action_mask)
ZOMBIE_SLOT = 0
COW_SLOT = ENV.config.zombie_slots + ENV.config.skeleton_slots


def act(state, first, second=C.NOOP, key=0):
    _, state, reward, _, _ = STEP(
        jax.random.PRNGKey(key), state, jnp.array([first, second]), PARAMS
    )
    return state, np.asarray(reward)


def item(state, agent, name):
    return int(state.agents.inventory[agent, C.INVENTORY.index(name)])


def unlocked(state, agent, name):
    return bool(state.agents.achievements[agent, C.ACHIEVEMENT_INDEX[name]])


@pytest.fixture
def pair():
    """Agent 0 at (5, 5) facing right at (5, 6); agent 1 far away at (10, 10)."""
    return blank_state(ENV, [[5, 5], [10, 10]], facing=[RIGHT, DOWN])


def test_facing_a_tree_gives_wood_and_the_tree_stays(pair):
    state = set_tiles(pair, {(5, 6): C.TREE})
    state, reward = act(state, C.DO)
    assert item(state, 0, "wood") == 1
    assert int(state.map[5, 6]) == C.TREE
    assert unlocked(state, 0, "collect_wood") and reward[0] == pytest.approx(1.0)
    state, reward = act(state, C.DO)
    assert item(state, 0, "wood") == 2 and reward[0] == pytest.approx(0.0)


def test_stone_needs_a_wood_pickaxe_and_leaves_path(pair):
    state = set_tiles(pair, {(5, 6): C.STONE})
    state, _ = act(state, C.DO)
    assert item(state, 0, "stone") == 0 and int(state.map[5, 6]) == C.STONE
    state = set_inventory(state, 0, wood_pickaxe=1)
    state, _ = act(state, C.DO)
    assert item(state, 0, "stone") == 1 and int(state.map[5, 6]) == C.PATH


def test_iron_needs_a_stone_pickaxe_and_diamond_an_iron_pickaxe(pair):
    state = set_inventory(set_tiles(pair, {(5, 6): C.IRON}), 0, wood_pickaxe=1)
    state, _ = act(state, C.DO)
    assert item(state, 0, "iron") == 0
    state, _ = act(set_inventory(state, 0, stone_pickaxe=1), C.DO)
    assert item(state, 0, "iron") == 1
    state = set_tiles(state, {(5, 6): C.DIAMOND})
    state, _ = act(state, C.DO)
    assert item(state, 0, "diamond") == 0
    state, _ = act(set_inventory(state, 0, iron_pickaxe=1), C.DO)
    assert item(state, 0, "diamond") == 1


def test_iron_pickaxe_needs_a_table_and_a_furnace_nearby(pair):
    state = set_inventory(pair, 0, wood=3, coal=2, iron=2)
    state, _ = act(state, C.MAKE_IRON_PICKAXE)
    assert item(state, 0, "iron_pickaxe") == 0
    state, _ = act(set_tiles(state, {(4, 5): C.TABLE}), C.MAKE_IRON_PICKAXE)
    assert item(state, 0, "iron_pickaxe") == 0
    state = set_tiles(state, {(6, 4): C.FURNACE})
    assert bool(MASK(state, PARAMS)[0, C.MAKE_IRON_PICKAXE])
    state, reward = act(state, C.MAKE_IRON_PICKAXE)
    assert item(state, 0, "iron_pickaxe") == 1
    assert (item(state, 0, "wood"), item(state, 0, "coal"), item(state, 0, "iron")) == (2, 1, 1)
    assert unlocked(state, 0, "make_iron_pickaxe") and reward[0] == pytest.approx(1.0)


def test_placing_a_table_then_a_furnace_next_to_it(pair):
    state = set_inventory(pair, 0, wood=1, stone=1)
    state, _ = act(state, C.PLACE_FURNACE)  # no table nearby yet
    assert int(state.map[5, 6]) == C.GRASS and item(state, 0, "stone") == 1
    state, _ = act(state, C.PLACE_TABLE)
    assert int(state.map[5, 6]) == C.TABLE and item(state, 0, "wood") == 0
    state, _ = act(state, C.MOVE_UP)  # turn and step up to (4, 5): the table is diagonal
    state, _ = act(state, C.PLACE_FURNACE)
    assert int(state.map[3, 5]) == C.FURNACE and item(state, 0, "stone") == 0
    assert unlocked(state, 0, "place_table") and unlocked(state, 0, "place_furnace")


def test_place_stone_bridges_water_but_not_onto_a_teammate(pair):
    state = set_inventory(set_tiles(pair, {(5, 6): C.WATER}), 0, stone=2)
    state, _ = act(state, C.PLACE_STONE)
    assert int(state.map[5, 6]) == C.STONE and item(state, 0, "stone") == 1
    state = blank_state(ENV, [[5, 5], [5, 6]], facing=[RIGHT, DOWN])
    state = set_inventory(state, 0, stone=1)
    assert not bool(MASK(state, PARAMS)[0, C.PLACE_STONE])
    state, _ = act(state, C.PLACE_STONE)
    assert item(state, 0, "stone") == 1


def test_water_gives_drink_and_resets_thirst(pair):
    state = set_tiles(pair, {(5, 6): C.WATER})
    stats = state.agents.stats.at[0, C.DRINK].set(3)
    counters = state.agents.counters.at[0, C.THIRST].set(17)
    state = state.replace(agents=state.agents.replace(stats=stats, counters=counters))
    state, _ = act(state, C.DO)
    assert int(state.agents.stats[0, C.DRINK]) == 4
    assert int(state.agents.counters[0, C.THIRST]) == C.HALF  # reset, then one awake step
    assert unlocked(state, 0, "collect_drink")


def test_sapling_ripens_and_is_eaten(pair):
    state = set_inventory(pair, 0, sapling=1)
    state, _ = act(state, C.PLACE_PLANT)
    assert int(state.map[5, 6]) == C.SAPLING and bool(state.plants.alive.any())
    state, _ = act(state, C.DO)  # an unripe plant gives nothing
    assert not unlocked(state, 0, "eat_plant")
    slot = int(np.argmax(np.asarray(state.plants.alive)))
    state = state.replace(plants=state.plants.replace(grown=state.plants.grown.at[slot].set(300)))
    state, _ = act(state, C.NOOP)
    assert int(state.map[5, 6]) == C.RIPE_PLANT
    food = state.agents.stats.at[0, C.FOOD].set(2)
    state = state.replace(agents=state.agents.replace(stats=food))
    state, _ = act(state, C.DO)
    assert int(state.agents.stats[0, C.FOOD]) == 6 and unlocked(state, 0, "eat_plant")
    assert int(state.map[5, 6]) == C.SAPLING


def test_a_zombie_next_to_a_plant_eats_it(pair):
    state = set_inventory(pair, 0, sapling=1)
    state, _ = act(state, C.PLACE_PLANT)  # a plant at (5, 6)
    # A zombie boxed in by stone at (7, 6), two tiles below the plant: harmless.
    walls = {(8, 6): C.STONE, (7, 5): C.STONE, (7, 7): C.STONE}
    state = place_mob(set_tiles(state, walls), ZOMBIE_SLOT, [7, 6])
    state = set_tiles(state, {(6, 6): C.STONE})
    state, _ = act(state, C.NOOP)
    assert bool(state.plants.alive.any()) and int(state.map[5, 6]) == C.SAPLING
    # Open the way: the zombie may step next to the plant; once there, the plant is gone.
    state = place_mob(state, ZOMBIE_SLOT, [6, 6])
    state = set_tiles(state, {(6, 6): C.GRASS, (6, 5): C.STONE, (6, 7): C.STONE, (7, 6): C.STONE})
    state, _ = act(state, C.NOOP)
    assert not bool(state.plants.alive.any())
    assert int(state.map[5, 6]) == C.GRASS


def test_a_zombie_hit_on_a_sleeping_agent_does_seven(pair):
    # The zombie is boxed in by stone next to agent 0, so it stays and attacks.
    walls = {(4, 6): C.STONE, (6, 6): C.STONE, (5, 7): C.STONE}
    state = place_mob(set_tiles(pair, walls), ZOMBIE_SLOT, [5, 6])
    energy = state.agents.stats.at[0, C.ENERGY].set(3)
    state = state.replace(agents=state.agents.replace(stats=energy))
    state, _ = act(state, C.SLEEP)
    # It fell asleep this step and was hit at once, which wakes it; check the damage.
    assert int(state.agents.stats[0, C.HEALTH]) == 9 - C.ZOMBIE_SLEEP_DAMAGE
    assert not bool(state.agents.sleeping[0])
    cooldown = int(state.mobs.cooldown[ZOMBIE_SLOT])
    assert cooldown == C.ZOMBIE_COOLDOWN
    state, _ = act(state, C.NOOP)  # cooling down: no damage
    assert int(state.agents.stats[0, C.HEALTH]) == 9 - C.ZOMBIE_SLEEP_DAMAGE


def test_an_awake_agent_takes_two_and_reward_counts_health(pair):
    walls = {(4, 6): C.STONE, (6, 6): C.STONE, (5, 7): C.STONE}
    state = place_mob(set_tiles(pair, walls), ZOMBIE_SLOT, [5, 6])
    state, reward = act(state, C.NOOP)
    assert int(state.agents.stats[0, C.HEALTH]) == 9 - C.ZOMBIE_DAMAGE
    assert reward[0] == pytest.approx(-0.2)


def test_two_agents_hitting_one_cow_add_damage_and_both_eat():
    state = blank_state(ENV, [[5, 5], [5, 7]], facing=[RIGHT, LEFT])
    walls = {(4, 6): C.STONE, (6, 6): C.STONE}
    state = place_mob(set_tiles(state, walls), COW_SLOT, [5, 6], health=3)
    state = set_inventory(state, 1, wood_sword=1)  # 1 + 2 damage kills the cow (3)
    food = state.agents.stats.at[:, C.FOOD].set(1)
    state = state.replace(agents=state.agents.replace(stats=food))
    state, reward = act(state, C.DO, C.DO)
    np.testing.assert_allclose(reward, [1.0, 1.0])  # eat_cow for both
    assert not bool(state.mobs.alive[COW_SLOT])
    np.testing.assert_array_equal(np.asarray(state.agents.stats[:, C.FOOD]), [7, 7])
    assert unlocked(state, 0, "eat_cow") and unlocked(state, 1, "eat_cow")


def test_two_agents_stepping_into_one_tile_lower_index_wins():
    state = blank_state(ENV, [[5, 5], [5, 7]])
    state, _ = act(state, C.MOVE_RIGHT, C.MOVE_LEFT)
    np.testing.assert_array_equal(np.asarray(state.agents.position), [[5, 6], [5, 7]])
    np.testing.assert_array_equal(np.asarray(state.agents.facing), [RIGHT, LEFT])


def test_an_agent_cannot_enter_a_teammate_or_a_solid_tile():
    state = set_tiles(blank_state(ENV, [[5, 5], [5, 6]]), {(4, 5): C.STONE, (6, 5): C.WATER})
    for action in (C.MOVE_RIGHT, C.MOVE_UP, C.MOVE_DOWN):
        state, _ = act(state, action)
        np.testing.assert_array_equal(np.asarray(state.agents.position[0]), [5, 5])


def test_walking_into_lava_kills(pair):
    state = set_tiles(pair, {(5, 6): C.LAVA})
    state, reward = act(state, C.MOVE_RIGHT)
    assert int(state.agents.status[0]) == C.DEAD
    assert int(state.agents.stats[0, C.HEALTH]) == 0
    assert reward[0] == pytest.approx(-0.9)


def test_a_downed_agent_is_revived_by_a_teammate_and_dies_after_the_window():
    start = blank_state(ENV, [[5, 5], [5, 6]], facing=[RIGHT, DOWN])
    health = start.agents.stats.at[1, C.HEALTH].set(0)
    start = start.replace(agents=start.agents.replace(stats=health))
    state, _ = act(start, C.NOOP)
    assert int(state.agents.status[1]) == C.DOWNED
    assert not bool(MASK(state, PARAMS)[1, C.DO])  # a downed agent can only noop
    state, reward = act(state, C.DO)
    assert int(state.agents.status[1]) == C.ALIVE
    assert int(state.agents.stats[1, C.HEALTH]) == 1 and reward[1] == pytest.approx(0.1)

    state, _ = act(start, C.NOOP)
    for _ in range(ENV.config.revive_window - 1):
        state, _ = act(state, C.NOOP)
        assert int(state.agents.status[1]) == C.DOWNED
    state, _ = act(state, C.NOOP)
    assert int(state.agents.status[1]) == C.DEAD
    state, _ = act(state, C.DO)  # too late
    assert int(state.agents.status[1]) == C.DEAD


def test_all_dead_terminates_and_max_steps_truncates(pair):
    dead = pair.replace(agents=pair.agents.replace(status=jnp.full((2,), C.DEAD)))
    _, _, _, done, info = STEP(jax.random.PRNGKey(0), dead, jnp.zeros(2, jnp.int32), PARAMS)
    assert bool(done) and bool(info["terminated"]) and not bool(info["truncated"])
    late = pair.replace(step=jnp.int32(PARAMS.max_steps - 1))
    _, _, _, done, info = STEP(jax.random.PRNGKey(0), late, jnp.zeros(2, jnp.int32), PARAMS)
    assert bool(done) and bool(info["truncated"]) and not bool(info["terminated"])


def test_sleeping_restores_energy_and_wakes_up_rested(pair):
    energy = pair.agents.stats.at[0, C.ENERGY].set(8)
    state = pair.replace(agents=pair.agents.replace(stats=energy))
    state, _ = act(state, C.SLEEP)
    assert bool(state.agents.sleeping[0])
    for _ in range(10):  # fatigue drops by 1 per step, energy + 1 below -10 (11 steps)
        state, _ = act(state, C.MOVE_UP)  # ignored while asleep
    np.testing.assert_array_equal(np.asarray(state.agents.position[0]), [5, 5])
    assert int(state.agents.stats[0, C.ENERGY]) == 9 and bool(state.agents.sleeping[0])
    state, reward = act(state, C.NOOP)
    assert not bool(state.agents.sleeping[0]) and unlocked(state, 0, "wake_up")
    assert reward[0] == pytest.approx(1.0)


def test_shared_reward_gives_every_agent_the_team_mean(pair):
    state = set_tiles(pair, {(5, 6): C.TREE})
    _, _, reward, _, _ = STEP(
        jax.random.PRNGKey(0),
        state,
        jnp.array([C.DO, C.NOOP]),
        PARAMS.replace(shared_reward=jnp.bool_(True)),
    )
    np.testing.assert_allclose(np.asarray(reward), [0.5, 0.5])
