"""Whole-map grid operations the team plans with: neighbours, distance fields, scatters."""

from __future__ import annotations

import functools
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from alemlite.envs.craft import constants as C
from alemlite.envs.craft.coordination import constants as L
from alemlite.envs.craft.coordination.tasks import task_kind
from alemlite.envs.craft.team_policy.tuning import FAR, RALLY_RADIUS, SOLO_MATERIALS
from alemlite.envs.craft.world.state import CraftState
from alemlite.envs.craft.world.tiles import read_tiles

_SPAN = np.arange(-RALLY_RADIUS, RALLY_RADIUS + 1)
WINDOW_OFFSETS = np.stack(np.meshgrid(_SPAN, _SPAN, indexing="ij"), axis=-1)  # (W, W, 2)


def neighbour(grid: jax.Array, d_row: int, d_col: int, fill) -> jax.Array:
    """`grid` `(B, H, W)` read one tile away in direction `(d_row, d_col)`, `fill` outside."""
    padded = jnp.pad(grid, ((0, 0), (1, 1), (1, 1)), constant_values=fill)
    height, width = grid.shape[1:]
    return padded[:, 1 + d_row : 1 + d_row + height, 1 + d_col : 1 + d_col + width]


def over_neighbours(combine: Callable, grid: jax.Array, fill) -> jax.Array:
    """`combine` of the four neighbours of every tile of `grid` `(B, H, W)`."""
    return functools.reduce(
        combine, [neighbour(grid, int(r), int(c), fill) for r, c in C.DIRECTIONS]
    )


def any_neighbour(grid: jax.Array) -> jax.Array:
    return over_neighbours(jnp.logical_or, grid, False)


def relax(cost: jax.Array, distance: jax.Array, iterations: int) -> jax.Array:
    """Shortest distances (up to `iterations` tiles away) to the seeded tiles `(B, H, W)`;
    entering a tile costs `cost` (FAR: never)."""
    passable = cost < FAR

    def body(_, distance):
        entering = jnp.minimum(distance + cost, FAR)
        best = over_neighbours(jnp.minimum, entering, FAR)
        return jnp.where(passable, jnp.minimum(distance, best), FAR)

    return jax.lax.fori_loop(0, iterations, body, distance)


def scatter(num_agents: int, size: int, position: jax.Array, value: jax.Array) -> jax.Array:
    """`(P, S, S)` bool grids with `value` `(P, K)` set at the `(K, 2)` positions."""
    agent = jnp.broadcast_to(jnp.arange(num_agents)[:, None], value.shape)
    rows = jnp.broadcast_to(position[None, :, 0], value.shape)
    cols = jnp.broadcast_to(position[None, :, 1], value.shape)
    grid = jnp.zeros((num_agents, size, size), bool)
    return grid.at[agent, rows, cols].max(value, mode="drop")


def window(state: CraftState) -> tuple[jax.Array, jax.Array]:
    """Tiles `(P, W, W, 2)` of the rally window around each agent and their materials."""
    cells = state.agents.position[:, None, None, :] + jnp.asarray(WINDOW_OFFSETS)[None]
    return cells, read_tiles(state.map, cells)


def avoided_tasks(state: CraftState) -> jax.Array:
    """`(S, S)` bool: task tiles an agent gathering alone leaves to the team."""
    byte = state.coordination.tile_task
    solo = (task_kind(byte) == L.TASK_SOFT_SYNC) & jnp.asarray(SOLO_MATERIALS)[state.map]
    return (byte > 0) & ~solo
