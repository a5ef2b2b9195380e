"""The dining table as a picture: a round table seen from above, jittable.

Philosopher 0 sits at the top and the seats go clockwise. Each philosopher is a disc with
its number (green: eating, amber: holds one fork and waits for the other, grey: hungry
with no fork), its plate on the table shows its meals so far, and fork i lies between
philosopher i - 1 and philosopher i: on the table while free, drawn towards its holder (in
the holder's colour) while held. A table that deadlocked this episode is drawn with a red
rim. Every shape is a mask over the pixel grid, so one frame is a handful of array ops and
batches with `vmap` like any other step output.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from alemlite.envs.dining.state import FREE

SIZE = 256  # pixels per side

BACKGROUND = (246, 244, 238)
TABLE = (205, 168, 120)
RIM = (150, 112, 70)
DEADLOCK_RIM = (200, 40, 40)
PLATE = (252, 252, 250)
PLATE_EDGE = (120, 120, 120)
FOOD = (236, 180, 60)
EATING = (46, 160, 80)
WAITING = (235, 150, 30)
HUNGRY = (150, 155, 165)
FORK_FREE = (95, 95, 105)
INK = (40, 40, 40)
LABEL = (255, 255, 255)

# A 3x5 pixel font for the digits 0-9 (rows top to bottom, 1 = ink).
_GLYPHS = (
    "111101101101111",
    "010110010010111",
    "111001111100111",
    "111001111001111",
    "101101111001001",
    "111100111001111",
    "111100111101111",
    "111001010010010",
    "111101111101111",
    "111101111001111",
)
FONT = np.array([[int(bit) for bit in glyph] for glyph in _GLYPHS], np.bool_).reshape(10, 5, 3)


def _disc(x, y, cx, cy, radius):
    """`(..., H, W)` mask of discs centred at `(cx, cy)` (arrays broadcast over leading axes)."""
    return (x - cx[..., None, None]) ** 2 + (y - cy[..., None, None]) ** 2 <= radius[
        ..., None, None
    ] ** 2


def _segment(x, y, ax, ay, bx, by, width):
    """`(..., H, W)` mask of thick line segments from `(ax, ay)` to `(bx, by)`."""
    ax, ay, bx, by = (value[..., None, None] for value in (ax, ay, bx, by))
    dx, dy = bx - ax, by - ay
    t = jnp.clip(((x - ax) * dx + (y - ay) * dy) / jnp.maximum(dx * dx + dy * dy, 1e-6), 0, 1)
    return (x - ax - t * dx) ** 2 + (y - ay - t * dy) ** 2 <= width**2


def _numbers(x, y, cx, cy, values, scale):
    """`(..., H, W)` mask of the numbers `values` (0-99), centred at `(cx, cy)`."""
    values, cx, cy, scale = (
        jnp.asarray(value)[..., None, None] for value in (jnp.clip(values, 0, 99), cx, cy, scale)
    )
    two = values >= 10
    width = jnp.where(two, 7, 3)  # in font pixels: glyphs are 3 wide, 1 apart
    column = jnp.floor((x - cx) / scale + width / 2).astype(jnp.int32)
    row = jnp.floor((y - cy) / scale + 2.5).astype(jnp.int32)
    second = two & (column >= 4)
    digit = jnp.where(second, values % 10, jnp.where(two, values // 10, values))
    within = jnp.where(second, column - 4, column)
    inside = (row >= 0) & (row < 5) & (within >= 0) & (within < 3) & (column < width)
    ink = jnp.asarray(FONT)[digit, jnp.clip(row, 0, 4), jnp.clip(within, 0, 2)]
    return inside & ink


def _rgb(colour):
    return jnp.asarray(colour, jnp.float32)


def _paint(canvas, mask, colour):
    """`canvas` with `colour` where `mask` (any leading axes of `mask` are merged)."""
    if mask.ndim == 3:
        mask = mask.any(axis=0)
    return jnp.where(mask[..., None], _rgb(colour), canvas)


def _paint_each(canvas, masks, colours):
    """`canvas` with mask i (in order, later on top) painted in colour i: `(M, H, W)`, `(M, 3)`."""
    for index in range(masks.shape[0]):
        canvas = jnp.where(masks[index][..., None], colours[index], canvas)
    return canvas


def render_rgb(env: Any, state: Any, params: Any) -> Any:
    """The table `(SIZE, SIZE, 3)` uint8: philosophers, plates with their meals, forks."""
    seats = env.config.max_philosophers
    count = jnp.asarray(params.num_philosophers, jnp.int32)
    seat = jnp.arange(seats)
    active = seat < count
    y, x = jnp.mgrid[:SIZE, :SIZE].astype(jnp.float32) + 0.5
    centre = SIZE / 2
    step_angle = 2 * jnp.pi / count
    angle = -jnp.pi / 2 + seat * step_angle  # philosopher i, clockwise from the top

    def at(radius, theta):
        return centre + radius * jnp.cos(theta), centre + radius * jnp.sin(theta)

    holder = jnp.asarray(state.fork_holder)
    right_fork = jnp.where(seat + 1 >= count, 0, seat + 1)
    holds = (holder[seat] == seat).astype(jnp.int32) + (holder[right_fork] == seat)
    eating = jnp.asarray(state.eating)
    head_colour = jnp.where(
        eating[:, None], _rgb(EATING), jnp.where((holds > 0)[:, None], _rgb(WAITING), _rgb(HUNGRY))
    )

    canvas = jnp.broadcast_to(_rgb(BACKGROUND), (SIZE, SIZE, 3))
    middle = jnp.full((), centre, jnp.float32)
    table_radius = jnp.float32(0.31 * SIZE)
    rim = jnp.where(jnp.asarray(state.deadlocked), _rgb(DEADLOCK_RIM), _rgb(RIM))
    canvas = _paint(canvas, _disc(x, y, middle, middle, table_radius), rim)
    canvas = _paint(canvas, _disc(x, y, middle, middle, table_radius - 4), TABLE)

    # Plates (food on the plate while eating), each with its meal count.
    gap = jnp.sin(step_angle / 2)
    plate_radius = jnp.minimum(0.075 * SIZE, 0.21 * SIZE * gap * 0.8) * jnp.ones(seats)
    px, py = at(0.21 * SIZE, angle)
    plates = _disc(x, y, px, py, plate_radius) & active[:, None, None]
    inner = _disc(x, y, px, py, plate_radius - 2) & active[:, None, None]
    food = _disc(x, y, px, py, plate_radius * 0.75) & (active & eating)[:, None, None]
    canvas = _paint(canvas, plates, PLATE_EDGE)
    canvas = _paint(canvas, inner, PLATE)
    canvas = _paint(canvas, food, FOOD)
    meals = jnp.asarray(state.meals)
    scale = jnp.maximum(jnp.floor(plate_radius / 5), 1)
    canvas = _paint(canvas, _numbers(x, y, px, py, meals, scale) & active[:, None, None], INK)

    # Forks: fork i between philosophers i - 1 and i; a held one reaches towards its holder.
    fork_angle = angle - step_angle / 2
    held = (holder != FREE) & active
    towards = jnp.where(held, angle[jnp.clip(holder, 0, seats - 1)], fork_angle)
    # Turn the short way round (the holder is a neighbour, half a seat away).
    turn = jnp.arctan2(jnp.sin(towards - fork_angle), jnp.cos(towards - fork_angle))
    shown_angle = fork_angle + jnp.where(held, 0.55 * turn, 0.0)
    inner_r = jnp.where(held, 0.27 * SIZE, 0.12 * SIZE)
    outer_r = jnp.where(held, 0.37 * SIZE, 0.27 * SIZE)
    ax, ay = at(inner_r, shown_angle)
    bx, by = at(outer_r, shown_angle)
    width = jnp.maximum(jnp.minimum(3.0, 0.21 * SIZE * gap * 0.15), 1.0)
    forks = _segment(x, y, ax, ay, bx, by, width) & active[:, None, None]
    fork_colour = jnp.where(
        held[:, None],
        head_colour[jnp.clip(holder, 0, seats - 1)] * 0.7,
        _rgb(FORK_FREE),
    )
    canvas = _paint_each(canvas, forks, fork_colour)

    # Philosophers, numbered.
    head_radius = jnp.minimum(0.075 * SIZE, 0.43 * SIZE * gap * 0.8) * jnp.ones(seats)
    hx, hy = at(0.43 * SIZE, angle)
    heads = _disc(x, y, hx, hy, head_radius) & active[:, None, None]
    canvas = _paint(canvas, heads, INK)
    heads = _disc(x, y, hx, hy, head_radius - 2) & active[:, None, None]
    canvas = _paint_each(canvas, heads, head_colour)
    label_scale = jnp.maximum(jnp.floor(head_radius / 5), 1)
    labels = _numbers(x, y, hx, hy, seat, label_scale) & active[:, None, None]
    canvas = _paint(canvas, labels, LABEL)
    return jnp.round(canvas).astype(jnp.uint8)
