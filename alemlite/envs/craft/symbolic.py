"""The symbolic observation (`obs_encoding="symbolic"`): integer ids per window tile.

Where the dense observation gives each window tile one-hot channels (2,394 floats of the
2,455 for 3 agents with the whole layer on), the symbolic one gives each tile a few small
integer ids, one per layer below, and then the same flat features as the dense one (stats,
inventory, role, daylight, teammates, and what the parts add). One array per agent,
float32 like every observation (the ids are exact): the `(H, W, L)` ids flattened, then the
features; `observation_space` says so, and a network embeds the ids (`baselines`).

Layers, each with its own ids (id 0: nothing there); ids are offset so that the layers
share one vocabulary `[0, V)` without overlapping:
- material: the map's material code (0: outside the map), buildings included;
- mob: 1 + 3 x kind (zombie, skeleton, cow) + elite (normal, soft, hard);
- arrow: 1 where an arrow flies;
- teammate: 1 standing, 2 downed (dead teammates are not seen);
- lit (a part lights tiles, e.g. beacons): 1 on tiles lit whatever the daylight; darkness is
  then 1 - daylight elsewhere, and everything while sleeping (both in the features);
- task (tasks on): 1 handover, 1 + q soft sync, 1 + P + q hard sync, q its quorum;
- site (construction on): q sync site of quorum q, P + 1 handover site, P + 2 + b handover
  started for building b, P + 5 + b built b;
- window (tasks or construction on): steps left of a started handover on that tile.

Decoding a tile's ids gives back its dense channels exactly (tests/test_craft_observation).
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from alemlite.core.spaces import Box
from alemlite.envs.craft import constants as C
from alemlite.envs.craft.config import CraftConfig
from alemlite.envs.craft.coordination import constants as L
from alemlite.envs.craft.coordination.layer import Layer
from alemlite.envs.craft.coordination.part import Part
from alemlite.envs.craft.coordination.tasks import MAX_WINDOW, quorum, task_kind
from alemlite.envs.craft.world.observation import (
    flat_features,
    view_materials,
    window_grid,
    window_offsets,
)
from alemlite.envs.craft.world.state import CraftState
from alemlite.envs.craft.world.tiles import in_bounds

MOB_IDS = 1 + 3 * len(L.ELITE_KINDS)  # none, then (zombie, skeleton, cow) x elite


@dataclass(frozen=True)
class SymbolicLayout:
    """The layers of one config: names, sizes (ids per layer) and offsets."""

    names: tuple[str, ...]
    sizes: tuple[int, ...]

    @classmethod
    def of(cls, config: CraftConfig, layer: Layer) -> SymbolicLayout:
        agents = config.num_agents
        layers = {
            "material": len(L.MATERIALS),
            "mob": MOB_IDS,
            "arrow": 2,
            "teammate": 3,
        }
        if any(type(part).lit is not Part.lit for part in layer.parts):
            layers["lit"] = 2
        if config.has_tasks:
            layers["task"] = 2 + 2 * agents
        if config.has_construction:
            layers["site"] = agents + 2 + 2 * L.NUM_BUILDINGS
        if config.has_tasks or config.has_construction:
            layers["window"] = MAX_WINDOW + 1
        return cls(tuple(layers), tuple(layers.values()))

    @property
    def offsets(self) -> np.ndarray:
        return np.cumsum((0, *self.sizes[:-1]))

    @property
    def vocabulary(self) -> int:
        return int(sum(self.sizes))


def symbolic_space(config: CraftConfig, layout: SymbolicLayout, features: int) -> dict[str, Box]:
    """The observation's parts, in the order they are concatenated (each flattened)."""
    shape = (config.view_height, config.view_width, len(layout.names))
    return {
        "tiles": Box(0, layout.vocabulary - 1, shape, jnp.int32),
        "features": Box(-1.0, 1.0, (features,), jnp.float32),
    }


def entity_ids(config: CraftConfig, origin, position, present, ids) -> jax.Array:
    """`(P, H, W)` int32: the id `(E,)` of the entity at each window tile (0: none)."""
    rows, cols = window_offsets(config)
    relative = position.astype(jnp.int32)[None] - origin[:, None]  # (P, E, 2)
    row_hit = relative[..., 0, None] == rows  # (P, E, H)
    col_hit = relative[..., 1, None] == cols  # (P, E, W)
    hit = row_hit[..., :, None] & col_hit[..., None, :] & present[None, :, None, None]
    return jnp.max(jnp.where(hit, ids[None, :, None, None], 0), axis=1, initial=0)


