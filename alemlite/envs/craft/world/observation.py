"""Per-agent observations: an egocentric one-hot window plus flat features.

Window channels, in order: material (the 15 base materials, code 0 = outside the map), mob kind
(zombie, skeleton, cow, arrow), teammate (standing, downed), darkness. Darkness is
1 - daylight on every tile of the window (0 on tiles a beacon lights), and 1 while
sleeping (Crafter blacks out a sleeper's view); it is computed for the window only.

Flat features: stats / 9, inventory / 9, sleeping, facing (one-hot), role (one-hot),
daylight, then for each teammate in order i+1, i+2, ... (mod P): its position
relative to the agent (clipped to +-TEAMMATE_RANGE, divided by it), health / 9,
downed, dead.

The coordination layer appends after these: window channels for tasks (handover,
soft sync, hard sync one-hot, quorum / P, handover window left / MAX_WINDOW) when
tasks are on, then elites (soft, hard) when elites are on, then construction (9, see
`construction.site_values`: unbuilt sync site, unbuilt handover site, quorum / P,
shelter, forge, beacon, started handover build of shelter / forge / beacon times its
window left / MAX_WINDOW) when construction is on; own features alpha (after
daylight) and, with construction, whether the agent holds a diamond sword; per
teammate its open request (one-hot over the 8 resources) when trading is on and its
last message token (one-hot) when tokens are on.

The global state is every agent's observation concatenated, then with construction
each site's row / S, column / S and its 9 values.

Layouts: "flat" concatenates the flattened window and the features; "image" is
(view_height, view_width, channels + features) with the features broadcast over
the window, for convolutional networks.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from alemlite.envs.craft import constants as C
from alemlite.envs.craft.config import CraftConfig, CraftParams
from alemlite.envs.craft.coordination import construction
from alemlite.envs.craft.coordination.tasks import quorum, task_kind
from alemlite.envs.craft.world.mobs import daylight
from alemlite.envs.craft.world.state import CraftState
from alemlite.envs.craft.world.tiles import in_bounds, read_tiles

TEAMMATE_RANGE = 16
WINDOW_CHANNELS = C.NUM_BASE_MATERIALS + C.NUM_MOB_KINDS + 2 + 1
TEAMMATE_FEATURES = 5
OWN_FEATURES = len(C.STATS) + C.NUM_ITEMS + 1 + len(C.DIRECTIONS) + C.NUM_ROLES + 1
TASK_CHANNELS = 3 + 1 + 1
MAX_WINDOW = 24  # the longest handover window (alpha = 0)


ELITE_CHANNELS = 2  # soft, hard


def window_channels(config: CraftConfig) -> int:
    return (
        WINDOW_CHANNELS
        + (TASK_CHANNELS if config.has_tasks else 0)
        + (ELITE_CHANNELS if config.has_elites else 0)
        + (construction.SITE_VALUES if config.has_construction else 0)
    )


def teammate_features(config: CraftConfig) -> int:
    return (
        TEAMMATE_FEATURES
        + (C.NUM_REQUEST_RESOURCES if config.has_trading else 0)
        + config.message_tokens
    )


def num_features(config: CraftConfig) -> int:
    return (
        OWN_FEATURES
        + int(config.has_layer)
        + int(config.has_construction)
        + teammate_features(config) * (config.num_agents - 1)
    )


def global_state_size(config: CraftConfig) -> int:
    sites = config.site_slots * (2 + construction.SITE_VALUES) if config.has_construction else 0
    return config.num_agents * int(np.prod(observation_shape(config))) + sites


def observation_shape(config: CraftConfig) -> tuple[int, ...]:
    height, width = config.view_height, config.view_width
    if config.observation == "image":
        return (height, width, window_channels(config) + num_features(config))
    return (height * width * window_channels(config) + num_features(config),)


def window_offsets(config: CraftConfig) -> tuple[np.ndarray, np.ndarray]:
    """Row and column offsets of the view window around the agent."""
    half_height, half_width = config.view_height // 2, config.view_width // 2
    return np.arange(-half_height, half_height + 1), np.arange(-half_width, half_width + 1)


def window_grid(config: CraftConfig, state: CraftState) -> jax.Array:
    """Map positions of each agent's window `(P, H, W, 2)`."""
    rows, cols = window_offsets(config)
    position = state.agents.position
    return jnp.stack(
        jnp.broadcast_arrays(
            position[:, 0, None, None] + rows[None, :, None],
            position[:, 1, None, None] + cols[None, None, :],
        ),
        axis=-1,
    )


