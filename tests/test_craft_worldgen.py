"""World generation over many seeds (one vmapped compile per map size)."""

from collections import deque

import jax
import numpy as np
import pytest

from alemlite.envs.craft import constants as C
from alemlite.envs.craft import make_craft

NUM_WORLDS = 64
ESSENTIALS_WITHIN = 6  # the tree, water and stone must be reachable this close to the start


def generate_many(map_size: int):
    env = make_craft(map_size=map_size, num_agents=8)
    keys = jax.random.split(jax.random.PRNGKey(map_size), NUM_WORLDS)
    states = jax.jit(jax.vmap(lambda key: env.generate(key, env.default_params)))(keys)
    return env.config, jax.device_get(states)


@pytest.fixture(scope="module")
def default_worlds():
    return generate_many(48)


@pytest.fixture(scope="module", params=[16, 48])
def worlds(request, default_worlds):
    return default_worlds if request.param == 48 else generate_many(request.param)


def reachable(world: np.ndarray, start) -> np.ndarray:
    """Walkable tiles reachable from `start` by steps over grass, sand and path."""
    size = world.shape[0]
    seen = np.zeros_like(world, dtype=bool)
    seen[tuple(start)] = True
    queue = deque([tuple(start)])
    while queue:
        row, col = queue.popleft()
        for d_row, d_col in C.DIRECTIONS:
            nxt = (row + d_row, col + d_col)
            inside = 0 <= nxt[0] < size and 0 <= nxt[1] < size
            if inside and not seen[nxt] and C.WALKABLE[world[nxt]]:
                seen[nxt] = True
                queue.append(nxt)
    return seen


def test_every_agent_reaches_a_tree_water_and_stone_near_the_start(worlds):
    _, states = worlds
    for index in range(NUM_WORLDS):
        world = states.map[index]
        for position in states.agents.position[index]:
            seen = reachable(world, position)
            near = np.abs(np.indices(world.shape) - position[:, None, None]).max(0)
            seen &= near <= ESSENTIALS_WITHIN
            # A material is reachable when it borders a reachable tile.
            padded = np.pad(seen, 1)
            touched = padded[:-2, 1:-1] | padded[2:, 1:-1] | padded[1:-1, :-2] | padded[1:-1, 2:]
            for material in (C.TREE, C.WATER, C.STONE):
                assert np.any(touched & (world == material)), (index, C.MATERIALS[material])


def test_agents_start_on_distinct_grass_tiles_and_fresh(worlds):
    config, states = worlds
    for index in range(NUM_WORLDS):
        positions = states.agents.position[index]
        assert len({tuple(p) for p in positions}) == config.num_agents
        assert np.all(states.map[index][positions[:, 0], positions[:, 1]] == C.GRASS)
    assert np.all(states.agents.stats == C.STAT_MAX)
    assert np.all(states.agents.status == C.ALIVE)


def test_initial_mobs_stand_on_their_materials_apart(worlds):
    config, states = worlds
    kinds = config.mob_kinds()
    for index in range(NUM_WORLDS):
        alive = states.mobs.alive[index]
        position = states.mobs.position[index][alive]
        assert len({tuple(p) for p in position}) == len(position)
        materials = states.map[index][position[:, 0], position[:, 1]]
        expected = np.where(kinds[alive] == C.SKELETON, C.PATH, C.GRASS)
        np.testing.assert_array_equal(materials, expected)


def test_ore_and_lava_frequencies_lie_in_the_documented_ranges(default_worlds):
    _, states = default_worlds
    share = {m: float(np.mean(states.map == m)) for m in (C.COAL, C.IRON, C.DIAMOND, C.LAVA)}
    assert 0.005 <= share[C.COAL] <= 0.03
    assert 0.001 <= share[C.IRON] <= 0.01
    assert 0.0001 <= share[C.DIAMOND] <= 0.002
    assert 0.002 <= share[C.LAVA] <= 0.02
    for material in (C.GRASS, C.WATER, C.STONE, C.TREE, C.PATH, C.SAND):
        assert np.mean(states.map == material) > 0.01, C.MATERIALS[material]
