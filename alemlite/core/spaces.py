"""Minimal observation and action spaces, for code that expects gym-style spaces."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp


@dataclass(frozen=True)
class Discrete:
    """Integers `0 .. n - 1`."""

    n: int
    dtype: jnp.dtype = jnp.int32

    @property
    def shape(self) -> tuple[int, ...]:
        return ()

    def sample(self, key: jax.Array) -> jax.Array:
        return jax.random.randint(key, (), 0, self.n, dtype=self.dtype)

    def contains(self, value: jax.Array) -> jax.Array:
        return (value >= 0) & (value < self.n)


@dataclass(frozen=True)
class Box:
    """Real arrays of a fixed shape within `[low, high]`."""

    low: float
    high: float
    shape: tuple[int, ...]
    dtype: jnp.dtype = jnp.float32

    def sample(self, key: jax.Array) -> jax.Array:
        return jax.random.uniform(key, self.shape, self.dtype, self.low, self.high)

    def contains(self, value: jax.Array) -> jax.Array:
        return (value.shape == self.shape) & jnp.all((value >= self.low) & (value <= self.high))
