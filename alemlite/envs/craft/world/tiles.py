"""Reading and writing a few tiles of the map at once (no whole-map passes)."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from alemlite.core.fusion import materialise
from alemlite.envs.craft import constants as C


def in_bounds(position: jax.Array, size: int) -> jax.Array:
    """`(..., 2)` positions -> `(...)` bool."""
    return jnp.all((position >= 0) & (position < size), axis=-1)


def read_tiles(world: jax.Array, position: jax.Array) -> jax.Array:
    """Materials at `(..., 2)` positions; OUT_OF_BOUNDS outside the map."""
    size = world.shape[0]
    clipped = jnp.clip(position, 0, size - 1)
    material = world[clipped[..., 0], clipped[..., 1]].astype(jnp.int32)
    return jnp.where(in_bounds(position, size), material, C.OUT_OF_BOUNDS)


def write_tiles(world: jax.Array, position: jax.Array, material: jax.Array, write: jax.Array):
    """Set `material` at the `(K, 2)` positions where `write`; callers keep targets distinct."""
    size = world.shape[0]
    rows = jnp.where(write, position[:, 0], size)  # out of range: dropped
    return world.at[rows, position[:, 1]].set(material.astype(world.dtype), mode="drop")


def same_tile(a: jax.Array, b: jax.Array) -> jax.Array:
    """`(A, 2)` x `(B, 2)` -> `(A, B)` bool: the two positions coincide."""
    return jnp.all(a[:, None, :] == b[None, :, :], axis=-1)


def first_claim(claiming: jax.Array, target: jax.Array) -> jax.Array:
    """Among claimants of one tile, only the lowest index wins: `(K,)` bool."""
    # Both are read K times over by the (K, K) test below: compute them once.
    claiming, target = materialise(claiming), materialise(target)
    count = claiming.shape[0]
    earlier = jnp.tril(jnp.ones((count, count), bool), k=-1)  # [i, j]: j < i
    beaten = jnp.any(earlier & same_tile(target, target) & claiming[None, :], axis=1)
    return claiming & ~beaten


def l1_distance(a: jax.Array, b: jax.Array) -> jax.Array:
    """`(A, 2)` x `(B, 2)` -> `(A, B)` int: Crafter's `Object.distance`."""
    return jnp.abs(a[:, None, :] - b[None, :, :]).sum(-1)


def nearby_materials(world: jax.Array, position: jax.Array, radius: int) -> jax.Array:
    """Materials in the `(2r + 1)^2` square around each of `(P, 2)` positions."""
    offsets = jnp.arange(-radius, radius + 1)
    grid = jnp.stack(jnp.meshgrid(offsets, offsets, indexing="ij"), -1).reshape(-1, 2)
    return read_tiles(world, position[:, None, :] + grid[None, :, :])