def tile_ids(
    config: CraftConfig, layout: SymbolicLayout, layer: Layer, state: CraftState, params
) -> jax.Array:
    """`(P, H, W, L)` int32 ids, offset per layer (see the module docstring)."""
    agents, mobs, arrows = state.agents, state.mobs, state.arrows
    coordination = state.coordination
    origin = agents.position
    num_agents = config.num_agents
    elite = coordination.mob_elite.astype(jnp.int32) if config.has_elites else 0
    mob_ids = 1 + 3 * jnp.asarray(config.mob_kinds()) + elite
    downed = (agents.status == C.DOWNED).astype(jnp.int32)
    seen = ~jnp.eye(num_agents, dtype=bool) & (agents.status != C.DEAD)[None, :]
    ids = {
        "material": view_materials(config, state),
        "mob": entity_ids(config, origin, mobs.position, mobs.alive, mob_ids),
        "arrow": entity_ids(
            config, origin, arrows.position, arrows.alive, jnp.ones_like(arrows.alive, jnp.int32)
        ),
        # Each agent sees the others: one entity table per viewer.
        "teammate": jax.vmap(
            lambda viewer, visible: entity_ids(
                config, viewer[None], agents.position, visible, 1 + downed
            )[0]
        )(origin, seen),
    }
    if "lit" in layout.names:
        ids["lit"] = layer.lit(state, params, window_grid(config, state)).astype(jnp.int32)
    window = jnp.zeros(ids["material"].shape, jnp.int32)
    if config.has_tasks:
        ids["task"] = task_ids(config, state)
        window += entity_ids(
            config,
            origin,
            coordination.task_position,
            coordination.task_starter >= 0,
            coordination.task_timer.astype(jnp.int32),
        )
    if config.has_construction:
        sites = coordination.sites
        ids["site"] = entity_ids(
            config, origin, sites.position, sites.task > 0, site_ids(config, state)
        )
        window += entity_ids(
            config, origin, sites.position, sites.pending >= 0, sites.timer.astype(jnp.int32)
        )
    if "window" in layout.names:
        ids["window"] = window
    stacked = jnp.stack([ids[name] for name in layout.names], axis=-1)
    return stacked + jnp.asarray(layout.offsets, jnp.int32)


def task_ids(config: CraftConfig, state: CraftState) -> jax.Array:
    """`(P, H, W)`: the task layer's ids before offsetting."""
    coordination = state.coordination
    grid = window_grid(config, state)
    clipped = jnp.clip(grid, 0, config.map_size - 1)
    inside = in_bounds(grid, config.map_size)
    byte = jnp.where(inside, coordination.tile_task[clipped[..., 0], clipped[..., 1]], 0)
    kind = task_kind(byte)
    needed = quorum(byte, coordination.alpha, config.num_agents)
    sync_base = jnp.where(kind == L.TASK_SOFT_SYNC, 1, 1 + config.num_agents)
    synced = jnp.where(kind == L.TASK_HANDOVER, 1, sync_base + needed)
    return jnp.where(kind == L.TASK_NONE, 0, synced)


def site_ids(config: CraftConfig, state: CraftState) -> jax.Array:
    """`(Q,)`: each site slot's id in the site layer before offsetting."""
    coordination = state.coordination
    sites = coordination.sites
    agents = config.num_agents
    building = sites.building.astype(jnp.int32)
    pending = sites.pending.astype(jnp.int32)
    handover = jnp.where(pending >= 0, agents + 2 + pending, agents + 1)
    sync = quorum(sites.task, coordination.alpha, agents)
    unbuilt = jnp.where(task_kind(sites.task) == L.TASK_HANDOVER, handover, sync)
    return jnp.where(building >= 0, agents + 2 + L.NUM_BUILDINGS + building, unbuilt)


def observe_symbolic(
    config: CraftConfig, layout: SymbolicLayout, layer: Layer, state: CraftState, params
) -> jax.Array:
    """Each agent's symbolic observation `(P, H * W * L + features)` float32."""
    ids = tile_ids(config, layout, layer, state, params)
    features = flat_features(config, state, params, layer.observation(state, params))
    return jnp.concatenate([ids.reshape(ids.shape[0], -1).astype(jnp.float32), features], axis=1)


def symbolic_shape(config: CraftConfig, layout: SymbolicLayout, features: int) -> tuple[int]:
    return (config.view_height * config.view_width * len(layout.names) + features,)
