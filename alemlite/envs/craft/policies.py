"""Reference policies for the Craft world: `policy(key, state, params) -> actions (P,)`.

`random`: uniform over each agent's legal actions. `noop`: always noop. `scripted`:
a greedy crafter that makes the first tool it lacks, places a table and a furnace
when it can, works the tile it faces when that yields something, sleeps when tired,
and otherwise wanders. `team`: the scripted crafter plus task teamwork: an agent
facing a sync tile it can work waits there doing DO; the others walk to it (or to a
pending handover a teammate started) and DO it too. All are jittable.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp

from alemlite.envs.craft import constants as C
from alemlite.envs.craft.env import CraftEnv
from alemlite.envs.craft.gathering import facing_target, mob_at, near_stations
from alemlite.envs.craft.state import CraftState
from alemlite.envs.craft.tasks import task_kind
from alemlite.envs.craft.tiles import read_tiles

# Make actions in the order the scripted policy prefers them.
MAKE_PREFERENCE = (
    C.MAKE_WOOD_PICKAXE,
    C.MAKE_STONE_PICKAXE,
    C.MAKE_IRON_PICKAXE,
    C.MAKE_WOOD_SWORD,
    C.MAKE_STONE_SWORD,
    C.MAKE_IRON_SWORD,
)


def random_policy(env: CraftEnv) -> Callable:
    def policy(key: jax.Array, state: CraftState, params) -> jax.Array:
        mask = env.action_mask(state, params)
        return jax.random.categorical(key, jnp.where(mask, 0.0, -jnp.inf)).astype(jnp.int32)

    return policy


def noop_policy(env: CraftEnv) -> Callable:
    def policy(key: jax.Array, state: CraftState, params) -> jax.Array:
        return jnp.zeros((env.num_agents,), jnp.int32)

    return policy


def scripted_policy(env: CraftEnv) -> Callable:
    def policy(key: jax.Array, state: CraftState, params) -> jax.Array:
        agents = state.agents
        mask = env.action_mask(state, params)
        inventory = agents.inventory
        preference = jnp.asarray(MAKE_PREFERENCE)
        lacking = inventory[:, jnp.asarray(C.MAKE_ITEM)] == 0
        makeable = mask[:, preference] & lacking
        make = preference[jnp.argmax(makeable, axis=1)]

        target = facing_target(state)
        material = read_tiles(state.map, target)
        tool = jnp.asarray(C.COLLECT_TOOL)[material]
        has_tool = (tool < 0) | (jnp.take_along_axis(inventory, tool[:, None], 1)[:, 0] > 0)
        item = jnp.asarray(C.COLLECT_ITEM)[material]
        item_count = jnp.take_along_axis(inventory, jnp.maximum(item, 0)[:, None], 1)[:, 0]
        useful = (
            ((item >= 0) & (material != C.GRASS) & has_tool & (item_count < C.INVENTORY_MAX))
            | ((material == C.WATER) & (agents.stats[:, C.DRINK] < C.STAT_MAX))
            | (material == C.RIPE_PLANT)
            | jnp.any(mob_at(state, target), axis=1)
        )
        near_table, near_furnace = near_stations(state)
        # A table only while a pickaxe is still to be made, so tables do not pile up.
        wants_pickaxe = (inventory[:, C.INV_WOOD_PICKAXE] == 0) | (
            (inventory[:, C.INV_STONE] > 0) & (inventory[:, C.INV_STONE_PICKAXE] == 0)
        )
        table = (
            mask[:, C.PLACE_TABLE] & ~near_table & wants_pickaxe & (inventory[:, C.INV_WOOD] >= 2)
        )
        furnace = mask[:, C.PLACE_FURNACE] & ~near_furnace
        tired = mask[:, C.SLEEP] & (agents.stats[:, C.ENERGY] < 3)
        wander = jax.random.randint(key, (env.num_agents,), C.MOVE_LEFT, C.MOVE_DOWN + 1)
        wander = jnp.where(mask[jnp.arange(env.num_agents), wander], wander, C.NOOP)
        return jnp.select(
            [jnp.any(makeable, axis=1), table, furnace, useful, tired],
            [
                make,
                jnp.full_like(make, C.PLACE_TABLE),
                jnp.full_like(make, C.PLACE_FURNACE),
                jnp.full_like(make, C.DO),
                jnp.full_like(make, C.SLEEP),
            ],
            wander,
        ).astype(jnp.int32)

    return policy


def step_toward(offset: jax.Array) -> jax.Array:
    """Move action along the longer axis of `offset` `(P, 2)`; facing a solid tile turns."""
    along_rows = jnp.abs(offset[:, 0]) >= jnp.abs(offset[:, 1])
    vertical = jnp.where(offset[:, 0] < 0, C.MOVE_UP, C.MOVE_DOWN)
    horizontal = jnp.where(offset[:, 1] < 0, C.MOVE_LEFT, C.MOVE_RIGHT)
    return jnp.where(along_rows, vertical, horizontal)


def team_policy(env: CraftEnv) -> Callable:
    crafter = scripted_policy(env)
    num_agents = env.num_agents

    def policy(key: jax.Array, state: CraftState, params) -> jax.Array:
        crafter_key, detour_key = jax.random.split(key)
        fallback = crafter(crafter_key, state, params)
        if not env.config.has_tasks:
            return fallback
        agents, coordination = state.agents, state.coordination
        target = facing_target(state)
        material = read_tiles(state.map, target)
        clipped = jnp.clip(target, 0, env.config.map_size - 1)
        kind = task_kind(coordination.tile_task[clipped[:, 0], clipped[:, 1]])
        tool = jnp.asarray(C.COLLECT_TOOL)[material]
        has_tool = (tool < 0) | (jnp.take_along_axis(agents.inventory, tool[:, None], 1)[:, 0] > 0)
        able = (agents.status == C.ALIVE) & ~agents.sleeping  # others may only noop
        on_sync = (kind >= C.TASK_SOFT_SYNC) & has_tool & able
        # A meeting point: the first sync tile a teammate waits at, else a pending handover.
        pending = coordination.task_starter >= 0
        handover_at = coordination.task_position[jnp.argmax(pending)].astype(jnp.int32)
        meeting = jnp.where(jnp.any(on_sync), target[jnp.argmax(on_sync)], handover_at)
        has_meeting = jnp.any(on_sync) | jnp.any(pending)
        starter = coordination.task_starter[jnp.argmax(pending)]
        own_handover = ~jnp.any(on_sync) & (jnp.arange(num_agents) == starter)
        facing_meeting = jnp.all(target == meeting[None, :], axis=1)
        go = step_toward(meeting[None, :] - agents.position)
        # A random step now and then gets round obstacles.
        detour = jax.random.randint(detour_key, (num_agents,), C.MOVE_LEFT, C.MOVE_DOWN + 1)
        go = jnp.where(jax.random.uniform(detour_key, (num_agents,)) < 0.2, detour, go)
        joining = has_meeting & ~own_handover & ~on_sync & able
        action = jnp.where(joining, jnp.where(facing_meeting, C.DO, go), fallback)
        action = jnp.where(on_sync | (joining & facing_meeting), C.DO, action)
        return jnp.where(able, action, C.NOOP).astype(jnp.int32)

    return policy


POLICIES: dict[str, Callable[[CraftEnv], Callable]] = {
    "random": random_policy,
    "noop": noop_policy,
    "scripted": scripted_policy,
    "team": team_policy,
}
