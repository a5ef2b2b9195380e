"""`alemlite.core.threefry` returns exactly what `jax.random` returns, jitted and vmapped."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from alemlite.core import threefry

SEEDS = (0, 1, 12345, 2**31 - 1)


def _equal(ours, theirs) -> None:
    np.testing.assert_array_equal(np.asarray(ours), np.asarray(theirs))


@pytest.mark.parametrize("seed", SEEDS)
def test_split_fold_in_and_uniform_equal_jax_random(seed):
    key = jax.random.PRNGKey(seed)
    for num in (1, 2, 3, 64, 1001):
        _equal(threefry.split(key, num), jax.random.split(key, num))
        _equal(threefry.uniform(key, (num,)), jax.random.uniform(key, (num,)))
    _equal(threefry.split(key), jax.random.split(key))
    _equal(threefry.uniform(key, (3, 4, 5)), jax.random.uniform(key, (3, 4, 5)))
    _equal(threefry.uniform(key, ()), jax.random.uniform(key, ()))
    for data in (0, 1, 3, 1000, 2**31 - 1):
        _equal(threefry.fold_in(key, data), jax.random.fold_in(key, data))


def test_equal_under_jit_and_vmap_and_in_chains():
    keys = jax.random.split(jax.random.PRNGKey(7), 5)

    @jax.jit
    def ours(keys):
        folded = jax.vmap(lambda key: threefry.fold_in(key, 3))(keys)
        split = jax.vmap(lambda key: threefry.split(key, 4))(folded)
        return jax.vmap(jax.vmap(lambda key: threefry.uniform(key, (9,))))(split)

    def theirs(keys):
        folded = jax.vmap(lambda key: jax.random.fold_in(key, 3))(keys)
        split = jax.vmap(lambda key: jax.random.split(key, 4))(folded)
        return jax.vmap(jax.vmap(lambda key: jax.random.uniform(key, (9,))))(split)

    _equal(ours(keys), theirs(keys))


def test_fold_in_takes_traced_data():
    key = jax.random.PRNGKey(3)
    data = np.arange(6, dtype=np.int32)
    _equal(
        jax.jit(jax.vmap(lambda d: threefry.fold_in(key, d)))(data),
        jax.vmap(lambda d: jax.random.fold_in(key, d))(data),
    )


def test_typed_keys_defer_to_jax_random():
    key = jax.random.key(5)
    _equal(
        jax.random.key_data(threefry.split(key, 3)),
        jax.random.key_data(jax.random.split(key, 3)),
    )
    _equal(threefry.uniform(key, (4,)), jax.random.uniform(key, (4,)))
