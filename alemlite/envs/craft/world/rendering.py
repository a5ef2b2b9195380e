"""RGB frames of the whole map and of each agent's view, drawn from tiny sprites.

Sprites are built here from the colours in `constants.py`: textured material tiles,
and masks for agents (a disc with a facing mark), zombies, skeletons, cows and arrows.
A layer above the world (`Overlay`) draws the blocks it lays (`texture` makes a sprite),
may draw marks (a corner flag and a frame on any tile, in any colour) and light tiles
at night. Frames are jittable (`render_map`, `render_views`); `write_gif` saves a
sequence with imageio.
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple, Protocol

import imageio.v3 as iio
import jax
import jax.numpy as jnp
import numpy as np

from alemlite.envs.craft import constants as C
from alemlite.envs.craft.world.config import WorldConfig, WorldParams
from alemlite.envs.craft.world.mobs import daylight
from alemlite.envs.craft.world.observation import view_materials, window_offsets
from alemlite.envs.craft.world.state import CraftState

TILE = 8  # pixels per tile
NIGHT_DIMMING = 0.6  # share of brightness lost at full night


class Marks(NamedTuple):
    """A corner flag (under the entities) and a frame (over them) per tile of a grid."""

    flag: jax.Array  # (R, W) bool
    flag_colour: jax.Array  # (R, W, 3) uint8
    frame: jax.Array  # (R, W) bool
    frame_colour: jax.Array  # (R, W, 3) uint8

    @classmethod
    def none(cls, shape: tuple[int, ...]) -> Marks:
        unmarked, black = jnp.zeros(shape, bool), jnp.zeros((*shape, 3), jnp.uint8)
        return cls(unmarked, black, unmarked, black)


class Overlay(Protocol):
    """What a layer above the world adds to its frames."""

    def material_sprites(self) -> np.ndarray:
        """`(MATERIAL_CODES, TILE, TILE, 3)` uint8: the world's sprites and the layer's blocks."""

    def marks(self, state: CraftState, rows: jax.Array, cols: jax.Array) -> Marks | None:
        """Marks on a `(R, W)` grid of map tiles (None: none)."""

    def lit(self, state: CraftState, params: WorldParams, position: jax.Array) -> jax.Array | None:
        """`(...)` bool for `(..., 2)` positions: lit whatever the daylight (None: none)."""


def texture(base, accent, mask: np.ndarray) -> np.ndarray:
    """A `(TILE, TILE, 3)` uint8 sprite: `base` colour, `accent` where `mask` `(TILE, TILE)`."""
    tile = np.broadcast_to(np.asarray(base, np.uint8), (TILE, TILE, 3)).copy()
    tile[mask] = accent
    return tile


def _pattern(name: str) -> np.ndarray:
    """`(TILE, TILE)` bool: the accent pixels of one of the world's textures."""
    rows, cols = np.mgrid[:TILE, :TILE]
    if name == "dots":
        return (rows % 4 == 1) & (cols % 4 == 1)
    if name == "speckle":
        return (rows * 3 + cols * 5) % 7 == 0
    if name == "waves":
        return (rows % 4 == 2) & (cols % 4 != 3)
    if name == "crown":
        return (rows - 3.5) ** 2 + (cols - 3.5) ** 2 <= 9
    if name == "frame":
        return (rows == 0) | (rows == TILE - 1) | (cols == 0) | (cols == TILE - 1)
    if name == "sprout":
        return (cols == TILE // 2) & (rows >= 3) | ((rows == 3) & (abs(cols - 4) == 1))
    if name == "fruit":
        return (rows - 4) ** 2 + (cols - 4) ** 2 <= 4
    raise ValueError(f"no texture {name!r}")


def material_sprites() -> np.ndarray:
    """`(MATERIAL_CODES, TILE, TILE, 3)` uint8; codes left to a layer stay black."""
    colours = C.MATERIAL_COLOURS
    grass = colours[C.GRASS]
    stone = colours[C.STONE]
    patterns = {
        C.WATER: (colours[C.WATER], (120, 160, 230), "waves"),
        C.GRASS: (grass, (96, 156, 70), "speckle"),
        C.STONE: (stone, (105, 105, 105), "speckle"),
        C.PATH: (colours[C.PATH], (170, 150, 110), "speckle"),
        C.SAND: (colours[C.SAND], (200, 190, 120), "speckle"),
        C.TREE: (grass, colours[C.TREE], "crown"),
        C.LAVA: (colours[C.LAVA], (250, 200, 60), "speckle"),
        C.COAL: (stone, colours[C.COAL], "dots"),
        C.IRON: (stone, colours[C.IRON], "dots"),
        C.DIAMOND: (stone, colours[C.DIAMOND], "dots"),
        C.TABLE: (colours[C.TABLE], (190, 140, 80), "frame"),
        C.FURNACE: (colours[C.FURNACE], (250, 120, 40), "dots"),
        C.SAPLING: (grass, colours[C.SAPLING], "sprout"),
        C.RIPE_PLANT: (grass, colours[C.RIPE_PLANT], "fruit"),
    }
    sprites = np.zeros((C.MATERIAL_CODES, TILE, TILE, 3), np.uint8)
    for code, (base, accent, pattern) in patterns.items():
        sprites[code] = texture(base, accent, _pattern(pattern))
    return sprites


def entity_masks() -> np.ndarray:
    """`(5, TILE, TILE)` bool: agent, zombie, skeleton, cow, arrow."""
    rows, cols = np.mgrid[:TILE, :TILE]
    disc = (rows - 3.5) ** 2 + (cols - 3.5) ** 2 <= 8
    zombie = (abs(cols - 3.5) <= 2) & (rows >= 1) & (rows <= 6)
    skeleton = ((cols == 2) | (cols == 5) | (rows == 2) | (rows == 5)) & (rows >= 1) & (rows <= 6)
    skeleton &= (cols >= 1) & (cols <= 6)
    cow = (rows >= 2) & (rows <= 5) & (cols >= 1) & (cols <= 6)
    arrow = (rows == 3) | (rows == 4)
    arrow &= (cols >= 1) & (cols <= 6)
    return np.stack([disc, zombie, skeleton, cow, arrow])


MATERIAL_SPRITES = material_sprites()
ENTITY_MASKS = entity_masks()
_ROWS, _COLS = np.mgrid[:TILE, :TILE]
FLAG_MASK = _ROWS + _COLS <= 3  # a small triangle in the top-left corner
FRAME_MASK = (_ROWS == 0) | (_ROWS == TILE - 1) | (_COLS == 0) | (_COLS == TILE - 1)


def entity_codes(config: WorldConfig, state: CraftState, rows: jax.Array, cols: jax.Array):
    """Which entity is drawn on each tile of a `(R, W)` grid of map coordinates.

    Codes: 0 none, 1 + agent index for agents, then 1 + P + kind for mobs and arrows.
    """
    agents, mobs, arrows = state.agents, state.mobs, state.arrows
    num_agents = config.num_agents
    position = jnp.concatenate([agents.position, mobs.position, arrows.position])
    present = jnp.concatenate([agents.status != C.DEAD, mobs.alive, arrows.alive])
    code = jnp.concatenate(
        [
            1 + jnp.arange(num_agents),
            1 + num_agents + jnp.asarray(config.mob_kinds()),
            jnp.full(arrows.alive.shape, 1 + num_agents + C.ARROW),
        ]
    )
    hit = (
        (position[:, 0, None, None] == rows[None])
        & (position[:, 1, None, None] == cols[None])
        & present[:, None, None]
    )
    # Agents come first in `code`, so they win a shared tile (they never share one).
    first = jnp.argmax(hit, axis=0)
    return jnp.where(jnp.any(hit, axis=0), code[first], 0)


def _entity_sprites(config: WorldConfig, state: CraftState):
    """Colours `(1 + P + 4, 3)` and mask index per entity code."""
    agent_colours = jnp.asarray(C.AGENT_COLOURS[: config.num_agents])
    downed = (state.agents.status == C.DOWNED)[:, None]
    agent_colours = jnp.where(downed, agent_colours // 2 + 60, agent_colours)
    colours = jnp.concatenate(
        [jnp.zeros((1, 3), jnp.uint8), agent_colours.astype(jnp.uint8), jnp.asarray(C.MOB_COLOURS)]
    )
    masks = jnp.asarray(ENTITY_MASKS)[
        jnp.concatenate([jnp.zeros(1 + config.num_agents, jnp.int32), 1 + jnp.arange(4)])
    ]
    masks = masks.at[0].set(False)
    return colours, masks


def _light(
    state: CraftState,
    params: WorldParams,
    rows: jax.Array,
    cols: jax.Array,
    overlay: Overlay | None,
) -> jax.Array:
    """Daylight on each tile of a `(R, W)` grid: full where the overlay lights it."""
    light = daylight(state.step, params.day_length)
    lit = None if overlay is None else overlay.lit(state, params, jnp.stack([rows, cols], -1))
    if lit is None:
        return jnp.broadcast_to(light, rows.shape)
    return jnp.where(lit, 1.0, light)


def _sprites(overlay: Overlay | None) -> np.ndarray:
    return MATERIAL_SPRITES if overlay is None else overlay.material_sprites()


def _compose(config, state, sprites, materials, entities, marks: Marks | None, light) -> jax.Array:
    """Pixels `(R * TILE, W * TILE, 3)` of material, entity and mark grids, light `(R, W)`."""
    tiles = jnp.asarray(sprites)[materials]  # (R, W, T, T, 3)
    if marks is not None:
        tiles = jnp.where(
            marks.flag[:, :, None, None, None] & jnp.asarray(FLAG_MASK)[None, None, :, :, None],
            marks.flag_colour[:, :, None, None, :],
            tiles,
        )
    colours, masks = _entity_sprites(config, state)
    mask = masks[entities][..., None]
    tiles = jnp.where(mask, colours[entities][:, :, None, None, :], tiles)
    if marks is not None:
        tiles = jnp.where(
            marks.frame[:, :, None, None, None] & jnp.asarray(FRAME_MASK)[None, None, :, :, None],
            marks.frame_colour[:, :, None, None, :],
            tiles,
        )
    shade = 1.0 - NIGHT_DIMMING * (1.0 - light)
    tiles = (tiles.astype(jnp.float32) * shade[:, :, None, None, None]).astype(jnp.uint8)
    height, width = materials.shape
    return tiles.transpose(0, 2, 1, 3, 4).reshape(height * TILE, width * TILE, 3)


def render_map(
    config: WorldConfig, state: CraftState, params: WorldParams, overlay: Overlay | None = None
) -> jax.Array:
    """The whole map `(S * TILE, S * TILE, 3)` uint8, dimmed at night."""
    size = config.map_size
    rows, cols = jnp.meshgrid(jnp.arange(size), jnp.arange(size), indexing="ij")
    entities = entity_codes(config, state, rows, cols)
    marks = None if overlay is None else overlay.marks(state, rows, cols)
    light = _light(state, params, rows, cols, overlay)
    sprites = _sprites(overlay)
    return _compose(config, state, sprites, state.map.astype(jnp.int32), entities, marks, light)


def render_views(
    config: WorldConfig, state: CraftState, params: WorldParams, overlay: Overlay | None = None
) -> jax.Array:
    """Each agent's window `(P, H * TILE, W * TILE, 3)` uint8."""
    materials = view_materials(config, state)
    row_offsets, col_offsets = window_offsets(config)
    sprites = _sprites(overlay)

    def one(position, material, sleeping):
        rows = position[0] + jnp.asarray(row_offsets)[:, None] + 0 * col_offsets[None, :]
        cols = position[1] + jnp.asarray(col_offsets)[None, :] + 0 * row_offsets[:, None]
        entities = entity_codes(config, state, rows, cols)
        marks = None if overlay is None else overlay.marks(state, rows, cols)
        light = jnp.where(sleeping, 0.0, _light(state, params, rows, cols, overlay))
        return _compose(config, state, sprites, material, entities, marks, light)

    return jax.vmap(one)(state.agents.position, materials, state.agents.sleeping)


def write_gif(frames: np.ndarray, path: str | Path, fps: int = 10) -> Path:
    """Save `(T, H, W, 3)` uint8 frames as a looping GIF."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    iio.imwrite(path, np.asarray(frames), duration=1000 / fps, loop=0)
    return path
