"""Coordination tasks on tree / stone / coal / iron / diamond tiles: syncs and handovers.

Each task tile holds one byte (see constants): its kind and a quorum roll. Only the
few tiles agents face are read at a step; pending handovers live in the fixed task
table, where their windows tick.

A DO by an agent that may work the tile (it has the tool and passed its role check)
on a task tile is taken over here:
- sync: the k agents needed DO it on one step -> each receives k(k+1)/2 units, the
  tile is consumed as usual and its task is done. Fewer agents: a hard sync gives
  nothing; a soft one lets each attempt succeed alone with probability 1 - alpha
  (a normal collect that leaves the task in place); misses count as failed solo attempts.
- handover: a DO with no pending handover starts one (nothing collected) with a window
  drawn from [max(3, ceil(12(1-alpha))), max(6, ceil(24(1-alpha)))]; a DO by a
  *different* agent inside the window completes it: starter and finisher each receive
  HANDOVER_YIELD units and the task is done. A DO by the starter changes nothing. A
  window that runs out lapses (the tile stays a handover task).
A completed task's byte is cleared, and so is the byte of any consumed tile.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from alemlite.core import threefry
from alemlite.envs.craft import constants as C
from alemlite.envs.craft.config import CraftConfig, CraftParams
from alemlite.envs.craft.coordination import constants as L
from alemlite.envs.craft.coordination.part import Draws, Part, Turn
from alemlite.envs.craft.coordination.state import CoordinationState
from alemlite.envs.craft.world.gathering import add_items, facing_target
from alemlite.envs.craft.world.observation import window_grid, window_offsets
from alemlite.envs.craft.world.rendering import Marks
from alemlite.envs.craft.world.slots import free_slots_first
from alemlite.envs.craft.world.state import CraftState
from alemlite.envs.craft.world.tiles import in_bounds, read_tiles, same_tile, write_tiles

RANDOM_DRAWS = 2  # per agent: solo success of a soft sync, handover window
CHANNELS = 3 + 1 + 1  # window channels: kind one-hot, quorum / P, handover window left
MAX_WINDOW = 24  # the longest handover window (alpha = 0)


def lay_tasks(key: jax.Array, config: CraftConfig, material: jax.Array) -> jax.Array:
    """Task bytes `(S, S)` over a generated map (at generation, never inside a step)."""
    presence, kind_roll, quorum_roll = threefry.uniform(key, (3, *material.shape))
    is_task = jnp.asarray(L.TASK_MATERIALS)[material] & (presence < config.task_probability)
    kind = jnp.where(
        kind_roll < L.HANDOVER_SHARE,
        L.TASK_HANDOVER,
        jnp.where(kind_roll < (1 + L.HANDOVER_SHARE) / 2, L.TASK_SOFT_SYNC, L.TASK_HARD_SYNC),
    )
    quorum = jnp.floor(quorum_roll * L.QUORUM_LEVELS).astype(jnp.int32)
    return jnp.where(is_task, kind | (quorum << L.TASK_KIND_BITS), 0).astype(jnp.uint8)


def task_kind(byte: jax.Array) -> jax.Array:
    return byte.astype(jnp.int32) & ((1 << L.TASK_KIND_BITS) - 1)


def quorum(byte: jax.Array, alpha: jax.Array, num_agents: int) -> jax.Array:
    """Agents a sync needs: P with probability alpha (by the tile's roll), else 2; at most P."""
    roll = byte.astype(jnp.int32) >> L.TASK_KIND_BITS
    needed = jnp.where(roll < alpha * L.QUORUM_LEVELS, num_agents, 2)
    return jnp.minimum(needed, num_agents)


def handover_window_range(alpha: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Shortest and longest window a handover started at difficulty `alpha` may get."""
    low = jnp.maximum(3, jnp.ceil(12 * (1 - alpha))).astype(jnp.int32)
    high = jnp.maximum(6, jnp.ceil(24 * (1 - alpha))).astype(jnp.int32)
    return low, high


def handover_window(alpha: jax.Array, roll: jax.Array) -> jax.Array:
    """A window drawn uniformly from the difficulty's range."""
    low, high = handover_window_range(alpha)
    return low + jnp.floor(roll * (high - low + 1)).astype(jnp.int32)


def resolve_tasks(
    config: CraftConfig, state: CraftState, working: jax.Array, uniform: jax.Array
) -> tuple[CraftState, jax.Array]:
    """Take over DOs on task tiles; returns the state and which DOs still go to `do_action`.

    `working` `(P,)`: agents doing DO after their role check; those with the tool the
    tile needs take part. `uniform` `(P, RANDOM_DRAWS)`.
    """
    num_agents = config.num_agents
    coordination, agents = state.coordination, state.agents
    alpha = coordination.alpha
    target = facing_target(state)
    material = read_tiles(state.map, target)
    size = config.map_size
    clipped = jnp.clip(target, 0, size - 1)
    byte = coordination.tile_task[clipped[:, 0], clipped[:, 1]]
    tool = jnp.asarray(C.COLLECT_TOOL)[material]
    has_tool = (tool < 0) | (jnp.take_along_axis(agents.inventory, tool[:, None], 1)[:, 0] > 0)
    working &= has_tool & jnp.asarray(L.TASK_MATERIALS)[material]
    kind = jnp.where(working, task_kind(byte), L.TASK_NONE)
    item = jnp.asarray(C.COLLECT_ITEM)[material]
    together = same_tile(target, target)  # (P, P)

    # Syncs.
    syncing = (kind == L.TASK_SOFT_SYNC) | (kind == L.TASK_HARD_SYNC)
    partners = jnp.sum(together & syncing[None, :], axis=1)
    needed = quorum(byte, alpha, num_agents)
    met = syncing & (partners >= needed)
    lucky = uniform[:, 0] < 1.0 - alpha
    solo_collect = syncing & ~met & (kind == L.TASK_SOFT_SYNC) & lucky
    failed = syncing & ~met & ~solo_collect
    sync_yield = needed * (needed + 1) // 2

    # Handovers: match each DO against the pending table.
    handing = kind == L.TASK_HANDOVER
    table_hit = (
        same_tile(target, coordination.task_position.astype(jnp.int32))
        & (coordination.task_starter >= 0)[None, :]
    )  # (P, T)
    pending = jnp.any(table_hit, axis=1)
    slot = jnp.argmax(table_hit, axis=1)
    starter = coordination.task_starter[slot].astype(jnp.int32)
    finishing = handing & pending & (starter != jnp.arange(num_agents))
    # One finisher per handover (the lowest index); it credits the starter too.
    earlier = jnp.tril(jnp.ones((num_agents, num_agents), bool), k=-1)
    finishing &= ~jnp.any(earlier & together & finishing[None, :], axis=1)
    starting = handing & ~pending
    starting &= ~jnp.any(earlier & together & starting[None, :], axis=1)
    # Starters take free slots in agent order; without a free slot nothing starts.
    free_slots = free_slots_first(coordination.task_starter >= 0)
    rank = jnp.clip(jnp.cumsum(starting) - 1, 0, config.task_slots - 1)
    new_slot = free_slots[rank]
    starting &= (jnp.cumsum(starting) <= config.task_slots) & (
        coordination.task_starter[new_slot] < 0
    )
    credited_starter = jnp.zeros((num_agents,), bool).at[starter].max(finishing)

    # Yields: syncs give each participant k(k+1)/2; handovers give both parties HANDOVER_YIELD.
    amount = jnp.where(met, sync_yield, 0) + jnp.where(finishing, L.HANDOVER_YIELD, 0)
    inventory = add_items(agents.inventory, jnp.where(amount > 0, item, -1), amount)
    # The starter may now face elsewhere: it receives the finisher's item.
    starter_item = (
        jnp.zeros((num_agents,), jnp.int32).at[starter].max(jnp.where(finishing, item + 1, 0)) - 1
    )
    inventory = add_items(
        inventory,
        jnp.where(credited_starter, starter_item, -1),
        jnp.full_like(item, L.HANDOVER_YIELD),
    )

    # Tiles: a completed task's byte clears; consumed tiles become what they leave.
    done = met | finishing
    leaves = jnp.asarray(C.COLLECT_LEAVES)[material]
    world = write_tiles(state.map, target, leaves, done & (leaves != material))
    tile_task = write_tiles(coordination.tile_task, target, jnp.zeros_like(material), done)
    achievement_index = jnp.asarray(C.COLLECT_ACHIEVEMENT)[material]
    starter_achievement = (
        jnp.zeros((num_agents,), jnp.int32)
        .at[starter]
        .max(jnp.where(finishing, achievement_index + 1, 0))
        - 1
    )
    achievement_index = jnp.where(done, achievement_index, starter_achievement)
    hit = (jnp.arange(C.NUM_ACHIEVEMENTS)[None, :] == achievement_index[:, None]) & (
        done | credited_starter
    )[:, None]
    base_achievements = agents.achievements | hit

    # The task table: clear finished slots, fill new ones.
    finished_slot = jnp.where(finishing, slot, config.task_slots)
    task_starter = coordination.task_starter.at[finished_slot].set(-1, mode="drop")
    start_slot = jnp.where(starting, new_slot, config.task_slots)
    window = handover_window(alpha, uniform[:, 1])
    task_starter = task_starter.at[start_slot].set(
        jnp.arange(num_agents, dtype=jnp.int8), mode="drop"
    )
    task_position = coordination.task_position.at[start_slot].set(
        target.astype(jnp.int16), mode="drop"
    )
    # Stored as steps left after this one: the finisher may act on the next `window` steps.
    task_timer = coordination.task_timer.at[start_slot].set(
        (window + 1).astype(jnp.int16), mode="drop"
    )

    syncs_done = jnp.sum(jnp.where(met, 1.0 / jnp.maximum(partners, 1), 0.0))
    coordination_achievements = (
        coordination.achievements.at[:, L.COORDINATION_INDEX["complete_sync"]]
        .max(met)
        .at[:, L.COORDINATION_INDEX["complete_handover"]]
        .max(finishing | credited_starter)
    )
    coordination = coordination.replace(
        tile_task=tile_task,
        task_position=task_position,
        task_timer=task_timer,
        task_starter=task_starter,
        achievements=coordination_achievements,
        syncs=coordination.syncs + jnp.round(syncs_done).astype(jnp.int16),
        handovers=coordination.handovers + jnp.sum(finishing).astype(jnp.int16),
        failed_solo=coordination.failed_solo + jnp.sum(failed).astype(jnp.int16),
    )
    state = state.replace(
        map=world,
        coordination=coordination,
        agents=agents.replace(inventory=inventory, achievements=base_achievements),
    )
    passthrough = (kind == L.TASK_NONE) | solo_collect
    return state, passthrough


def count_down(starter: jax.Array, timer: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """One step off the windows of started handovers (`starter >= 0`): the new starters
    (-1 where a window ran out), the new timers, and which lapsed."""
    pending = starter >= 0
    timer = timer - pending.astype(jnp.int16)
    lapses = pending & (timer <= 0)
    return (
        jnp.where(lapses, -1, starter).astype(jnp.int8),
        jnp.where(pending & ~lapses, timer, 0).astype(jnp.int16),
        lapses,
    )


def tick_handovers(coordination: CoordinationState) -> CoordinationState:
    """At the end of a step, windows of pending handovers shrink; those at zero lapse."""
    starter, timer, lapses = count_down(coordination.task_starter, coordination.task_timer)
    return coordination.replace(
        task_timer=timer,
        task_starter=starter,
        lapsed=coordination.lapsed + jnp.sum(lapses).astype(jnp.int16),
    )


def clear_consumed(
    coordination: CoordinationState, before: jax.Array, after: jax.Array, target: jax.Array
) -> CoordinationState:
    """Clear the task byte of faced tiles whose material changed this step."""
    changed = read_tiles(before, target) != read_tiles(after, target)
    return coordination.replace(
        tile_task=write_tiles(
            coordination.tile_task, target, jnp.zeros((target.shape[0],), jnp.int32), changed
        )
    )


def task_planes(config: CraftConfig, state: CraftState) -> jax.Array:
    """`(P, H, W, CHANNELS)`: task kind one-hot, quorum / P, handover window left."""
    coordination = state.coordination
    grid = window_grid(config, state)
    inside = in_bounds(grid, config.map_size)
    clipped = jnp.clip(grid, 0, config.map_size - 1)
    byte = jnp.where(inside, coordination.tile_task[clipped[..., 0], clipped[..., 1]], 0)
    kind = task_kind(byte)
    kind_planes = jax.nn.one_hot(kind - 1, 3)  # "none" (-1) is all zero
    syncing = (kind == L.TASK_SOFT_SYNC) | (kind == L.TASK_HARD_SYNC)
    needed = quorum(byte, coordination.alpha, config.num_agents)
    quorum_plane = jnp.where(syncing, needed / config.num_agents, 0.0)
    rows, cols = window_offsets(config)
    relative = coordination.task_position.astype(jnp.int32)[None] - state.agents.position[:, None]
    pending = (coordination.task_starter >= 0)[None, :, None]
    row_hit = (relative[..., 0, None] == rows) & pending  # (P, T, H)
    col_hit = relative[..., 1, None] == cols  # (P, T, W)
    left = jnp.einsum(
        "pth,ptw,t->phw",
        row_hit.astype(jnp.float32),
        col_hit.astype(jnp.float32),
        coordination.task_timer.astype(jnp.float32) / MAX_WINDOW,
    )
    return jnp.concatenate([kind_planes, quorum_plane[..., None], left[..., None]], axis=-1)


def flag(kind: jax.Array, where: jax.Array, marks: Marks) -> Marks:
    """Corner flags coloured by task kind `(R, W)` (TASK_FLAG_COLOURS) where `where`."""
    colour = jnp.asarray(L.TASK_FLAG_COLOURS)[kind]
    return marks._replace(
        flag=jnp.where(where, kind > 0, marks.flag),
        flag_colour=jnp.where(where[..., None], colour, marks.flag_colour),
    )


class Tasks(Part):
    """Sync and handover tasks on tree, stone, coal, iron and diamond tiles."""

    window_channels = CHANNELS
    achievements = ("complete_sync", "complete_handover")

    @staticmethod
    def enabled(config: CraftConfig) -> bool:
        return config.has_tasks

    @staticmethod
    def random_shapes(config: CraftConfig) -> dict[str, tuple[int, ...]]:
        return {"task": (config.num_agents, RANDOM_DRAWS)}

    def generate(self, key: jax.Array, state: CraftState) -> CraftState:
        tile_task = lay_tasks(threefry.fold_in(key, 1), self.config, state.map)
        return state.replace(coordination=state.coordination.replace(tile_task=tile_task))

    def before_do(
        self, state: CraftState, params: CraftParams, doing: jax.Array, draws: Draws
    ) -> tuple[CraftState, jax.Array]:
        state, passthrough = resolve_tasks(self.config, state, doing, draws["task"])
        return state, doing & passthrough

    def after_do(self, turn: Turn, state: CraftState, params: CraftParams, draws: Draws):
        coordination = clear_consumed(state.coordination, turn.before.map, state.map, turn.target)
        return state.replace(coordination=coordination)

    def tick(self, state: CraftState) -> CraftState:
        return state.replace(coordination=tick_handovers(state.coordination))

    def window_planes(self, state: CraftState, params: CraftParams) -> jax.Array:
        return task_planes(self.config, state)

    def marks(self, state: CraftState, rows: jax.Array, cols: jax.Array, marks: Marks) -> Marks:
        size = self.config.map_size
        inside = (rows >= 0) & (rows < size) & (cols >= 0) & (cols < size)
        tile_task = state.coordination.tile_task
        byte = tile_task[jnp.clip(rows, 0, size - 1), jnp.clip(cols, 0, size - 1)]
        return flag(jnp.where(inside, task_kind(byte), L.TASK_NONE), inside, marks)
