"""Reference policies for the Craft world: `policy(key, state, params) -> actions (P,)`.

`random`: uniform over each agent's legal actions. `noop`: always noop. `scripted`:
a greedy crafter per agent that makes the first tool it lacks, places a table and a
furnace when it can, works the tile it faces when that yields something, sleeps when
tired, and otherwise wanders; it ignores the coordination layer. `team`
(`team_policy/`): a coordinating reference team that divides the work by role
(the miner mines and makes pickaxes, the warrior fights and makes swords, the
forager drinks and hunts for the others), completes sync and handover tasks
together, builds shelter, forge and beacon on the construction sites and makes
diamond swords at the forge, answers teammates' requests with gives and revives
downed teammates. All are jittable and vmappable.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp

from alemlite.envs.craft import constants as C
from alemlite.envs.craft.env import CraftEnv
from alemlite.envs.craft.team_policy import team_policy
from alemlite.envs.craft.world.gathering import facing_target, mob_at, near_stations
from alemlite.envs.craft.world.state import CraftState
from alemlite.envs.craft.world.tiles import read_tiles

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


POLICIES: dict[str, Callable[[CraftEnv], Callable]] = {
    "random": random_policy,
    "noop": noop_policy,
    "scripted": scripted_policy,
    "team": team_policy,
}
