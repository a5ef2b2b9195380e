"""Hand-built Craft states for tests: an all-grass map with no mobs and no spawning."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from alemlite.envs.craft import constants as C
from alemlite.envs.craft.env import CraftEnv
from alemlite.envs.craft.world.state import CraftState


@functools.cache
def _jitted_generate(env: CraftEnv):
    return jax.jit(env.generate)


def generated_world(env: CraftEnv, key: jax.Array) -> CraftState:
    """A generated world, from the generator `blank_state` compiles anyway."""
    return _jitted_generate(env)(key, env.default_params)


def quiet_params(env: CraftEnv):
    """Default params without spawning or despawning."""
    return env.default_params.replace(
        zombie_spawn_probability=jnp.float32(0.0),
        skeleton_spawn_probability=jnp.float32(0.0),
        cow_spawn_probability=jnp.float32(0.0),
        despawn_probability=jnp.float32(0.0),
    )


def blank_state(env: CraftEnv, positions, facing=None) -> CraftState:
    """All grass, agents at `positions` (row, col), no mobs, arrows, plants or sites."""
    state = _jitted_generate(env)(jax.random.PRNGKey(0), env.default_params)
    size = env.config.map_size
    facing = jnp.full((env.num_agents,), 3) if facing is None else jnp.asarray(facing)
    return state.replace(
        map=jnp.full((size, size), C.GRASS, jnp.uint8),
        agents=state.agents.replace(
            position=jnp.asarray(positions, jnp.int32), facing=facing.astype(jnp.int32)
        ),
        mobs=state.mobs.replace(alive=jnp.zeros_like(state.mobs.alive)),
        coordination=state.coordination.replace(
            sites=state.coordination.sites.replace(
                task=jnp.zeros_like(state.coordination.sites.task)
            )
        ),
        grass_tiles=jnp.int32(size * size),
    )


def set_tiles(state: CraftState, tiles: dict[tuple[int, int], int]) -> CraftState:
    world = state.map
    for (row, col), material in tiles.items():
        world = world.at[row, col].set(material)
    return state.replace(map=world)


def set_inventory(state: CraftState, agent: int, **items: int) -> CraftState:
    inventory = state.agents.inventory
    for name, amount in items.items():
        inventory = inventory.at[agent, C.INVENTORY.index(name)].set(amount)
    return state.replace(agents=state.agents.replace(inventory=inventory))


def place_mob(state: CraftState, slot: int, position, health: int | None = None) -> CraftState:
    mobs = state.mobs
    return state.replace(
        mobs=mobs.replace(
            position=mobs.position.at[slot].set(jnp.asarray(position)),
            alive=mobs.alive.at[slot].set(True),
            health=mobs.health if health is None else mobs.health.at[slot].set(health),
            cooldown=mobs.cooldown.at[slot].set(0),
        )
    )
