"""The state of one Craft world: the material grid and small fixed-size tables.

Only the material grid scales with the map; everything that ticks (agents, mobs,
arrows, plants) lives in tables whose size is fixed by `WorldConfig`, so a step never
sweeps the map. The coordination layer's state rides along in `CraftState.coordination`
(`coordination/state.py`); the world only carries it.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from alemlite.envs.craft import constants as C


@struct.dataclass
class AgentState:
    position: jax.Array  # (P, 2) int32, (row, col)
    facing: jax.Array  # (P,) int32, index into DIRECTIONS
    stats: jax.Array  # (P, 4) int32: health, food, drink, energy in 0..9
    counters: jax.Array  # (P, 4) int32: hunger, thirst, fatigue, recover in half units
    inventory: jax.Array  # (P, 12) int32 in 0..9
    sleeping: jax.Array  # (P,) bool
    status: jax.Array  # (P,) int32: ALIVE, DOWNED or DEAD
    downed_timer: jax.Array  # (P,) int32, steps left to be revived
    achievements: jax.Array  # (P, 22) bool, unlocked this episode


@struct.dataclass
class MobState:
    """Zombies, skeletons and cows; a slot's kind is fixed by `WorldConfig.mob_kinds`."""

    position: jax.Array  # (N, 2) int32
    health: jax.Array  # (N,) int32
    alive: jax.Array  # (N,) bool
    cooldown: jax.Array  # (N,) int32: zombie attack cooldown, skeleton reload


@struct.dataclass
class ArrowState:
    position: jax.Array  # (A, 2) int32
    direction: jax.Array  # (A,) int32, index into DIRECTIONS
    alive: jax.Array  # (A,) bool


@struct.dataclass
class PlantState:
    """Growth timers of placed saplings; the map holds SAPLING or RIPE_PLANT there."""

    position: jax.Array  # (K, 2) int32
    grown: jax.Array  # (K,) int32, steps since planted or last eaten
    alive: jax.Array  # (K,) bool


@struct.dataclass
class CraftState:
    map: jax.Array  # (S, S) uint8 material codes
    agents: AgentState
    mobs: MobState
    arrows: ArrowState
    plants: PlantState
    coordination: Any  # the coordination layer's state, which the world never reads
    step: jax.Array  # () int32, steps taken in this episode
    grass_tiles: jax.Array  # () int32, grass count at generation (spawn targets)
    path_tiles: jax.Array  # () int32, path count at generation (skeleton targets)


def fresh_agents(position: jax.Array) -> AgentState:
    """Agents at `position` with Crafter's starting stats, facing down."""
    num_agents = position.shape[0]
    return AgentState(
        position=position.astype(jnp.int32),
        facing=jnp.full((num_agents,), 3, jnp.int32),
        stats=jnp.full((num_agents, len(C.STATS)), C.STAT_MAX, jnp.int32),
        counters=jnp.zeros((num_agents, len(C.COUNTERS)), jnp.int32),
        inventory=jnp.zeros((num_agents, C.NUM_ITEMS), jnp.int32),
        sleeping=jnp.zeros((num_agents,), bool),
        status=jnp.full((num_agents,), C.ALIVE, jnp.int32),
        downed_timer=jnp.zeros((num_agents,), jnp.int32),
        achievements=jnp.zeros((num_agents, C.NUM_ACHIEVEMENTS), bool),
    )


def state_nbytes(state: CraftState) -> int:
    """Bytes held by one environment's state."""
    return int(sum(np.asarray(leaf).nbytes for leaf in jax.tree.leaves(state)))
