"""The state of one Craft world: two byte grids and small fixed-size tables.

Only the material grid and the per-tile task bytes scale with the map; everything
that ticks (agents, mobs, arrows, plants, tasks, requests, construction sites) lives
in tables whose size is fixed by `CraftConfig`, so a step never sweeps the map.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from alemlite.envs.craft import constants as C
from alemlite.envs.craft.config import CraftConfig


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
    """Zombies, skeletons and cows; a slot's kind is fixed by `CraftConfig.mob_kinds`."""

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
class SiteState:
    """Construction sites (Q = `site_slots`); the map holds SITE, then the building.

    `task` is a task byte (see constants): TASK_HARD_SYNC or TASK_HANDOVER and the
    quorum roll, 0 for an empty slot. A started handover build keeps its starter, the
    building it started and the steps left to finish it.
    """

    position: jax.Array  # (Q, 2) int16
    task: jax.Array  # (Q,) uint8, 0: no site in this slot
    building: jax.Array  # (Q,) int8, -1 unbuilt, else 0 shelter, 1 forge, 2 beacon
    starter: jax.Array  # (Q,) int8, agent that started a handover build, -1 none
    pending: jax.Array  # (Q,) int8, building a started handover will make, -1 none
    timer: jax.Array  # (Q,) int16, steps left to finish a started handover


@struct.dataclass
class CoordinationState:
    """The coordination layer's state; it keeps its empty values while the layer is off.

    `tile_task` holds one byte per tile (task kind and quorum); pending handovers and
    tasks tick in the task table, trade requests and messages in per-agent slots.
    """

    tile_task: jax.Array  # (S, S) uint8
    task_position: jax.Array  # (T, 2) int16
    task_timer: jax.Array  # (T,) int16
    task_starter: jax.Array  # (T,) int8, -1 when empty
    request_item: jax.Array  # (P,) int8, -1 when no open request
    request_timer: jax.Array  # (P,) int16
    last_message: jax.Array  # (P,) int8, -1 when silent
    alpha: jax.Array  # () float32, this episode's difficulty (set by reset_from)
    mob_elite: jax.Array  # (N,) int8: ELITE_NONE, ELITE_SOFT or ELITE_HARD per mob slot
    achievements: jax.Array  # (P, C) bool, coordination achievements unlocked
    # Episode counters: completed syncs and handovers, lapsed handovers, failed solo
    # attempts (sync DOs short of the quorum that yielded nothing), gives, revives.
    syncs: jax.Array  # () int16
    handovers: jax.Array  # () int16
    lapsed: jax.Array  # () int16
    failed_solo: jax.Array  # () int16
    gives: jax.Array  # () int16
    revives: jax.Array  # () int16
    # Construction: sites, diamond swords held, buildings built per kind, swords made.
    sites: SiteState
    diamond_sword: jax.Array  # (P,) bool
    buildings_built: jax.Array  # (3,) int16: shelters, forges, beacons
    diamond_swords: jax.Array  # () int16, swords made (two per forging)


@struct.dataclass
class CraftState:
    map: jax.Array  # (S, S) uint8 material codes
    agents: AgentState
    mobs: MobState
    arrows: ArrowState
    plants: PlantState
    coordination: CoordinationState
    step: jax.Array  # () int32, steps taken in this episode
    grass_tiles: jax.Array  # () int32, grass count at generation (spawn targets)
    path_tiles: jax.Array  # () int32, path count at generation (skeleton targets)


def empty_coordination(config: CraftConfig) -> CoordinationState:
    size, slots, agents = config.map_size, config.task_slots, config.num_agents
    return CoordinationState(
        tile_task=jnp.zeros((size, size), jnp.uint8),
        task_position=jnp.zeros((slots, 2), jnp.int16),
        task_timer=jnp.zeros((slots,), jnp.int16),
        task_starter=jnp.full((slots,), -1, jnp.int8),
        request_item=jnp.full((agents,), -1, jnp.int8),
        request_timer=jnp.zeros((agents,), jnp.int16),
        last_message=jnp.full((agents,), -1, jnp.int8),
        alpha=jnp.float32(0.0),
        mob_elite=jnp.zeros((config.num_mobs,), jnp.int8),
        achievements=jnp.zeros((agents, C.NUM_COORDINATION_ACHIEVEMENTS), bool),
        syncs=jnp.int16(0),
        handovers=jnp.int16(0),
        lapsed=jnp.int16(0),
        failed_solo=jnp.int16(0),
        gives=jnp.int16(0),
        revives=jnp.int16(0),
        sites=SiteState(
            position=jnp.zeros((config.site_slots, 2), jnp.int16),
            task=jnp.zeros((config.site_slots,), jnp.uint8),
            building=jnp.full((config.site_slots,), -1, jnp.int8),
            starter=jnp.full((config.site_slots,), -1, jnp.int8),
            pending=jnp.full((config.site_slots,), -1, jnp.int8),
            timer=jnp.zeros((config.site_slots,), jnp.int16),
        ),
        diamond_sword=jnp.zeros((agents,), bool),
        buildings_built=jnp.zeros((C.NUM_BUILDINGS,), jnp.int16),
        diamond_swords=jnp.int16(0),
    )


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
