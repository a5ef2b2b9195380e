"""World generation from value noise: Crafter's terrain recipe with fixed shapes.

Crafter (crafter/worldgen.py) thresholds simplex noise into grassland with trees,
lakes with sand shores, mountains with caves and tunnels, coal / iron / diamond and
lava, pushing mountains and water away from the start. Here the noise is fractal
value noise on a static grid, so generation is one jittable, vmappable function.

On top of Crafter's recipe, every world guarantees what a team needs first: a grass
disc of radius 3.7 around the start holds the agents (in a 3x3 block), and a tree, a
water tile and a stone tile sit 3 tiles from the centre in three distinct compass
directions, each next to the disc, so all three are reachable from every agent.
Generation runs in two halves, `lay_terrain` then `populate`, so that a layer may add to
the terrain before the mobs are placed.

Frequencies (share of all tiles, mean over 64 worlds of 48x48): grass 45 %, water
20 %, stone 15 %, path 7 %, sand 6 %, tree 5 %, coal 1.3 %, iron 0.4 %, lava 0.6 %,
diamond 0.05 %. `tests/test_craft_worldgen.py` asserts coal in 0.5-3 %, iron in
0.1-1 %, diamond in 0.01-0.2 % and lava in 0.2-2 %.
"""

from __future__ import annotations

from functools import partial
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from alemlite.envs.craft import constants as C
from alemlite.envs.craft.world.config import WorldConfig
from alemlite.envs.craft.world.randomness import draw_uniforms
from alemlite.envs.craft.world.state import (
    ArrowState,
    CraftState,
    MobState,
    PlantState,
    fresh_agents,
)

# Where agents start, relative to the centre (a 3x3 block, filled in this order).
START_OFFSETS = np.array(
    [[0, 0], [0, 1], [1, 0], [0, -1], [-1, 0], [1, 1], [-1, -1], [1, -1]], dtype=np.int32
)
COMPASS = np.array(
    [[-1, 0], [-1, 1], [0, 1], [1, 1], [1, 0], [1, -1], [0, -1], [-1, -1]], dtype=np.int32
)
START_DISC_RADIUS = 3.7
STAMP_DISTANCE = 3
SPAWN_CANDIDATES = 32
SIMPLEX_SPREAD = 0.7  # tiles tried per mob slot when populating a new world


# Noise fields of Crafter's recipe: octaves {cell size: weight}, whether the sum is
# normalised, and a stretch of the cells (rows, cols) for tunnels.
NOISE_FIELDS: dict[str, tuple[dict[float, float], bool, tuple[float, float]]] = {
    "start": ({3: 1}, True, (1.0, 1.0)),
    "water": ({15: 1, 5: 0.15}, False, (1.0, 1.0)),
    "mountain": ({15: 1, 5: 0.3}, True, (1.0, 1.0)),
    "cave": ({7: 1}, True, (1.0, 1.0)),
    "tunnel_rows": ({3: 1}, True, (0.5, 5.0)),
    "tunnel_cols": ({3: 1}, True, (5.0, 0.5)),
    "coal": ({8: 1}, True, (1.0, 1.0)),
    "iron": ({6: 1}, True, (1.0, 1.0)),
    "lava": ({5: 1}, True, (1.0, 1.0)),
    "sand": ({9: 1}, True, (1.0, 1.0)),
    "tree": ({7: 1}, True, (1.0, 1.0)),
}


def lattice_shape(size: int, cell_rows: float, cell_cols: float) -> tuple[int, int]:
    return int(size / cell_rows) + 2, int(size / cell_cols) + 2


def terrain_random_shapes(size: int) -> dict[str, tuple[int, ...]]:
    """Uniform draws `terrain` needs: one lattice per field and octave, plus a tile roll."""
    shapes: dict[str, tuple[int, ...]] = {}
    for name, (octaves, _, stretch) in NOISE_FIELDS.items():
        for cell in octaves:
            shapes[f"{name}/{cell}"] = lattice_shape(size, cell * stretch[0], cell * stretch[1])
    shapes["roll"] = (size, size)
    return shapes


def interpolation_weights(size: int, cell: float, lattice_points: int) -> np.ndarray:
    """(size, lattice_points) weights that interpolate a lattice axis onto `size` tiles.

    Tile i lies `i / cell` lattice steps in: it takes 1 - t of the point below and t of the
    point above, t the smoothstep of the fraction between them.
    """
    coordinate = np.arange(size, dtype=np.float32) / np.float32(cell)
    low = np.floor(coordinate).astype(np.int32)
    fraction = coordinate - low
    t = fraction * fraction * (np.float32(3.0) - np.float32(2.0) * fraction)
    weights = np.zeros((size, lattice_points), np.float32)
    weights[np.arange(size), low] = np.float32(1.0) - t
    weights[np.arange(size), low + 1] = t
    return weights


