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
    for low, high in ((0.2, 0.85), (-3.5, 2.25), (1.0, 1.0), (5.0, -1.0)):
        for shape in ((), (1001,)):
            _equal(
                threefry.uniform(key, shape, low, high),
                jax.random.uniform(key, shape, minval=low, maxval=high),
            )
    for data in (0, 1, 3, 1000, 2**31 - 1):
        _equal(threefry.fold_in(key, data), jax.random.fold_in(key, data))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    "bounds", [(0, 2), (-4, 5), (3, 3), (5, 2), (0, 7), (-(2**31), 2**31 - 1), (0, 70_000)]
)
def test_randint_equals_jax_random(seed, bounds):
    key = jax.random.PRNGKey(seed)
    for shape in ((1,), (6, 17, 2), ()):
        _equal(threefry.randint(key, shape, *bounds), jax.random.randint(key, shape, *bounds))


def test_randint_rejects_bounds_outside_int32():
    with pytest.raises(ValueError, match="fit in int32"):
        threefry.randint(jax.random.PRNGKey(0), (2,), 0, 2**31)


def test_equal_under_jit_and_vmap_and_in_chains():
    keys = jax.random.split(jax.random.PRNGKey(7), 5)

    def draw(random, key):
        bounded = random.uniform(key, (), minval=0.2, maxval=0.85)
        return random.uniform(key, (9,)), random.randint(key, (9,), -2, 11), bounded

    @jax.jit
    def ours(keys):
        folded = jax.vmap(lambda key: threefry.fold_in(key, 3))(keys)
        split = jax.vmap(lambda key: threefry.split(key, 4))(folded)
        return jax.vmap(jax.vmap(lambda key: draw(threefry, key)))(split)

    def theirs(keys):
        folded = jax.vmap(lambda key: jax.random.fold_in(key, 3))(keys)
        split = jax.vmap(lambda key: jax.random.split(key, 4))(folded)
        return jax.vmap(jax.vmap(lambda key: draw(jax.random, key)))(split)

    for a, b in zip(ours(keys), theirs(keys), strict=True):
        _equal(a, b)


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
    _equal(threefry.randint(key, (4,), 0, 9), jax.random.randint(key, (4,), 0, 9))


def test_split_kernel_holds_no_concatenation():
    # XLA emits each operand of a concatenation as its own code: a split that stacked the
    # hash's two words would compile the twenty rounds twice in its kernel.
    compiled = jax.jit(lambda key: threefry.split(key, 5)).lower(jax.random.PRNGKey(0)).compile()
    assert " concatenate(" not in compiled.as_text()
