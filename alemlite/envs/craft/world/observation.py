"""Per-agent observations: an egocentric one-hot window plus flat features.

Window channels, in order: material (the world's 15, code 0 = outside the map), mob kind
(zombie, skeleton, cow, arrow), teammate (standing, downed), darkness. Darkness is
1 - daylight on every tile of the window (0 on tiles a layer lights), and 1 while
sleeping (Crafter blacks out a sleeper's view); it is computed for the window only.

Flat features: stats / 9, inventory / 9, sleeping, facing (one-hot), daylight, then
for each teammate in order i+1, i+2, ... (mod P): its position relative to the agent
(clipped to +-TEAMMATE_RANGE, divided by it), health / 9, downed, dead.

A layer above the world adds who each agent is (its role) between facing and daylight,
and appends its own window channels, own features and features per teammate after
the base ones (`Extras`).

Layouts: "flat" concatenates the flattened window and the features; "image" is
(view_height, view_width, channels + features) with the features broadcast over
the window, for convolutional networks.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from alemlite.envs.craft import constants as C
from alemlite.envs.craft.world.config import WorldConfig, WorldParams
from alemlite.envs.craft.world.mobs import daylight
from alemlite.envs.craft.world.state import CraftState
from alemlite.envs.craft.world.tiles import read_tiles

TEAMMATE_RANGE = 16
WINDOW_CHANNELS = C.NUM_MATERIALS + C.NUM_MOB_KINDS + 2 + 1
TEAMMATE_FEATURES = 5
OWN_FEATURES = len(C.STATS) + C.NUM_ITEMS + 1 + len(C.DIRECTIONS) + 1


@dataclass(frozen=True)
class Extras:
    """What a layer adds to the base observation, each after the base ones, in order."""

    lit: jax.Array | None = None  # (P, H, W) bool: window tiles lit whatever the daylight
    identity: tuple[jax.Array, ...] = ()  # (P, k) who the agent is, after its facing
    planes: tuple[jax.Array, ...] = ()  # (P, H, W, c) window channels
    own: tuple[jax.Array, ...] = ()  # (P, k) features of the agent
    teammates: tuple[jax.Array, ...] = ()  # (P, P - 1, k) features per teammate


def observation_shape(config: WorldConfig, channels: int, features: int) -> tuple[int, ...]:
    """One agent's observation with `channels` window channels and `features` flat ones."""
    height, width = config.view_height, config.view_width
    if config.observation == "image":
        return (height, width, channels + features)
    return (height * width * channels + features,)


def teammates(num_agents: int) -> np.ndarray:
    """`(P, P - 1)`: the k-th teammate of each agent (i+1, i+2, ... mod P)."""
    return (np.arange(num_agents)[:, None] + np.arange(1, num_agents)[None, :]) % num_agents


def window_offsets(config: WorldConfig) -> tuple[np.ndarray, np.ndarray]:
    """Row and column offsets of the view window around the agent."""
    half_height, half_width = config.view_height // 2, config.view_width // 2
    return np.arange(-half_height, half_height + 1), np.arange(-half_width, half_width + 1)


def window_grid(config: WorldConfig, state: CraftState) -> jax.Array:
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


def view_materials(config: WorldConfig, state: CraftState) -> jax.Array:
    """Material codes in each agent's window `(P, H, W)` (OUT_OF_BOUNDS outside)."""
    return read_tiles(state.map, window_grid(config, state))


def entity_planes(config: WorldConfig, origin: jax.Array, position, present, channel, count):
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


def view_window(
    config: WorldConfig, state: CraftState, params: WorldParams, extras: Extras
) -> jax.Array:
    """One-hot window `(P, H, W, channels)` float32."""
    agents, mobs, arrows = state.agents, state.mobs, state.arrows
    origin = agents.position
    # Blocks a layer lays (codes past the world's materials) are all zero here.
    material = jax.nn.one_hot(view_materials(config, state), C.NUM_MATERIALS)
    mob_position = jnp.concatenate([mobs.position, arrows.position])
    mob_kind = jnp.concatenate(
        [jnp.asarray(config.mob_kinds()), jnp.full(arrows.alive.shape, C.ARROW)]
    )
    mob_present = jnp.concatenate([mobs.alive, arrows.alive])
    mob_planes = entity_planes(config, origin, mob_position, mob_present, mob_kind, C.NUM_MOB_KINDS)
    others = ~jnp.eye(config.num_agents, dtype=bool) & (agents.status != C.DEAD)[None, :]
    mate_planes = entity_planes(
        config, origin, agents.position, others, (agents.status == C.DOWNED).astype(jnp.int32), 2
    )
    light = daylight(state.step, params.day_length)
    darkness = jnp.broadcast_to(1.0 - light, material.shape[:3])
    if extras.lit is not None:
        darkness = jnp.where(extras.lit, 0.0, darkness)
    dark_plane = jnp.where(agents.sleeping[:, None, None], 1.0, darkness)[..., None]
    return jnp.concatenate([material, mob_planes, mate_planes, dark_plane, *extras.planes], axis=-1)


def flat_features(
    config: WorldConfig, state: CraftState, params: WorldParams, extras: Extras
) -> jax.Array:
    """Per-agent feature vectors `(P, features)` float32."""
    agents = state.agents
    num_agents = config.num_agents
    light = daylight(state.step, params.day_length)
    own = [
        agents.stats / C.STAT_MAX,
        agents.inventory / C.INVENTORY_MAX,
        agents.sleeping[:, None],
        jax.nn.one_hot(agents.facing, len(C.DIRECTIONS)),
        *extras.identity,
        jnp.broadcast_to(light, (num_agents, 1)),
        *extras.own,
    ]
    mates = teammates(num_agents)
    relative = agents.position[mates] - agents.position[:, None, :]
    about_mates = [
        jnp.clip(relative, -TEAMMATE_RANGE, TEAMMATE_RANGE) / TEAMMATE_RANGE,
        agents.stats[mates, C.HEALTH, None] / C.STAT_MAX,
        (agents.status[mates] == C.DOWNED)[..., None],
        (agents.status[mates] == C.DEAD)[..., None],
        *extras.teammates,
    ]
    teammate = jnp.concatenate([part.astype(jnp.float32) for part in about_mates], axis=-1).reshape(
        num_agents, -1
    )
    return jnp.concatenate([*(part.astype(jnp.float32) for part in own), teammate], axis=1)


def observe(
    config: WorldConfig, state: CraftState, params: WorldParams, extras: Extras
) -> jax.Array:
    """Each agent's observation `(P, *observation_shape)` float32."""
    window = view_window(config, state, params, extras)
    features = flat_features(config, state, params, extras)
    if config.observation == "image":
        tiled = jnp.broadcast_to(
            features[:, None, None, :], (*window.shape[:3], features.shape[-1])
        )
        return jnp.concatenate([window, tiled], axis=-1)
    return jnp.concatenate([window.reshape(window.shape[0], -1), features], axis=1)