def value_noise(lattice01: jax.Array, size: int, cell_rows: float, cell_cols: float) -> jax.Array:
    """Smooth noise on a (size, size) grid from a lattice of uniforms in [0, 1).

    Bilinear with smoothstep weights, along the columns then the rows, as two products
    with constant weight matrices: one matrix product each, where lattice lookups would
    be gathers, the slowest part of a world on CPU.
    """
    lattice = 2.0 * lattice01 - 1.0
    rows = interpolation_weights(size, cell_rows, lattice.shape[0])
    cols = interpolation_weights(size, cell_cols, lattice.shape[1])
    product = partial(jnp.matmul, precision=jax.lax.Precision.HIGHEST)
    # Scaled so that its spread is close to simplex noise, for which Crafter's
    # thresholds were chosen.
    return SIMPLEX_SPREAD * product(rows, product(lattice, cols.T))


def noise_field(name: str, draws: dict[str, jax.Array], size: int) -> jax.Array:
    """Weighted sum of value noise at several cell sizes (Crafter's `_simplex`)."""
    octaves, normalise, stretch = NOISE_FIELDS[name]
    total = sum(
        weight * value_noise(draws[f"{name}/{cell}"], size, cell * stretch[0], cell * stretch[1])
        for cell, weight in octaves.items()
    )
    return total / sum(octaves.values()) if normalise else total


def terrain(draws: dict[str, jax.Array], size: int, centre: jax.Array) -> jax.Array:
    """The material grid (uint8) from Crafter's thresholds on noise fields."""
    field = lambda name: noise_field(name, draws, size)  # noqa: E731
    rows = jnp.arange(size, dtype=jnp.float32)[:, None]
    cols = jnp.arange(size, dtype=jnp.float32)[None, :]
    distance = jnp.sqrt((rows - centre[0]) ** 2 + (cols - centre[1]) ** 2)
    start = jax.nn.sigmoid(4.0 - distance + 2.0 * field("start"))
    water = field("water") + 0.1 - 2.0 * start
    mountain = field("mountain") - 4.0 * start - 0.3 * water
    roll = draws["roll"]
    cave = (field("cave") > 0.15) & (mountain > 0.3)
    # Tunnels: noise stretched along one axis (Crafter samples at (2x, y/5) and (x/5, 2y)).
    tunnel = (field("tunnel_rows") > 0.4) | (field("tunnel_cols") > 0.4)
    coal = (field("coal") > 0) & (roll > 0.85)
    iron = (field("iron") > 0.4) & (roll > 0.75)
    diamond = (mountain > 0.18) & (roll > 0.994)
    lava = (mountain > 0.3) & (field("lava") > 0.35)
    sand = (water > 0.25) & (water <= 0.35) & (field("sand") > -0.2)
    tree = (field("tree") > 0) & (roll > 0.8)

    mountain_material = jnp.select(
        [cave | tunnel, coal, iron, diamond, lava],
        [C.PATH, C.COAL, C.IRON, C.DIAMOND, C.LAVA],
        C.STONE,
    )
    material = jnp.select(
        [start > 0.5, mountain > 0.15, sand, water > 0.3, tree],
        [C.GRASS, mountain_material, C.SAND, C.WATER, C.TREE],
        C.GRASS,
    )
    material = jnp.where(distance <= START_DISC_RADIUS, C.GRASS, material)
    return material.astype(jnp.uint8)


def stamp_essentials(order: jax.Array, material: jax.Array, centre: jax.Array) -> jax.Array:
    """A tree, a water tile and a stone tile next to the start disc, in distinct directions.

    `order` holds one uniform per compass direction; the three lowest are used.
    """
    directions = jnp.asarray(COMPASS)[jnp.argsort(order)[:3]]
    positions = centre[None, :] + STAMP_DISTANCE * directions
    codes = jnp.array([C.TREE, C.WATER, C.STONE], jnp.uint8)
    return material.at[positions[:, 0], positions[:, 1]].set(codes)


