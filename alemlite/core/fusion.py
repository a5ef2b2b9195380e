"""Steering XLA's fusion where it costs a step dearly."""

from __future__ import annotations

import jax
import jax.numpy as jnp


def materialise(value: jax.Array) -> jax.Array:
    """`value`, computed once into a buffer of its own.

    XLA fuses a chain of cheap elementwise producers into each consumer, recomputing it
    there; a pairwise test of K items against K (`x[:, None] == x[None, :]`) then recomputes
    the chain K times over. An identity scatter is a kernel XLA does not fuse through
    (`lax.optimization_barrier` is dropped on CPU before fusion), so the chain runs once.
    """
    rows = jnp.arange(value.shape[0])
    return jnp.zeros_like(value).at[rows].set(value, unique_indices=True)
