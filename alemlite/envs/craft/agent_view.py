"""One agent's view as a picture: the map frame cropped around the agent.

The crop covers the window the agent's observation text describes (`view_height` rows by
`view_width` columns of tiles, centred on it), cut from the same frame as the whole map
(`render_map`: tiles, agents, mobs, the layer's marks, night dimming), so a picture and a
text of one step show the same tiles. Tiles off the map are black, as the out-of-bounds
material is drawn.

The agent itself is marked (`YOU_MASKS`): its tile at the centre is outlined in white, with a
tick on the side it faces, drawn over the night's dimming, so that a model told "you are the
outlined agent at the centre" finds itself and its heading.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from alemlite.envs.craft.world.rendering import FRAME_MASK, TILE, render_map

YOU_COLOUR = np.array([255, 255, 255], np.uint8)


def _you_masks() -> np.ndarray:
    """`(4, TILE, TILE)` bool, one per facing (left, right, up, down, as `DIRECTIONS`): the
    tile's outline and a tick three pixels deep in the middle of the side faced."""
    rows, cols = np.mgrid[:TILE, :TILE]
    middle = (rows >= TILE // 2 - 2) & (rows < TILE // 2 + 2)
    centre = (cols >= TILE // 2 - 2) & (cols < TILE // 2 + 2)
    ticks = [middle & (cols < 3), middle & (cols >= TILE - 3)]
    ticks += [centre & (rows < 3), centre & (rows >= TILE - 3)]
    return np.stack([FRAME_MASK | tick for tick in ticks])


YOU_MASKS = _you_masks()


def render_agent_rgb(env: Any, state: Any, params: Any, agent: Any) -> jax.Array:
    """`(view_height * TILE, view_width * TILE, 3)` uint8 around agent `agent`, its own tile
    marked (`YOU_MASKS`), jittable."""
    config = env.config
    half_rows, half_cols = config.view_height // 2, config.view_width // 2
    frame = render_map(config, state, params, env.layer)
    padded = jnp.pad(frame, ((half_rows * TILE,) * 2, (half_cols * TILE,) * 2, (0, 0)))
    row, col = state.agents.position[agent]
    # The window's top-left tile is (row - half_rows, col - half_cols): in the padded frame,
    # pixel (row * TILE, col * TILE).
    view = jax.lax.dynamic_slice(
        padded,
        (row * TILE, col * TILE, 0),
        ((2 * half_rows + 1) * TILE, (2 * half_cols + 1) * TILE, 3),
    )
    you = jnp.asarray(YOU_MASKS)[state.agents.facing[agent]][..., None]
    centre = (half_rows * TILE, half_cols * TILE, 0)
    tile = jax.lax.dynamic_slice(view, centre, (TILE, TILE, 3))
    marked = jnp.where(you, jnp.asarray(YOU_COLOUR), tile)
    return jax.lax.dynamic_update_slice(view, marked, centre)