def sample_spawn_positions(
    uniform: jax.Array,
    material: jax.Array,
    allowed: jax.Array,
    centre: jax.Array,
    min_distance: int,
) -> tuple[jax.Array, jax.Array]:
    """Distinct tiles whose material is `allowed`, far from `centre`, one per slot.

    `uniform` `(slots, SPAWN_CANDIDATES, 2)` picks the candidate tiles.
    """
    size, slots = material.shape[0], uniform.shape[0]
    candidates = jnp.floor(uniform * size).astype(jnp.int32)
    ok = allowed[material[candidates[..., 0], candidates[..., 1]]]
    ok &= jnp.abs(candidates - centre).sum(-1) > min_distance
    # Drop a candidate already chosen by an earlier slot (same first choice).
    choice = jnp.argmax(ok, axis=1)
    chosen = candidates[jnp.arange(slots), choice]
    found = ok[jnp.arange(slots), choice]
    earlier_same = jnp.tril(jnp.all(chosen[:, None] == chosen[None, :], -1), k=-1)
    found &= ~jnp.any(earlier_same & found[None, :], axis=1)
    return chosen.astype(jnp.int32), found


class Terrain(NamedTuple):
    """A generated map before the world places its agents and mobs."""

    material: jax.Array  # (S, S) uint8
    centre: jax.Array  # (2,) int32, the middle of the start
    draws: dict[str, jax.Array]  # the generator's uniforms (mob placement among them)


def lay_terrain(key: jax.Array, config: WorldConfig) -> Terrain:
    """The material grid around a random start, with the essentials stamped in."""
    size = config.map_size
    draws = draw_uniforms(
        key,
        {
            **terrain_random_shapes(size),
            "centre": (2,),
            "compass": (len(COMPASS),),
            "cows": (config.cow_slots, SPAWN_CANDIDATES, 2),
            "skeletons": (config.skeleton_slots, SPAWN_CANDIDATES, 2),
        },
    )
    spread = max(size // 8, 1)
    centre = size // 2 - spread + jnp.floor(draws["centre"] * (2 * spread + 1)).astype(jnp.int32)
    material = terrain(draws, size, centre)
    return Terrain(stamp_essentials(draws["compass"], material, centre), centre, draws)


def populate(config: WorldConfig, terrain: Terrain, coordination: Any) -> CraftState:
    """A fresh world on `terrain`: agents at the start, cows and skeletons placed.

    `coordination` is the layer's state, which the world carries untouched.
    """
    material, centre, draws = terrain
    mob_kinds = config.mob_kinds()
    cow_position, cow_found = sample_spawn_positions(
        draws["cows"], material, jnp.asarray(C.material_set(C.GRASS)), centre, 3
    )
    skeleton_position, skeleton_found = sample_spawn_positions(
        draws["skeletons"], material, jnp.asarray(C.SKELETON_WALKABLE), centre, 10
    )
    position = jnp.zeros((config.num_mobs, 2), jnp.int32)
    alive = jnp.zeros((config.num_mobs,), bool)
    skeleton_slots = np.flatnonzero(mob_kinds == C.SKELETON)
    cow_slots = np.flatnonzero(mob_kinds == C.COW)
    position = position.at[skeleton_slots].set(skeleton_position).at[cow_slots].set(cow_position)
    alive = alive.at[skeleton_slots].set(skeleton_found).at[cow_slots].set(cow_found)
    mob_health = jnp.asarray(
        np.array([C.ZOMBIE_HEALTH, C.SKELETON_HEALTH, C.COW_HEALTH])[mob_kinds], jnp.int32
    )
    agent_position = centre[None, :] + jnp.asarray(START_OFFSETS[: config.num_agents])
    return CraftState(
        map=material,
        agents=fresh_agents(agent_position),
        mobs=MobState(
            position=position,
            health=mob_health,
            alive=alive,
            cooldown=jnp.zeros((config.num_mobs,), jnp.int32),
        ),
        arrows=ArrowState(
            position=jnp.zeros((config.arrow_slots, 2), jnp.int32),
            direction=jnp.zeros((config.arrow_slots,), jnp.int32),
            alive=jnp.zeros((config.arrow_slots,), bool),
        ),
        plants=PlantState(
            position=jnp.zeros((config.plant_slots, 2), jnp.int32),
            grown=jnp.zeros((config.plant_slots,), jnp.int32),
            alive=jnp.zeros((config.plant_slots,), bool),
        ),
        coordination=coordination,
        step=jnp.zeros((), jnp.int32),
        grass_tiles=jnp.sum(material == C.GRASS, dtype=jnp.int32),
        path_tiles=jnp.sum(material == C.PATH, dtype=jnp.int32),
    )
