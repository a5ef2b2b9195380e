"""A hand-built Craft scene that shows every coordination line, for the golden-text tests
of the Craft prompts and the example in docs/llm_bridge.md.

The scene (three agents on a 16x16 grass map, step 41, alpha 0.6): agent 0 faces a
hard-sync tree and holds a diamond sword; a soft-sync stone, an unstarted handover on
coal and a handover on iron started by agent 1 lie in view; there are a sync site, a
handover site where agent 1 started a forge, and a built shelter; a hard elite zombie
and a soft large cow roam; agent 0 requests stone, agent 1 requests wood and last
signalled message_2; agent 2 is downed.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

from alemlite.core.errors import require
from alemlite.envs.craft import constants as C
from alemlite.envs.craft.coordination import constants as L
from alemlite.envs.craft.coordination.state import empty_coordination
from alemlite.envs.craft.world.state import fresh_agents

SCENE_MESSAGES = np.array([["", "meet at the tree", ""]], dtype=object)


def _task_byte(kind: int, quorum_roll: int) -> int:
    """A task byte; a roll of 0 asks for the whole team (alpha > 0), 63 for two agents."""
    return kind | (quorum_roll << L.TASK_KIND_BITS)


def craft_scene(env: Any, params: Any) -> Any:
    """The hand-built host state (no batch axis) of the module docstring."""
    config = env.config
    require(
        config.num_agents == 3 and config.map_size >= 16,
        f"the example scene needs num_agents=3 and map_size >= 16 "
        f"(got {config.num_agents} and {config.map_size})",
    )
    # Every table empty (no mobs, arrows or plants) and nothing generated, then the scene.
    shapes = jax.eval_shape(env.reset, jax.random.PRNGKey(0), params)[1]
    state = jax.tree.map(lambda leaf: np.zeros(leaf.shape, leaf.dtype), shapes)
    state = state.replace(
        agents=jax.device_get(fresh_agents(np.zeros((config.num_agents, 2), np.int32))),
        coordination=jax.device_get(empty_coordination(config)),
    )
    world = np.full_like(state.map, C.GRASS)
    tile_task = np.zeros_like(state.coordination.tile_task)
    for (row, col), material, byte in (
        ((7, 8), C.TREE, _task_byte(L.TASK_HARD_SYNC, 0)),
        ((8, 11), C.STONE, _task_byte(L.TASK_SOFT_SYNC, 63)),
        ((6, 6), C.IRON, _task_byte(L.TASK_HANDOVER, 0)),
        ((10, 9), C.COAL, _task_byte(L.TASK_HANDOVER, 0)),
        ((5, 12), C.WATER, 0),
    ):
        world[row, col], tile_task[row, col] = material, byte

    agents = state.agents
    stats, inventory = agents.stats.copy(), agents.inventory.copy()
    stats[2, C.HEALTH] = 0
    inventory[0, C.INV_WOOD] = 2
    agents = agents.replace(
        position=np.array([[8, 8], [8, 9], [9, 8]], np.int32),
        facing=np.array([2, 0, 2], np.int32),  # up, left, up
        stats=stats,
        inventory=inventory,
        status=np.array([C.ALIVE, C.ALIVE, C.DOWNED], np.int32),
        downed_timer=np.array([0, 0, 12], np.int32),
    )

    kinds = config.mob_kinds()
    zombie, cow = int(np.flatnonzero(kinds == C.ZOMBIE)[0]), int(np.flatnonzero(kinds == C.COW)[0])
    alive = np.zeros_like(state.mobs.alive)
    mob_position, health = state.mobs.position.copy(), state.mobs.health.copy()
    mob_elite = np.zeros_like(state.coordination.mob_elite)
    alive[[zombie, cow]] = True
    mob_position[zombie], mob_position[cow] = (5, 8), (11, 11)
    health[zombie] = C.ZOMBIE_HEALTH * L.ELITE_HEALTH_FACTOR
    health[cow] = C.COW_HEALTH * L.ELITE_HEALTH_FACTOR
    mob_elite[zombie], mob_elite[cow] = L.ELITE_HARD, L.ELITE_SOFT

    coordination = state.coordination
    task_position, task_starter, task_timer = (
        coordination.task_position.copy(),
        coordination.task_starter.copy(),
        coordination.task_timer.copy(),
    )
    task_position[0], task_starter[0], task_timer[0] = (6, 6), 1, 4  # agent 1 started the iron

    sites = coordination.sites
    slots = sites.task.shape[0]
    site_position = np.zeros((slots, 2), np.int16)
    site_task = np.zeros(slots, np.uint8)
    building, starter, pending = (np.full(slots, -1, np.int8) for _ in range(3))
    site_timer = np.zeros(slots, np.int16)
    site_position[:3] = (6, 10), (10, 6), (11, 4)
    site_task[:3] = (
        _task_byte(L.TASK_HARD_SYNC, 63),
        _task_byte(L.TASK_HANDOVER, 0),
        _task_byte(L.TASK_HARD_SYNC, 0),
    )
    starter[1], pending[1], site_timer[1] = 1, L.BUILDINGS.index("forge"), 5
    building[2] = L.BUILDINGS.index("shelter")
    for slot in range(3):
        standing = building[slot]
        world[tuple(site_position[slot])] = (
            L.SITE if standing < 0 else L.BUILDING_MATERIAL[standing]
        )

    resource = L.REQUEST_RESOURCES.index
    coordination = coordination.replace(
        tile_task=tile_task,
        task_position=task_position,
        task_starter=task_starter,
        task_timer=task_timer,
        request_item=np.array([resource("stone"), resource("wood"), -1], np.int8),
        request_timer=np.array([3, 7, 0], np.int16),
        last_message=np.array([-1, 2, -1], np.int8),
        mob_elite=mob_elite,
        alpha=np.float32(0.6),
        sites=sites.replace(
            position=site_position,
            task=site_task,
            building=building,
            starter=starter,
            pending=pending,
            timer=site_timer,
        ),
        diamond_sword=np.array([True, False, False]),
    )
    return state.replace(
        map=world,
        agents=agents,
        mobs=state.mobs.replace(alive=alive, position=mob_position, health=health),
        coordination=coordination,
        step=np.int32(40),
    )


def batched(state: Any) -> Any:
    """A batch of one episode."""
    return jax.tree.map(lambda leaf: np.asarray(leaf)[None], state)
