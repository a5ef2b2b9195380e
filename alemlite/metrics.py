"""Jittable inequality measures over the active seats of an environment.

Every function takes `values` of shape `(num_agents,)` and a boolean `mask` of
the same shape marking the seats that count; masked-out seats are ignored.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

# Up to this many seats the pairwise form is used: XLA's sort is slow on CPU, and summing
# N x N differences is several times faster for a table of a few philosophers. Beyond it the
# pairs would not fit (200,000 seats: 160 GB), and the sorted form takes O(N log N) time
# and O(N) memory.
PAIRWISE_MAX_SEATS = 64


def gini(values: jax.Array, mask: jax.Array) -> jax.Array:
    """Gini coefficient `sum_ij |x_i - x_j| / (2 n sum x)`; 0 when every value is zero."""
    count = mask.sum()
    if values.shape[0] <= PAIRWISE_MAX_SEATS:
        total, differences = _pairwise(values, mask, count)
    else:
        total, differences = _sorted(values, mask, count)
    return jnp.where(total > 0, differences / (2.0 * count * jnp.maximum(total, 1e-30)), 0.0)


def _pairwise(values: jax.Array, mask: jax.Array, count: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The counted total and `sum_ij |x_i - x_j|` over every pair of counted seats."""
    values = jnp.where(mask, values, 0)
    if jnp.issubdtype(values.dtype, jnp.integer):
        # Exact for counts, and cheaper than masking every pair: a masked-out seat holds 0,
        # so each pair of it with a counted seat adds |x_i| twice.
        every_pair = jnp.abs(values[:, None] - values[None, :]).sum()
        outside = mask.shape[0] - count
        differences = every_pair - 2 * outside * jnp.abs(values).sum()
        return values.sum().astype(jnp.float32), differences.astype(jnp.float32)
    values = values.astype(jnp.float32)
    pair_mask = mask[:, None] & mask[None, :]
    differences = jnp.where(pair_mask, jnp.abs(values[:, None] - values[None, :]), 0.0).sum()
    return values.sum(), differences


def _sorted(values: jax.Array, mask: jax.Array, count: jax.Array) -> tuple[jax.Array, jax.Array]:
    """As `_pairwise`, from the n counted values ascending, x_(1) <= ... <= x_(n):
    `sum_ij |x_i - x_j| = 2 sum_k (2k - n - 1) x_(k)`."""
    values = values.astype(jnp.float32)
    # Seats that do not count sort last and weigh nothing.
    ordered = jnp.sort(jnp.where(mask, values, jnp.inf))
    rank = jnp.arange(1, values.shape[0] + 1)
    counted = rank <= count
    weights = jnp.where(counted, 2 * rank - count - 1, 0).astype(jnp.float32)
    differences = 2.0 * jnp.sum(weights * jnp.where(counted, ordered, 0.0))
    return jnp.where(mask, values, 0.0).sum(), differences


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
