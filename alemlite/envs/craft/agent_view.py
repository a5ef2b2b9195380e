"""One agent's view as a picture: the map frame cropped around the agent.

The crop covers the window the agent's observation text describes (`view_height` rows by
`view_width` columns of tiles, centred on it), cut from the same frame as the whole map
(`render_map`: tiles, agents, mobs, the layer's marks, night dimming), so a picture and a
text of one step show the same tiles. Tiles off the map are black, as the out-of-bounds
material is drawn.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from alemlite.envs.craft.world.rendering import TILE, render_map


def render_agent_rgb(env: Any, state: Any, params: Any, agent: Any) -> jax.Array:
    """`(view_height * TILE, view_width * TILE, 3)` uint8 around agent `agent`, jittable."""
    config = env.config
    half_rows, half_cols = config.view_height // 2, config.view_width // 2
    frame = render_map(config, state, params, env.layer)
    padded = jnp.pad(frame, ((half_rows * TILE,) * 2, (half_cols * TILE,) * 2, (0, 0)))
    row, col = state.agents.position[agent]
    # The window's top-left tile is (row - half_rows, col - half_cols): in the padded frame,
    # pixel (row * TILE, col * TILE).
    return jax.lax.dynamic_slice(
        padded,
        (row * TILE, col * TILE, 0),
        ((2 * half_rows + 1) * TILE, (2 * half_cols + 1) * TILE, 3),
    )
