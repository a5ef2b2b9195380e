"""Crafter progression: pickaxes for the miner, swords for the warrior, and the table and
furnace they are made at (a table goes only where a furnace can join it)."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from alemlite.envs.craft import constants as C
from alemlite.envs.craft.coordination import constants as L
from alemlite.envs.craft.team_policy.grid import WINDOW_OFFSETS
from alemlite.envs.craft.team_policy.tuning import FAR, RALLY_RADIUS, TABLE_REACH
from alemlite.envs.craft.team_policy.view import TeamView, role_chance
from alemlite.envs.craft.world.gathering import near_stations
from alemlite.envs.craft.world.state import CraftState
from alemlite.envs.craft.world.tiles import read_tiles


def _sidesteps(state: CraftState) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Per agent and direction `(P, 4)`: the tile a step leads to is free to walk on, it
    is beside a table, and the free tile beyond it takes a furnace."""
    position = state.agents.position
    steps = jnp.asarray(C.DIRECTIONS)
    destination = position[:, None, :] + steps[None]  # (P, 4, 2)
    beyond = destination + steps[None]
    around = jnp.asarray(WINDOW_OFFSETS)[
        RALLY_RADIUS - 1 : RALLY_RADIUS + 2, RALLY_RADIUS - 1 : RALLY_RADIUS + 2
    ].reshape(-1, 2)
    beside_table = jnp.any(
        read_tiles(state.map, destination[:, :, None, :] + around[None, None]) == C.TABLE, -1
    )
    occupied = jnp.concatenate([state.agents.position, state.mobs.position])
    alive = jnp.concatenate([state.agents.status != C.DEAD, state.mobs.alive])

    def free(tiles):
        taken = jnp.all(tiles[:, :, None, :] == occupied[None, None], -1) & alive[None, None]
        return ~jnp.any(taken, -1)

    walkable = jnp.asarray(C.WALKABLE)[read_tiles(state.map, destination)] & free(destination)
    furnace_fits = jnp.asarray(C.PLACE_WHERE)[C.PLACE_FURNACE - C.PLACE_STONE]
    fits = furnace_fits[read_tiles(state.map, beyond)] & free(beyond)
    return walkable, beside_table, fits


