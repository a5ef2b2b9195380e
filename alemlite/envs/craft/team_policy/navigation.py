"""Navigation: a distance field over the whole map per agent, relaxed from the tiles beside
its targets (a tunnel costs a DO and a step; lava, water and teammates block); the agent
steps down it, turns to the target and acts. Agents with no route explore."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from alemlite.envs.craft import constants as C
from alemlite.envs.craft.config import CraftConfig
from alemlite.envs.craft.team_policy.goals import Goal
from alemlite.envs.craft.team_policy.grid import any_neighbour, avoided_tasks, relax, scatter
from alemlite.envs.craft.team_policy.tuning import EXPLORE_PERIOD, FAR, TUNNEL_COST
from alemlite.envs.craft.world.state import CraftState
from alemlite.envs.craft.world.tiles import read_tiles


def walk(
    config: CraftConfig,
    state: CraftState,
    goal: Goal,
    tunnels: jax.Array,
    explore: jax.Array,
    detour: jax.Array,
) -> jax.Array:
    """Actions `(P,)` that bring each agent to face one of its targets, then `goal.action`.

    A distance field over the whole map per agent, from the tiles beside its targets.
    `tunnels` `(P, M)`: materials the agent mines through; `explore` `(P,)` the move of
    an agent with no route; `detour` `(P,)` bool: a random step instead of the route.
    """
    num_agents, size = config.num_agents, config.map_size
    agents, mobs = state.agents, state.mobs
    material = state.map.astype(jnp.int32)
    task = state.coordination.tile_task > 0
    avoided = avoided_tasks(state)
    targets = jnp.take(goal.materials, material, axis=1)
    targets &= ~(goal.skip_tasks[:, None, None] & avoided[None])
    grid = jnp.arange(size)
    targets |= (
        (grid[None, :, None] == goal.point[:, 0, None, None])
        & (grid[None, None, :] == goal.point[:, 1, None, None])
        & goal.has_point[:, None, None]
    )
    targets |= scatter(num_agents, size, mobs.position, goal.mobs & mobs.alive[None, :])
    any_mob = scatter(
        num_agents, size, mobs.position, jnp.broadcast_to(mobs.alive, goal.mobs.shape)
    )

    tunnel = jnp.take(tunnels, material, axis=1) & ~task[None]
    walkable = jnp.asarray(C.WALKABLE)[material][None]
    cost = jnp.where(walkable, 1, jnp.where(tunnel, TUNNEL_COST, FAR))
    others = (agents.status != C.DEAD)[None, :] & ~jnp.eye(num_agents, dtype=bool)
    cost = jnp.where(scatter(num_agents, size, agents.position, others), FAR, cost)
    agent = jnp.arange(num_agents)
    row, col = agents.position[:, 0], agents.position[:, 1]
    cost = cost.at[agent, row, col].set(1)
    goal_tiles = (cost < FAR) & any_neighbour(targets)
    distance = relax(cost, jnp.where(goal_tiles, 0, FAR), 2 * size)
    entering = jnp.minimum(distance + cost, FAR)

    steps = jnp.asarray(C.DIRECTIONS)
    around_rows = jnp.clip(row[:, None] + steps[None, :, 0], 0, size - 1)
    around_cols = jnp.clip(col[:, None] + steps[None, :, 1], 0, size - 1)
    inside = (row[:, None] + steps[None, :, 0] == around_rows) & (
        col[:, None] + steps[None, :, 1] == around_cols
    )

    def around(grid, fill):
        return jnp.where(inside, grid[agent[:, None], around_rows, around_cols], fill)

    ways = around(entering, FAR)  # (P, 4), left, right, up, down
    best = jnp.argmin(ways, axis=1)
    has_route = jnp.min(ways, axis=1) < FAR
    target_around = around(targets, False)
    facing = agents.facing
    facing_goal = jnp.take_along_axis(target_around, facing[:, None], 1)[:, 0]
    arrived = goal_tiles[agent, row, col]
    turn = C.MOVE_LEFT + jnp.argmax(target_around, axis=1)
    # A tunnel tile or a mob in the way: face it, then DO.
    in_the_way = around(tunnel | any_mob, False)
    clear = jnp.where(
        (facing == best) & jnp.take_along_axis(in_the_way, best[:, None], 1)[:, 0],
        C.DO,
        C.MOVE_LEFT + best,
    )
    route = jnp.where(has_route & ~detour, clear, explore)
    return jnp.where(facing_goal, goal.action, jnp.where(arrived, turn, route)).astype(jnp.int32)


def explore_moves(state: CraftState, num_agents: int) -> jax.Array:
    """`(P,)` the move of each exploring agent: the period's direction, or the next one
    round that is free to walk (a fixed key: the direction holds for EXPLORE_PERIOD steps)."""
    position = state.agents.position
    period = jax.random.fold_in(jax.random.PRNGKey(0), state.step // EXPLORE_PERIOD)
    turns = jax.random.randint(period, (num_agents,), 0, 4)[:, None] + jnp.arange(4)[None, :]
    around = read_tiles(state.map, position[:, None, :] + jnp.asarray(C.DIRECTIONS)[turns % 4])
    open_way = jnp.asarray(C.WALKABLE)[around]
    return jnp.where(
        jnp.any(open_way, axis=1),
        C.MOVE_LEFT + jnp.take_along_axis(turns % 4, jnp.argmax(open_way, 1)[:, None], 1)[:, 0],
        C.NOOP,
    )
