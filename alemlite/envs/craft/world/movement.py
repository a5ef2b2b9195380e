"""Agent movement and facing, with collisions resolved deterministically.

A move action always turns the agent. It then steps forward if the tile ahead is in
the map, enterable (grass, sand, path, or lava, which kills), free of mobs, and not
occupied by any agent at the start of the move. When several agents step into one
tile, the lowest index enters and the others only turn. An agent following another
that moves away in the same step waits one step (no chains or swaps), so no two
agents ever share a tile.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from alemlite.envs.craft import constants as C
from alemlite.envs.craft.world.gathering import agent_blocking, mob_at
from alemlite.envs.craft.world.state import CraftState
from alemlite.envs.craft.world.tiles import first_claim, read_tiles


def move_agents(state: CraftState, actions: jax.Array) -> CraftState:
    """Turn and move agents whose action `(P,)` is a move; kill those entering lava."""
    agents = state.agents
    moving = (actions >= C.MOVE_LEFT) & (actions <= C.MOVE_DOWN)
    facing = jnp.where(moving, actions - C.MOVE_LEFT, agents.facing)
    target = agents.position + jnp.asarray(C.DIRECTIONS)[facing]
    material = read_tiles(state.map, target)
    free = (
        jnp.asarray(C.AGENT_ENTERABLE)[material]
        & ~jnp.any(agent_blocking(state, target), axis=1)
        & ~jnp.any(mob_at(state, target), axis=1)
    )
    stepping = first_claim(moving & free, target)
    position = jnp.where(stepping[:, None], target, agents.position)
    into_lava = stepping & (material == C.LAVA)
    return state.replace(
        agents=agents.replace(
            position=position,
            facing=facing,
            stats=agents.stats.at[:, C.HEALTH].set(
                jnp.where(into_lava, 0, agents.stats[:, C.HEALTH])
            ),
            status=jnp.where(into_lava, C.DEAD, agents.status),
        )
    )