def _room_for_workshop(state: CraftState) -> jax.Array:
    """`(P,)` bool: with a table placed ahead, a sideways step keeps it beside the table
    and leaves it facing a free tile for a furnace (a step is the only way to turn toward
    a walkable tile)."""
    walkable, _, fits = _sidesteps(state)
    facing = state.agents.facing
    sideways = (jnp.arange(4)[None, :] // 2) != (facing[:, None] // 2)
    return jnp.any(walkable & fits & sideways, axis=1)


def make_room_for_furnace(state: CraftState) -> jax.Array:
    """`(P,)` action for an agent beside a table that faces no tile a furnace fits on: a
    step that keeps it beside the table and leaves it facing a free tile that takes one,
    else mine a stone beside it (it leaves path, which takes one; never a task tile,
    which a lone DO does not mine)."""
    walkable, beside_table, fits = _sidesteps(state)
    score = (walkable & beside_table) * (1 + fits)
    destination = state.agents.position[:, None, :] + jnp.asarray(C.DIRECTIONS)[None]
    clipped = jnp.clip(destination, 0, state.map.shape[0] - 1)
    task = state.coordination.tile_task[clipped[..., 0], clipped[..., 1]] > 0
    stone = (read_tiles(state.map, destination) == C.STONE) & ~task
    facing_stone = jnp.take_along_axis(stone, state.agents.facing[:, None], 1)[:, 0]
    return jnp.where(
        jnp.any(score > 0, axis=1),
        C.MOVE_LEFT + jnp.argmax(score, axis=1),
        jnp.where(facing_stone, C.DO, C.MOVE_LEFT + jnp.argmax(stone, axis=1)),
    )


def beside_unbuilt_site(view: TeamView) -> jax.Array:
    """`(P,)` bool: the agent faces a tile beside an unbuilt site, where builders stand and
    nothing is placed."""
    if not view.config.has_construction:
        return jnp.zeros((view.num_agents,), bool)
    sites = view.state.coordination.sites
    unbuilt_site = (sites.task > 0) & (sites.building < 0)
    site_gap = jnp.max(jnp.abs(view.facing[:, None, :] - sites.position.astype(jnp.int32)), -1)
    return jnp.any(unbuilt_site[None, :] & (site_gap <= 1), axis=1)


class Progression(NamedTuple):
    wants_tool: jax.Array  # (P, 6) bool: each make action's tool is wanted and makeable
    making: jax.Array  # (P,) bool: makes a tool now
    make_action: jax.Array  # (P,)
    place_table: jax.Array  # (P,) bool
    place_furnace: jax.Array  # (P,) bool
    arrange: jax.Array  # (P,) bool: steps or mines to face a tile that takes a furnace
    go_to_table: jax.Array  # (P,) bool: walks to a near table rather than place one


def progress(view: TeamView, reserve: jax.Array, keep_clear: jax.Array) -> Progression:
    """Make the wanted tools, placing a table and a furnace for them; `reserve`
    `(P, items)`: project shares not to spend; `keep_clear` `(P,)`: place nothing."""
    state, mask, inventory, position = view.state, view.mask, view.inventory, view.position
    num_agents, miner = view.num_agents, view.miner
    make_actions = jnp.asarray(C.MAKE_ACTIONS)
    make_chance = role_chance(
        view.config, state, view.params, L.ACTION_ROLE[np.array(C.MAKE_ACTIONS)]
    )
    lacking_tool = inventory[:, jnp.asarray(C.MAKE_ITEM)] == 0
    is_pickaxe = jnp.asarray([True, True, True, False, False, False])
    # Pickaxes: the miner all three, others a wood pickaxe (for coal); swords: the warrior.
    wants_tool = jnp.where(
        is_pickaxe[None, :],
        miner[:, None] | (jnp.arange(6) == 0)[None, :],
        (view.role == L.WARRIOR)[:, None] & (jnp.arange(6) < 5)[None, :],
    )
    wants_tool &= lacking_tool & (make_chance > 0)
    free_inventory = inventory - reserve
    affordable = jnp.all(free_inventory[:, None, :] >= jnp.asarray(C.MAKE_COST)[None], axis=-1)
    make_now = mask[:, make_actions] & wants_tool & affordable
    near_table, near_furnace = near_stations(state)
    needs_furnace = jnp.asarray(C.MAKE_NEEDS_FURNACE)
    station_wanted = wants_tool & affordable & ~make_now
    wants_table = jnp.any(station_wanted, axis=1) & ~near_table
    wants_furnace = jnp.any(station_wanted & needs_furnace[None, :], axis=1) & near_table
    wants_furnace &= ~near_furnace
    grid = jnp.arange(view.config.map_size)
    table_distance = jnp.min(
        jnp.where(
            (state.map == C.TABLE)[None],
            jnp.abs(grid[None, :, None] - position[:, 0, None, None])
            + jnp.abs(grid[None, None, :] - position[:, 1, None, None]),
            FAR,
        ).reshape(num_agents, -1),
        axis=1,
    )
    go_to_table = wants_table & (table_distance <= TABLE_REACH)
    spare_wood = free_inventory[:, C.INV_WOOD] >= 2
    # A table for iron tools goes only where a furnace can join it.
    roomy = _room_for_workshop(state) | ~jnp.any(station_wanted & needs_furnace[None, :], 1)
    place_table = wants_table & ~go_to_table & spare_wood & mask[:, C.PLACE_TABLE] & roomy
    place_table &= ~keep_clear
    place_furnace = wants_furnace & mask[:, C.PLACE_FURNACE] & ~keep_clear
    return Progression(
        wants_tool=wants_tool,
        making=jnp.any(make_now, axis=1),
        make_action=make_actions[jnp.argmax(make_now, axis=1)],
        place_table=place_table,
        place_furnace=place_furnace,
        arrange=wants_furnace & ~place_furnace & (free_inventory[:, C.INV_STONE] >= 1),
        go_to_table=go_to_table,
    )
