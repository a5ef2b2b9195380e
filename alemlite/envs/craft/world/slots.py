"""Fixed-size tables of slots (plants, arrows, tasks): which free slot each newcomer takes."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def free_slots_first(occupied: jax.Array) -> jax.Array:
    """`(S,)` slot indices, the free slots first, each group in index order.

    The same as `jnp.argsort(occupied, stable=True)`, computed from two running counts:
    on CPU a sort is among the costliest kernels of a step at these sizes.
    """
    occupied = occupied.astype(bool)
    free = ~occupied
    num_free = jnp.sum(free, dtype=jnp.int32)
    place = jnp.where(
        free,
        jnp.cumsum(free, dtype=jnp.int32) - 1,
        num_free + jnp.cumsum(occupied, dtype=jnp.int32) - 1,
    )
    slots = jnp.arange(occupied.shape[0], dtype=jnp.int32)
    return jnp.argmax(place[None, :] == slots[:, None], axis=1).astype(jnp.int32)
