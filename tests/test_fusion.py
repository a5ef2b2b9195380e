"""`materialise` changes no value and stays a kernel of its own after XLA's passes."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from alemlite.core.fusion import materialise


@pytest.mark.parametrize(
    "value",
    [
        np.array([3, -1, 7], np.int32),
        np.array([[1.5, np.nan], [-0.0, np.inf]], np.float32),
        np.array([True, False, True, True]),
        np.array([[2, 9], [4, 4], [0, 1]], np.int16),
        np.zeros((0, 2), np.int32),
    ],
    ids=["int32", "float32", "bool", "int16-pairs", "empty"],
)
def test_materialise_returns_its_value_under_jit_and_vmap(value):
    np.testing.assert_array_equal(np.asarray(jax.jit(materialise)(value)), value)
    batch = np.stack([value, value[::-1]])
    np.testing.assert_array_equal(np.asarray(jax.jit(jax.vmap(materialise))(batch)), batch)


def test_materialise_survives_compilation_as_a_scatter():
    # `lax.optimization_barrier` is gone from the compiled program on CPU; if XLA ever
    # folds this identity scatter away too, the pairwise tests it guards recompute again.
    def pairwise(positions):
        shifted = materialise(positions * 3 + 1)
        return jnp.all(shifted[:, None, :] == shifted[None, :, :], axis=-1).sum()

    positions = jnp.zeros((64, 10, 2), jnp.int32)
    text = jax.jit(jax.vmap(pairwise)).lower(positions).compile().as_text()
    assert "scatter" in text
