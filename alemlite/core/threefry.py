"""`split`, `fold_in`, `uniform` and `randint` equal to `jax.random`'s, as fused kernels on CPU.

On CPU, JAX lowers its Threefry-2x32 hash as a loop over five groups of four rounds,
which keeps compile time down but runs each iteration as a few tiny kernels plus copies
of the loop state: tens of microseconds per call however few numbers it makes, several
calls per environment step. Written out here (Salmon et al. 2011, 20 rounds), the hash
is a chain of integer operations XLA fuses into one kernel. The counters are laid out as
JAX's default (`jax_threefry_partitionable`) generator lays them out, so every function
returns exactly what its `jax.random` namesake returns for the same raw `uint32[2]` key
(tests/test_threefry.py checks this); for typed keys, or where JAX is configured
otherwise, they defer to `jax.random`. Each result is made by a reduction, which XLA
keeps as the root of its own kernel: were the twenty rounds fused into the consumers
instead, they would be recomputed in every one of them (an optimisation barrier does not
stop that on CPU).
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

ROTATIONS = ((13, 15, 26, 6), (17, 29, 16, 24))
KEY_SCHEDULE_PARITY = np.uint32(0x1BD11BDA)


def _rotate_left(value: jax.Array, bits: int) -> jax.Array:
    return lax.bitwise_or(
        lax.shift_left(value, np.uint32(bits)), lax.shift_right_logical(value, np.uint32(32 - bits))
    )


@jax.jit
def hash_pairs(key: jax.Array, high: jax.Array, low: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Threefry-2x32 (20 rounds) of the counter pairs `(high, low)` under `key` `uint32[2]`.

    Written in `lax` primitives (`jnp` operators would trace each of the hundred-odd
    operations as a nested jitted call) and jitted, so that each shape traces once.
    """
    schedule = (key[0], key[1], key[0] ^ key[1] ^ KEY_SCHEDULE_PARITY)
    x0, x1 = lax.add(high, schedule[0]), lax.add(low, schedule[1])
    for group in range(5):
        for bits in ROTATIONS[group % 2]:
            x0 = lax.add(x0, x1)
            x1 = lax.bitwise_xor(_rotate_left(x1, bits), x0)
        x0 = lax.add(x0, schedule[(group + 1) % 3])
        x1 = lax.add(lax.add(x1, schedule[(group + 2) % 3]), np.uint32(group + 1))
    return x0, x1


def _default_generator(key: jax.Array) -> bool:
    """Whether `key` is a raw key of JAX's default, partitionable Threefry generator."""
    return (
        key.dtype == jnp.uint32
        and key.shape == (2,)
        and jax.config.jax_threefry_partitionable
        and jax.config.jax_default_prng_impl == "threefry2x32"
    )


def _materialised(words: jax.Array) -> jax.Array:
    """`words`, computed as an OR with zero over a new last axis of two: XLA keeps such a
    reduction as the root of its own kernel, so its producers are not fused onward."""
    pair = jnp.stack([words, jnp.zeros_like(words)], axis=-1)
    return jax.lax.reduce(pair, np.uint32(0), jax.lax.bitwise_or, (pair.ndim - 1,))


def _keys(first: jax.Array, second: jax.Array) -> jax.Array:
    """Raw keys `(..., 2)` from the two hash words.

    Chosen per lane by a `select`, not stacked: XLA emits each operand of a concatenation
    as its own code, so a stack would compile the twenty rounds twice, where a select
    compiles them once. It runs them once per lane, twice the arithmetic of a stack: small
    beside any step that uses one key per environment (timed: no difference at 64 envs).
    """
    shape = (*first.shape, 2)
    lane = lax.broadcasted_iota(jnp.int32, shape, first.ndim)
    axes = tuple(range(first.ndim))
    first, second = (lax.broadcast_in_dim(word, shape, axes) for word in (first, second))
    return _materialised(lax.select(lane == 0, first, second))


def _counters(count: int) -> tuple[jax.Array, jax.Array]:
    low = jnp.arange(count, dtype=jnp.uint32)
    return jnp.zeros_like(low), low


def split(key: jax.Array, num: int = 2) -> jax.Array:
    """`jax.random.split(key, num)` for a raw key: `(num, 2)` uint32."""
    if not _default_generator(key):
        return jax.random.split(key, num)
    return _keys(*hash_pairs(key, *_counters(num)))


def fold_in(key: jax.Array, data: int | jax.Array) -> jax.Array:
    """`jax.random.fold_in(key, data)` for a raw key and a 32-bit integer `data`."""
    if not _default_generator(key):
        return jax.random.fold_in(key, data)
    low = jnp.asarray(data).astype(jnp.uint32)
    return _keys(*hash_pairs(key, jnp.zeros_like(low), low))


def _bits(key: jax.Array, count: int) -> jax.Array:
    """`jax.random.bits(key, (count,))`: 32 random bits per value."""
    return _materialised(jnp.bitwise_xor(*hash_pairs(key, *_counters(count))))


def uniform(
    key: jax.Array, shape: tuple[int, ...], minval: float = 0.0, maxval: float = 1.0
) -> jax.Array:
    """`jax.random.uniform(key, shape, minval=minval, maxval=maxval)` for Python float
    bounds: float32 in [minval, maxval)."""
    if not _default_generator(key):
        return jax.random.uniform(key, shape, minval=minval, maxval=maxval)
    return _uniform(key, tuple(shape), float(minval), float(maxval))


@partial(jax.jit, static_argnums=(1, 2, 3))
def _uniform(key: jax.Array, shape: tuple[int, ...], minval: float, maxval: float) -> jax.Array:
    # Jitted as `jax.random.uniform` is, so that XLA compiles the scaling as it compiles
    # JAX's (it may fuse the multiply-add), also when called outside a jit.
    bits = _bits(key, int(np.prod(shape, dtype=np.int64)))
    # 23 random mantissa bits under the exponent of 1.0 give [1, 2); minus 1 gives [0, 1).
    mantissa = (bits >> np.uint32(9)) | np.uint32(0x3F800000)
    floats = (jax.lax.bitcast_convert_type(mantissa, jnp.float32) - np.float32(1.0)).reshape(shape)
    low, high = np.float32(minval), np.float32(maxval)
    return jnp.maximum(low, floats * (high - low) + low)


def randint(key: jax.Array, shape: tuple[int, ...], minval: int, maxval: int) -> jax.Array:
    """`jax.random.randint(key, shape, minval, maxval)` for Python int bounds: int32.

    As JAX does, two 32-bit draws per value are reduced modulo the span, which keeps the
    bias of a span that is not a power of two negligible.
    """
    if not _default_generator(key):
        return jax.random.randint(key, shape, minval, maxval)
    info = np.iinfo(np.int32)
    if not info.min <= min(minval, maxval) <= max(minval, maxval) <= info.max:
        raise ValueError(f"randint bounds ({minval}, {maxval}) must fit in int32")
    span = 1 if maxval <= minval else maxval - minval
    # The higher draw's weight, 2**32 modulo the span, computed as JAX computes it: the
    # square of 2**16 % span in uint32 (so 0 for spans over 2**16), then modulo the span.
    multiplier = ((2**16 % span) ** 2 % 2**32) % span
    span, multiplier = np.uint32(span), np.uint32(multiplier)
    count = int(np.prod(shape, dtype=np.int64))
    higher_key, lower_key = split(key)
    higher, lower = _bits(higher_key, count), _bits(lower_key, count)
    offset = (higher % span) * multiplier + lower % span
    return (np.int32(minval) + (offset % span).astype(jnp.int32)).reshape(shape)