def view_materials(config: CraftConfig, state: CraftState) -> jax.Array:
    """Material codes in each agent's window `(P, H, W)` (OUT_OF_BOUNDS outside)."""
    return read_tiles(state.map, window_grid(config, state))


def task_planes(config: CraftConfig, state: CraftState) -> jax.Array:
    """`(P, H, W, TASK_CHANNELS)`: task kind one-hot, quorum / P, handover window left."""
    coordination = state.coordination
    grid = window_grid(config, state)
    inside = in_bounds(grid, config.map_size)
    clipped = jnp.clip(grid, 0, config.map_size - 1)
    byte = jnp.where(inside, coordination.tile_task[clipped[..., 0], clipped[..., 1]], 0)
    kind = task_kind(byte)
    kind_planes = jax.nn.one_hot(kind - 1, 3)  # "none" (-1) is all zero
    syncing = (kind == C.TASK_SOFT_SYNC) | (kind == C.TASK_HARD_SYNC)
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


def construction_planes(config: CraftConfig, state: CraftState) -> jax.Array:
    """`(P, H, W, SITE_VALUES)`: each site's values on its tile of each window."""
    rows, cols = window_offsets(config)
    sites = state.coordination.sites
    relative = sites.position.astype(jnp.int32)[None] - state.agents.position[:, None]
    present = (sites.task > 0)[None, :, None]
    row_hit = (relative[..., 0, None] == rows) & present  # (P, Q, H)
    col_hit = relative[..., 1, None] == cols  # (P, Q, W)
    return jnp.einsum(
        "pqh,pqw,qc->phwc",
        row_hit.astype(jnp.float32),
        col_hit.astype(jnp.float32),
        construction.site_values(config, state),
    )


def _entity_planes(config: CraftConfig, origin: jax.Array, position, present, channel, count):
    """`(P, H, W, count)` indicator planes of entities at `position` in each window."""
    rows, cols = window_offsets(config)
    relative = position[None, :, :] - origin[:, None, :]  # (P, E, 2)
    row_hit = relative[..., 0, None] == rows  # (P, E, H)
    col_hit = relative[..., 1, None] == cols  # (P, E, W)
    kind = (channel[:, None] == jnp.arange(count)) & present[..., None]  # (P?, E, count)
    kind = jnp.broadcast_to(kind, (origin.shape[0], *kind.shape[-2:]))
    return jnp.einsum(
        "peh,pew,pek->phwk",
        row_hit.astype(jnp.float32),
        col_hit.astype(jnp.float32),
        kind.astype(jnp.float32),
    )


def view_window(config: CraftConfig, state: CraftState, params: CraftParams) -> jax.Array:
    """One-hot window `(P, H, W, WINDOW_CHANNELS)` float32."""
    agents, mobs, arrows = state.agents, state.mobs, state.arrows
    origin = agents.position
    # Construction blocks (codes past the base materials) are all zero here.
    material = jax.nn.one_hot(view_materials(config, state), C.NUM_BASE_MATERIALS)
    mob_position = jnp.concatenate([mobs.position, arrows.position])
    mob_kind = jnp.concatenate(
        [jnp.asarray(config.mob_kinds()), jnp.full(arrows.alive.shape, C.ARROW)]
    )
    mob_present = jnp.concatenate([mobs.alive, arrows.alive])
    mob_planes = _entity_planes(
        config, origin, mob_position, mob_present, mob_kind, C.NUM_MOB_KINDS
    )
    others = ~jnp.eye(config.num_agents, dtype=bool) & (agents.status != C.DEAD)[None, :]
    mate_planes = _entity_planes(
        config, origin, agents.position, others, (agents.status == C.DOWNED).astype(jnp.int32), 2
    )
    light = daylight(state.step, params.day_length)
    darkness = jnp.broadcast_to(1.0 - light, material.shape[:3])
    if config.has_construction:
        lit = construction.lit_by_beacon(
            state.coordination.sites, window_grid(config, state), params.beacon_radius
        )
        darkness = jnp.where(lit, 0.0, darkness)
    dark_plane = jnp.where(agents.sleeping[:, None, None], 1.0, darkness)[..., None]
    planes = [material, mob_planes, mate_planes, dark_plane]
    if config.has_tasks:
        planes.append(task_planes(config, state))
    if config.has_elites:
        elite = state.coordination.mob_elite.astype(jnp.int32)
        planes.append(
            _entity_planes(
                config, origin, mobs.position, mobs.alive & (elite != C.ELITE_NONE), elite - 1, 2
            )
        )
    if config.has_construction:
        planes.append(construction_planes(config, state))
    return jnp.concatenate(planes, axis=-1)


