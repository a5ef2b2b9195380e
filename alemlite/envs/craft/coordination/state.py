"""The coordination layer's state: task and request tables, sites, counters.

One `CoordinationState` holds every part's tables; a part that is off leaves its own
at their empty values (`empty_coordination`), so the state's shape depends only on the
config's sizes. `tile_task` holds one byte per tile (task kind and quorum roll) and is
the only table that scales with the map; pending handovers tick in the task table,
trade requests and messages in per-agent slots, construction in the site table.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from alemlite.envs.craft.config import CraftConfig
from alemlite.envs.craft.coordination import constants as L


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
    """Every part's tables (see the module docstring)."""

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
        achievements=jnp.zeros((agents, L.NUM_COORDINATION_ACHIEVEMENTS), bool),
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
        buildings_built=jnp.zeros((L.NUM_BUILDINGS,), jnp.int16),
        diamond_swords=jnp.int16(0),
    )
