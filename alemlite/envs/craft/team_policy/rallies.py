"""Task rallies: the cheapest coordination tile near the free agents that the agents it
needs (the quorum k of a sync, two for a handover) reach and can work with a fair chance
of passing their role checks. They take its free sides and do DO on one step (sync), or
one starts and another finishes (handover; the agent likelier to fail its role check
starts, since it may retry until it passes). Free agents with nothing else to do walk to
the task tile they could work together. Rallies weigh walking distances within a window
around each agent."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from alemlite.envs.craft import constants as C
from alemlite.envs.craft.coordination import constants as L
from alemlite.envs.craft.coordination.tasks import quorum, task_kind
from alemlite.envs.craft.team_policy.grid import over_neighbours, relax, window
from alemlite.envs.craft.team_policy.tuning import (
    FAR,
    MIN_SYNC_SUCCESS,
    RALLY_RADIUS,
    ROLE_PENALTY,
    WELL_ENOUGH,
)
from alemlite.envs.craft.team_policy.view import TeamView


def _walking_reach(view: TeamView) -> jax.Array:
    """`(P, S, S)` walking steps from each agent to every tile next to its window's
    walkable tiles it can reach (FAR elsewhere): the cost of reaching a tile to face it."""
    cells, material = window(view.state)
    walkable = jnp.asarray(C.WALKABLE)[material]
    cost = jnp.where(walkable, 1, FAR)
    seed = jnp.full(cost.shape, FAR).at[:, RALLY_RADIUS, RALLY_RADIUS].set(0)
    steps = relax(cost.at[:, RALLY_RADIUS, RALLY_RADIUS].set(1), seed, 2 * RALLY_RADIUS)
    # Facing a tile: one of its sides reached, plus a turn.
    side = over_neighbours(jnp.minimum, steps, FAR)
    size, num_agents = view.config.map_size, cells.shape[0]
    rows = jnp.where(jnp.all((cells >= 0) & (cells < size), axis=-1), cells[..., 0], size)
    agent = jnp.broadcast_to(jnp.arange(num_agents)[:, None, None], rows.shape)
    reach = jnp.full((num_agents, size, size), FAR)
    return reach.at[agent, rows, cells[..., 1]].min(side + 1, mode="drop")


def _rally(view: TeamView, workable: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The task tile the team works next and its participants, among the agents that may
    work each material `workable` `(P, M)`.

    Returns the tile `(2,)`, participants `(P,)` (none when no tile qualifies) and
    whether each participant may DO now `(P,)`.
    """
    num_agents, size = view.num_agents, view.config.map_size
    state, chance = view.state, view.chance
    coordination = state.coordination
    byte = coordination.tile_task
    kind = task_kind(byte)
    material = state.map.astype(jnp.int32)
    handover = kind == L.TASK_HANDOVER
    needed = jnp.where(handover, 2, quorum(byte, coordination.alpha, num_agents))
    walkable = jnp.asarray(C.WALKABLE)[material][None]
    sides = over_neighbours(jnp.add, walkable.astype(jnp.int32), 0)[0]
    open_task = (kind != L.TASK_NONE) & (sides >= needed) & (needed <= num_agents)

    reach = _walking_reach(view)  # (P, S, S)
    pass_chance = jnp.take(chance, material, axis=1)  # (P, S, S)
    usable = jnp.take(workable, material, axis=1) & (pass_chance > 0) & (reach < FAR)
    cost = jnp.where(usable, reach + ROLE_PENALTY * (1.0 - pass_chance), jnp.inf)
    order = jnp.argsort(cost, axis=0)
    sorted_cost = jnp.take_along_axis(cost, order, axis=0)
    sorted_chance = jnp.take_along_axis(pass_chance, order, axis=0)
    last = (needed - 1)[None]
    total = jnp.take_along_axis(jnp.cumsum(sorted_cost, axis=0), last, axis=0)[0]
    together = jnp.take_along_axis(jnp.cumprod(sorted_chance, axis=0), last, axis=0)[0]
    # A handover's finisher is the likelier of the two (the other starts and retries).
    finisher_chance = jnp.maximum(sorted_chance[0], sorted_chance[jnp.minimum(1, num_agents - 1)])
    likely = jnp.where(handover, finisher_chance >= WELL_ENOUGH, together >= MIN_SYNC_SUCCESS)
    total = jnp.where(open_task & likely & jnp.isfinite(total), total, jnp.inf).reshape(-1)
    flat = jnp.argmin(total)
    active = jnp.isfinite(total[flat])
    tile = jnp.stack([flat // size, flat % size]).astype(jnp.int32)

    rank = jnp.argsort(order[:, tile[0], tile[1]])  # each agent's place in the order
    participants = active & (rank < needed[tile[0], tile[1]])
    facing = jnp.all(view.facing == tile[None, :], axis=1)
    arrived = participants & facing & view.able
    all_arrived = jnp.all(arrived | ~participants)
    # Handovers: the pending one at this tile, if any, and who started it.
    pending = jnp.all(coordination.task_position.astype(jnp.int32) == tile[None, :], axis=1) & (
        coordination.task_starter >= 0
    )
    starter = jnp.where(jnp.any(pending), coordination.task_starter[jnp.argmax(pending)], -1)
    agent = view.agent
    tile_chance = chance[:, material[tile[0], tile[1]]]
    # The designated starter: the participant likelier to fail its role check.
    starter_rank = jnp.where(participants, tile_chance * num_agents + agent, jnp.inf)
    designated = agent == jnp.argmin(starter_rank)
    doing = jnp.where(
        handover[tile[0], tile[1]],
        jnp.where(starter >= 0, arrived & (agent != starter), designated & all_arrived),
        arrived & all_arrived,
    )
    return tile, participants, doing


def _task_to_seek(view: TeamView, workable: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The task tile nearest (L1) to the free agents' centre that enough of them could
    work (`workable` `(P, M)`), each passing its role check at least WELL_ENOUGH; `(2,)`
    and who walks there."""
    num_agents, size, state = view.num_agents, view.config.map_size, view.state
    byte = state.coordination.tile_task
    kind = task_kind(byte)
    material = state.map.astype(jnp.int32)
    needed = jnp.where(
        kind == L.TASK_HANDOVER, 2, quorum(byte, state.coordination.alpha, num_agents)
    )
    workers = workable & (view.chance >= WELL_ENOUGH)  # (P, M)
    free = jnp.any(workers, axis=1)
    enough = jnp.sum(workers, axis=0)[material] >= needed
    centre = jnp.sum(view.position * free[:, None], axis=0) // jnp.maximum(jnp.sum(free), 1)
    grid = jnp.arange(size)
    distance = jnp.abs(grid - centre[0])[:, None] + jnp.abs(grid - centre[1])[None, :]
    distance = jnp.where((kind != L.TASK_NONE) & enough, distance, FAR).reshape(-1)
    flat = jnp.argmin(distance)
    tile = jnp.stack([flat // size, flat % size]).astype(jnp.int32)
    seeking = free & workers[:, material[tile[0], tile[1]]] & (distance[flat] < FAR)
    return tile, seeking


class Rally(NamedTuple):
    tile: jax.Array  # (2,) the task tile worked next
    participants: jax.Array  # (P,) bool
    doing: jax.Array  # (P,) bool: a participant does DO now
    seek_tile: jax.Array  # (2,) the task tile free agents walk toward
    seeking: jax.Array  # (P,) bool


def rally(view: TeamView, workable: jax.Array) -> Rally:
    """The rally among the agents that may work each material (`workable` `(P, M)`), and
    the tile the free ones walk toward."""
    if not view.config.has_tasks:
        nobody = jnp.zeros((view.num_agents,), bool)
        nowhere = jnp.zeros((2,), jnp.int32)
        return Rally(nowhere, nobody, nobody, nowhere, nobody)
    tile, participants, doing = _rally(view, workable)
    seek_tile, seeking = _task_to_seek(view, workable)
    return Rally(tile, participants, doing, seek_tile, seeking)
