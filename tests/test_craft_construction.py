"""Construction sites, buildings, diamond swords and forager capacity (16x16, alpha 0.9)."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from alemlite.envs.craft import constants as C
from alemlite.envs.craft import make_craft
from alemlite.envs.craft.coordination import constants as L
from alemlite.envs.craft.coordination import construction
from alemlite.envs.craft.world import mobs as mob_rules
from alemlite.envs.craft.world import rendering
from alemlite.envs.craft.world.rendering import TILE
from tests.craft_coordination_helpers import ENV, MASK, OBSERVE, PARAMS, STEP, quiet_scene
from tests.craft_helpers import generated_world, place_mob, set_inventory, set_tiles

LEFT, RIGHT, UP, DOWN = range(4)
SITE = (5, 6)
NEEDS_TWO, NEEDS_ALL = 63, 0  # quorum rolls: k = 2, and k = P at alpha 0.9
FIRST = construction.first_build(ENV.config)
SHELTER, FORGE, BEACON, SWORD = FIRST, FIRST + 1, FIRST + 2, FIRST + 3
SHELTER_SHARE = {"wood": 1, "stone": 1}
FORGE_SHARE = {"stone": 1, "iron": 1, "coal": 1}
SWORD_SHARE = {"wood": 1, "diamond": 1}


def with_sites(state, sites):
    """Sites `[(position, task byte, building)]` in the first slots, the rest empty."""
    table = state.coordination.sites
    slots = ENV.config.site_slots
    position = np.zeros((slots, 2), np.int16)
    task = np.zeros((slots,), np.uint8)
    building = np.full((slots,), -1, np.int8)
    world = state.map
    for slot, (where, byte, built) in enumerate(sites):
        position[slot], task[slot], building[slot] = where, byte, built
        material = L.SITE if built < 0 else int(L.BUILDING_MATERIAL[built])
        world = world.at[tuple(where)].set(material)
    table = table.replace(
        position=jnp.asarray(position),
        task=jnp.asarray(task),
        building=jnp.asarray(building),
        starter=jnp.full_like(table.starter, -1),
        pending=jnp.full_like(table.pending, -1),
        timer=jnp.zeros_like(table.timer),
    )
    return state.replace(map=world, coordination=state.coordination.replace(sites=table))


def site_scene(kind: int, roll: int = NEEDS_TWO, **share):
    """Agent 0 left of the site, agent 1 right of it, agent 2 above it, all facing it,
    each holding `share`."""
    state = quiet_scene([[5, 5], [5, 7], [4, 6]], facing=[RIGHT, LEFT, DOWN])
    state = with_sites(state, [(SITE, kind | (roll << L.TASK_KIND_BITS), -1)])
    for agent in range(3):
        state = set_inventory(state, agent, **share)
    return state


def act(state, actions, key=0, params=PARAMS):
    _, state, reward, _, _ = STEP(jax.random.PRNGKey(key), state, jnp.array(actions), params)
    return state, np.asarray(reward)


def items(state, name):
    return np.asarray(state.agents.inventory[:, C.INVENTORY.index(name)]).tolist()


def unlocked(state, name):
    return np.asarray(state.coordination.achievements[:, L.COORDINATION_INDEX[name]]).tolist()


def test_the_construction_actions_come_last_and_off_leaves_the_base_world():
    assert ENV.action_names[FIRST:] == L.BUILD_ACTIONS
    assert len(ENV.action_names) == ENV.num_actions == FIRST + 4
    off = make_craft(map_size=16, construction=False)
    assert off.action_names == ENV.action_names[:FIRST]
    assert off.window_channels == ENV.window_channels - construction.SITE_VALUES
    assert off.observation_shape[0] < ENV.observation_shape[0]


def test_generated_sites_are_solid_tiles_outside_the_start_disc():
    state = generated_world(ENV, jax.random.PRNGKey(3))
    sites = state.coordination.sites
    present = np.asarray(sites.task) > 0
    position = np.asarray(sites.position)[present]
    assert present.sum() >= 2
    world = np.asarray(state.map)
    assert (world == L.SITE).sum() == present.sum()
    assert np.all(world[position[:, 0], position[:, 1]] == L.SITE)
    start = np.asarray(state.agents.position)
    assert np.abs(position[:, None] - start[None]).max(-1).min() >= 3
    kinds = np.asarray(sites.task)[present] & 3
    assert set(kinds.tolist()) <= {L.TASK_HANDOVER, L.TASK_HARD_SYNC}


def test_building_without_the_share_does_nothing_and_is_masked():
    state = site_scene(L.TASK_HARD_SYNC, wood=1)  # no stone
    assert not np.asarray(MASK(state, PARAMS))[:, SHELTER].any()
    after, _ = act(state, [SHELTER, SHELTER, SHELTER])
    assert int(after.map[SITE]) == L.SITE and items(after, "wood") == [1, 1, 1]
    assert int(after.coordination.sites.building[0]) == -1


def test_a_lower_building_cost_pays_the_first_items_of_the_share_and_zero_builds_free():
    assert np.array_equal(L.building_share(L.FULL_BUILDING_COST), L.BUILDING_SHARE)
    first_items = [np.flatnonzero(L.building_share(1)[kind]).tolist() for kind in range(3)]
    assert first_items == [[C.INV_WOOD], [C.INV_STONE], [C.INV_COAL]]
    assert np.flatnonzero(L.building_share(2)[L.FORGE_KIND]).tolist() == [C.INV_STONE, C.INV_COAL]
    assert L.building_share(np.array([0, 1, 3])).shape == (3, *L.BUILDING_SHARE.shape)

    wood_only = PARAMS.replace(building_share=jnp.asarray(L.building_share(1)))
    state = site_scene(L.TASK_HARD_SYNC, wood=1)  # no stone: short of the whole share
    assert np.asarray(MASK(state, wood_only))[:, SHELTER].all()
    built, _ = act(state, [SHELTER, SHELTER, C.NOOP], params=wood_only)
    assert int(built.map[SITE]) == L.SHELTER and items(built, "wood") == [0, 0, 1]

    free = PARAMS.replace(building_share=jnp.asarray(L.building_share(0)))
    empty = site_scene(L.TASK_HARD_SYNC)
    assert not np.asarray(MASK(empty, PARAMS))[:, SHELTER].any()
    built, _ = act(empty, [SHELTER, SHELTER, C.NOOP], params=free)
    assert int(built.map[SITE]) == L.SHELTER
    assert unlocked(built, "build_shelter") == [True, True, False]


def test_a_sync_site_fails_alone_and_stands_with_the_quorum():
    state = site_scene(L.TASK_HARD_SYNC, **SHELTER_SHARE)
    assert np.asarray(MASK(state, PARAMS))[:, SHELTER].all()
    alone, _ = act(state, [SHELTER, C.NOOP, C.NOOP])
    assert int(alone.map[SITE]) == L.SITE and items(alone, "wood") == [1, 1, 1]

    built, reward = act(state, [SHELTER, SHELTER, C.NOOP])
    assert int(built.map[SITE]) == L.SHELTER
    assert int(built.coordination.sites.building[0]) == L.SHELTER_KIND
    assert items(built, "wood") == [0, 0, 1] and items(built, "stone") == [0, 0, 1]
    assert unlocked(built, "build_shelter") == [True, True, False]
    np.testing.assert_allclose(reward, [2.0, 2.0, 0.0])
    assert np.asarray(built.coordination.buildings_built).tolist() == [1, 0, 0]
    assert not np.asarray(MASK(built, PARAMS))[:, SHELTER].any()  # built: no longer a site

    needs_all = site_scene(L.TASK_HARD_SYNC, NEEDS_ALL, **SHELTER_SHARE)
    two, _ = act(needs_all, [SHELTER, SHELTER, C.NOOP])
    assert int(two.map[SITE]) == L.SITE and items(two, "wood") == [1, 1, 1]
    three, _ = act(needs_all, [SHELTER, SHELTER, SHELTER])
    assert int(three.map[SITE]) == L.SHELTER and items(three, "wood") == [0, 0, 0]


def test_a_handover_site_needs_a_different_finisher_of_the_same_building():
    state = site_scene(L.TASK_HANDOVER, **FORGE_SHARE)
    state, _ = act(state, [FORGE, C.NOOP, C.NOOP])  # agent 0 starts and pays
    assert items(state, "iron") == [0, 1, 1]
    sites = state.coordination.sites
    assert int(sites.starter[0]) == 0 and int(sites.pending[0]) == L.FORGE_KIND
    assert not bool(MASK(state, PARAMS)[0, FORGE])
    state, _ = act(state, [FORGE, C.NOOP, C.NOOP])  # the starter again: nothing
    state, _ = act(state, [C.NOOP, BEACON, C.NOOP])  # another building: nothing
    assert int(state.map[SITE]) == L.SITE and items(state, "iron") == [0, 1, 1]
    state, reward = act(state, [C.NOOP, FORGE, C.NOOP])  # agent 1 finishes in the window
    assert int(state.map[SITE]) == L.FORGE and items(state, "iron") == [0, 0, 1]
    assert unlocked(state, "build_forge") == [True, True, False]
    np.testing.assert_allclose(reward, [2.0, 2.0, 0.0])
    assert int(state.coordination.sites.starter[0]) == -1


def test_a_started_handover_build_lapses_and_the_share_is_lost():
    state, _ = act(site_scene(L.TASK_HANDOVER, **FORGE_SHARE), [FORGE, C.NOOP, C.NOOP])
    window = int(state.coordination.sites.timer[0])
    assert 3 <= window <= 6  # alpha 0.9: [max(3, ceil(1.2)), max(6, ceil(2.4))]
    for _ in range(window):
        state, _ = act(state, [C.NOOP] * 3)
    assert int(state.coordination.sites.starter[0]) == -1
    state, _ = act(state, [C.NOOP, FORGE, C.NOOP])  # too late: this starts a new build
    assert int(state.map[SITE]) == L.SITE and items(state, "iron") == [0, 0, 1]
    assert int(state.coordination.sites.starter[0]) == 1


def sleeper_by(building: int):
    """Agent 0 asleep at (5, 5) beside a `building` at (4, 5); a zombie walled in at (5, 4)."""
    state = quiet_scene([[5, 5], [10, 10], [12, 12]], facing=[LEFT, DOWN, DOWN])
    state = set_tiles(state, {(4, 4): C.STONE, (6, 4): C.STONE, (5, 3): C.STONE})
    state = with_sites(state, [((4, 5), L.TASK_HARD_SYNC, building)])
    agents = state.agents
    state = state.replace(
        agents=agents.replace(
            sleeping=agents.sleeping.at[0].set(True),
            stats=agents.stats.at[0, C.ENERGY].set(3),
        )
    )
    return place_mob(state, 0, [5, 4])


def test_a_shelter_blocks_zombie_attacks_on_a_sleeper_and_speeds_recovery():
    exposed, _ = act(sleeper_by(L.FORGE_KIND), [C.NOOP] * 3)
    sheltered, _ = act(sleeper_by(L.SHELTER_KIND), [C.NOOP] * 3)
    assert int(exposed.agents.stats[0, C.HEALTH]) == C.STAT_MAX - C.ZOMBIE_SLEEP_DAMAGE
    assert int(sheltered.agents.stats[0, C.HEALTH]) == C.STAT_MAX
    assert bool(sheltered.agents.sleeping[0])
    counters = np.asarray(sheltered.agents.counters[0])
    assert counters[C.RECOVER] == 2 * 2 * C.HALF and counters[C.FATIGUE] == -2 * C.HALF


def test_a_beacon_lights_its_square_and_stops_zombie_spawns_there():
    state = quiet_scene([[1, 1], [1, 2], [2, 1]], facing=[DOWN] * 3)
    state = with_sites(state, [((10, 10), L.TASK_HARD_SYNC, L.BEACON_KIND)])
    sites, radius = state.coordination.sites, PARAMS.beacon_radius
    probes = jnp.array([[6, 6], [14, 14], [6, 14], [5, 10], [10, 15]])
    assert np.asarray(construction.lit_by_beacon(sites, probes, radius)).tolist() == [
        True, True, True, False, False,
    ]  # fmt: skip

    # Every zombie candidate on one tile, spawn roll 0: it spawns unless a beacon lights it.
    def spawned_at(tile):
        size = ENV.config.map_size
        candidates = jnp.broadcast_to((jnp.asarray(tile) + 0.5) / size, (3, 4, 2))
        draws = {
            "spawn": jnp.zeros((3, 2)),
            "candidates": candidates,
            "despawn_pick": jnp.zeros((ENV.config.num_mobs,)),
        }
        blocker = construction.beacon_blocker(sites, radius)
        after = mob_rules.balance(ENV.config, state, ENV.default_params, draws, blocker)
        return bool(after.mobs.alive[0])

    assert not spawned_at([12, 12]) and spawned_at([10, 15])

    # At night the beacon's tiles are lit in the view (darkness channel 0), others dark.
    night = state.replace(
        step=jnp.int32(int(0.7 * ENV.config.day_length)),
        agents=state.agents.replace(position=state.agents.position.at[0].set(jnp.array([6, 5]))),
    )
    height, width, channels = (
        ENV.config.view_height,
        ENV.config.view_width,
        ENV.window_channels,
    )
    view = np.asarray(OBSERVE(night, PARAMS))[0, : height * width * channels]
    darkness = view.reshape(height, width, channels)[..., C.NUM_MATERIALS + 6]
    assert darkness[3, 5] == 0.0  # (6, 6): lit
    assert darkness[3, 4] == pytest.approx(1.0, abs=0.01)  # (6, 5): outside the square


def forge_scene(**share):
    """Agents 0 and 1 beside a forge at (5, 6); agent 2 far away."""
    state = quiet_scene([[5, 5], [5, 7], [12, 12]], facing=[RIGHT, LEFT, DOWN])
    state = with_sites(state, [(SITE, L.TASK_HARD_SYNC, L.FORGE_KIND)])
    for agent in range(3):
        state = set_inventory(state, agent, **share)
    return state


def test_a_diamond_sword_needs_two_smiths_at_a_forge_on_one_step():
    state = forge_scene(**SWORD_SHARE)
    assert np.asarray(MASK(state, PARAMS))[:, SWORD].tolist() == [True, True, False]
    alone, _ = act(state, [SWORD, C.NOOP, C.NOOP])
    assert not bool(alone.coordination.diamond_sword.any()) and items(alone, "diamond") == [1] * 3
    far, _ = act(state, [SWORD, C.NOOP, SWORD])  # agent 2 is not at the forge
    assert not bool(far.coordination.diamond_sword.any())
    poor = set_inventory(state, 1, diamond=0)
    poor, _ = act(poor, [SWORD, SWORD, C.NOOP])
    assert not bool(poor.coordination.diamond_sword.any()) and items(poor, "diamond") == [1, 0, 1]

    pair, reward = act(state, [SWORD, SWORD, C.NOOP])
    assert np.asarray(pair.coordination.diamond_sword).tolist() == [True, True, False]
    assert items(pair, "diamond") == [0, 0, 1] and items(pair, "wood") == [0, 0, 1]
    assert unlocked(pair, "make_diamond_sword") == [True, True, False]
    np.testing.assert_allclose(reward, [2.0, 2.0, 0.0])
    assert int(pair.coordination.diamond_swords) == 2


def test_a_diamond_sword_hits_for_eight():
    state = quiet_scene([[5, 5], [10, 10], [12, 12]], facing=[RIGHT, DOWN, DOWN])
    state = place_mob(state, 0, [5, 6], health=20)
    armed = state.replace(
        coordination=state.coordination.replace(
            diamond_sword=state.coordination.diamond_sword.at[0].set(True)
        )
    )
    hit, _ = act(armed, [C.DO, C.NOOP, C.NOOP])
    # Agent 0 is a warrior: double damage.
    assert int(hit.mobs.health[0]) == 20 - L.DIAMOND_SWORD_DAMAGE * L.WARRIOR_DAMAGE_FACTOR


def test_a_forager_s_food_and_drink_last_twice_as_long():
    state = quiet_scene([[5, 5], [5, 8], [5, 11]], facing=[DOWN] * 3)  # warrior, forager, miner
    food, drink = [], []
    for _ in range(52):
        state, _ = act(state, [C.NOOP] * 3)
        food.append(np.asarray(state.agents.stats[:, C.FOOD]).tolist())
        drink.append(np.asarray(state.agents.stats[:, C.DRINK]).tolist())
    # Hunger > 25 (thirst > 20) Crafter units: after 26 (21) steps, 51 (41) for the forager.
    assert food[24] == [9, 9, 9] and food[25] == [8, 9, 8]
    assert food[49] == [8, 9, 8] and food[50] == [8, 8, 8]
    assert drink[19] == [9, 9, 9] and drink[20] == [8, 9, 8]
    assert drink[39] == [8, 9, 8] and drink[40] == [8, 8, 8] and drink[41] == [7, 8, 7]


def test_the_map_frame_shows_sites_buildings_task_flags_elites_and_beacon_light():
    state = quiet_scene([[1, 1], [1, 2], [2, 1]], facing=[DOWN] * 3)
    sites = [((4, 4), L.TASK_HANDOVER, -1), ((4, 8), L.TASK_HARD_SYNC, -1)]
    state = with_sites(state, [*sites, ((10, 10), L.TASK_HARD_SYNC, L.BEACON_KIND)])
    state = set_tiles(state, {(2, 8): C.TREE})
    tile_task = state.coordination.tile_task.at[2, 8].set(L.TASK_SOFT_SYNC)
    elite = state.coordination.mob_elite.at[0].set(L.ELITE_HARD)
    state = place_mob(state, 0, [3, 6]).replace(
        step=jnp.int32(int(0.7 * ENV.config.day_length)),  # midnight
        coordination=state.coordination.replace(tile_task=tile_task, mob_elite=elite),
    )
    frame = np.asarray(rendering.render_map(ENV.config, state, PARAMS, ENV.layer))

    def tile(row, col):
        return frame[row * TILE : (row + 1) * TILE, col * TILE : (col + 1) * TILE]

    flags = L.TASK_FLAG_COLOURS
    sprites = ENV.layer.material_sprites()  # the world's and construction's blocks
    dim = 1.0 - rendering.NIGHT_DIMMING
    np.testing.assert_allclose(tile(4, 4)[0, 0], flags[L.TASK_HANDOVER] * dim, atol=1)
    np.testing.assert_allclose(tile(4, 8)[0, 0], flags[L.TASK_HARD_SYNC] * dim, atol=1)
    np.testing.assert_allclose(tile(2, 8)[0, 0], flags[L.TASK_SOFT_SYNC] * dim, atol=1)
    np.testing.assert_allclose(tile(4, 4)[4, 4], sprites[L.SITE][4, 4] * dim, atol=1)
    np.testing.assert_array_equal(tile(10, 10), sprites[L.BEACON])  # lit
    np.testing.assert_array_equal(tile(12, 12), sprites[C.GRASS])
    np.testing.assert_allclose(tile(3, 6)[0, 0], L.ELITE_FRAME_COLOURS[L.ELITE_HARD] * dim, atol=1)