def flat_features(config: CraftConfig, state: CraftState, params: CraftParams) -> jax.Array:
    """Per-agent feature vectors `(P, num_features)` float32."""
    agents = state.agents
    num_agents = config.num_agents
    roles = jnp.arange(num_agents) % C.NUM_ROLES
    light = daylight(state.step, params.day_length)
    own = [
        agents.stats / C.STAT_MAX,
        agents.inventory / C.INVENTORY_MAX,
        agents.sleeping[:, None],
        jax.nn.one_hot(agents.facing, len(C.DIRECTIONS)),
        jax.nn.one_hot(roles, C.NUM_ROLES),
        jnp.broadcast_to(light, (num_agents, 1)),
    ]
    if config.has_layer:
        own.append(jnp.broadcast_to(state.coordination.alpha, (num_agents, 1)))
    if config.has_construction:
        own.append(state.coordination.diamond_sword[:, None])
    mates = (np.arange(num_agents)[:, None] + np.arange(1, num_agents)[None, :]) % num_agents
    relative = agents.position[mates] - agents.position[:, None, :]
    about_mates = [
        jnp.clip(relative, -TEAMMATE_RANGE, TEAMMATE_RANGE) / TEAMMATE_RANGE,
        agents.stats[mates, C.HEALTH, None] / C.STAT_MAX,
        (agents.status[mates] == C.DOWNED)[..., None],
        (agents.status[mates] == C.DEAD)[..., None],
    ]
    coordination = state.coordination
    if config.has_trading:
        request = coordination.request_item.astype(jnp.int32)[mates]
        about_mates.append(jax.nn.one_hot(request, C.NUM_REQUEST_RESOURCES))
    if config.message_tokens:
        message = coordination.last_message.astype(jnp.int32)[mates]
        about_mates.append(jax.nn.one_hot(message, config.message_tokens))
    teammate = jnp.concatenate([part.astype(jnp.float32) for part in about_mates], axis=-1).reshape(
        num_agents, -1
    )
    return jnp.concatenate([*(part.astype(jnp.float32) for part in own), teammate], axis=1)


def observe(config: CraftConfig, state: CraftState, params: CraftParams) -> jax.Array:
    window = view_window(config, state, params)
    features = flat_features(config, state, params)
    if config.observation == "image":
        tiled = jnp.broadcast_to(
            features[:, None, None, :], (*window.shape[:3], features.shape[-1])
        )
        return jnp.concatenate([window, tiled], axis=-1)
    return jnp.concatenate([window.reshape(window.shape[0], -1), features], axis=1)


def global_state(config: CraftConfig, state: CraftState, params: CraftParams) -> jax.Array:
    """Every agent's observation, then each site's position and values (map-size free)."""
    parts = [observe(config, state, params).reshape(-1)]
    if config.has_construction:
        sites = state.coordination.sites
        position = sites.position.astype(jnp.float32) / config.map_size
        position = position * (sites.task > 0)[:, None]
        parts.append(
            jnp.concatenate([position, construction.site_values(config, state)], axis=1).reshape(-1)
        )
    return jnp.concatenate(parts)
