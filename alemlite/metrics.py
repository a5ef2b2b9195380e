"""Jittable inequality measures over the active seats of an environment.

Every function takes `values` of shape `(num_agents,)` and a boolean `mask` of
the same shape marking the seats that count; masked-out seats are ignored.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def gini(values: jax.Array, mask: jax.Array) -> jax.Array:
    """Gini coefficient `sum_ij |x_i - x_j| / (2 n sum x)`; 0 when every value is zero.

    From the sorted values, in O(N log N) time and O(N) memory (the pairs of a table of
    200,000 seats would take 160 GB): with the n counted values ascending, x_(1) <= ... <=
    x_(n), `sum_ij |x_i - x_j| = 2 sum_k (2k - n - 1) x_(k)`.
    """
    values = values.astype(jnp.float32)
    count = mask.sum()
    # Seats that do not count sort last and weigh nothing.
    ordered = jnp.sort(jnp.where(mask, values, jnp.inf))
    rank = jnp.arange(1, values.shape[0] + 1)
    counted = rank <= count
    weights = jnp.where(counted, 2 * rank - count - 1, 0).astype(jnp.float32)
    differences = 2.0 * jnp.sum(weights * jnp.where(counted, ordered, 0.0))
    total = jnp.where(mask, values, 0.0).sum()
    return jnp.where(total > 0, differences / (2.0 * count * jnp.maximum(total, 1e-30)), 0.0)


def normalised_gini(values: jax.Array, mask: jax.Array) -> jax.Array:
    """Gini scaled by its maximum `(n - 1) / n`, so one holder of everything gives 1.

    0 when every value is zero or fewer than two seats count.
    """
    count = mask.sum().astype(jnp.float32)
    scale = jnp.where(count > 1, count / jnp.maximum(count - 1.0, 1.0), 0.0)
    return gini(values, mask) * scale


def fairness(values: jax.Array, mask: jax.Array) -> jax.Array:
    """`1 - normalised Gini`: 1 for equal shares (and when nobody has anything)."""
    return 1.0 - normalised_gini(values, mask)


def jain_index(values: jax.Array, mask: jax.Array) -> jax.Array:
    """Jain's fairness index `(sum x)^2 / (n sum x^2)`, in `[1/n, 1]`; 1 when all are zero."""
    values = jnp.where(mask, values, 0).astype(jnp.float32)
    squares = jnp.square(values).sum()
    count = mask.sum()
    return jnp.where(
        squares > 0, jnp.square(values.sum()) / (count * jnp.maximum(squares, 1e-30)), 1.0
    )
