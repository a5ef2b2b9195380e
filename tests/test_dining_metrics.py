"""The jittable inequality measures of `alemlite.metrics` against plain formulas."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from alemlite import metrics
from benchmarks.reference.dining import jain_index, normalised_gini


@pytest.mark.parametrize(
    "values",
    [[0, 0, 0, 0], [3, 3, 3, 3], [4, 0, 0, 0], [1, 2, 3, 4], [5, 0, 2, 7, 1], [0, 9]],
)
def test_masked_measures_match_plain_formulas_on_the_active_seats(values):
    padded = jnp.asarray([*values, 6, 8], jnp.int32)  # two inert seats with junk
    mask = jnp.arange(len(values) + 2) < len(values)
    gini = jax.jit(metrics.normalised_gini)(padded, mask)
    np.testing.assert_allclose(gini, normalised_gini(values), atol=1e-6)
    fairness = metrics.fairness(padded, mask)
    np.testing.assert_allclose(fairness, 1 - normalised_gini(values), atol=1e-6)
    np.testing.assert_allclose(metrics.jain_index(padded, mask), jain_index(values), atol=1e-6)


def test_extremes():
    mask = jnp.ones(4, bool)
    assert float(metrics.normalised_gini(jnp.array([4, 0, 0, 0]), mask)) == pytest.approx(1.0)
    assert float(metrics.fairness(jnp.zeros(4), mask)) == 1.0
    assert float(metrics.jain_index(jnp.array([4, 0, 0, 0]), mask)) == pytest.approx(0.25)
    assert float(metrics.gini(jnp.array([4, 0, 0, 0]), mask)) == pytest.approx(0.75)


def pairwise_gini(values: np.ndarray, mask: np.ndarray) -> float:
    """The Gini coefficient over every pair of counted seats (the former O(N^2) formula)."""
    counted = values[mask].astype(np.float64)
    total = counted.sum()
    if total <= 0:
        return 0.0
    return np.abs(counted[:, None] - counted[None, :]).sum() / (2 * len(counted) * total)


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, 1000])
@pytest.mark.parametrize("dtype", [np.int32, np.float32])
@pytest.mark.parametrize("pairwise_max_seats", [0, 10_000])  # the sorted form, the pairwise one
def test_both_forms_of_the_gini_equal_the_pairwise_formula(
    size, dtype, pairwise_max_seats, monkeypatch
):
    monkeypatch.setattr(metrics, "PAIRWISE_MAX_SEATS", pairwise_max_seats)
    rng = np.random.default_rng(size)
    gini = jax.jit(lambda values, mask: metrics.gini(values, mask))  # traced with the patch
    for _ in range(5):
        values = rng.integers(0, 12, size) if dtype == np.int32 else rng.exponential(3.0, size)
        values = values.astype(dtype)
        mask = rng.random(size) < 0.7
        expected = pairwise_gini(values, mask)
        np.testing.assert_allclose(gini(values, mask), expected, rtol=1e-5, atol=1e-6)


def test_the_gini_of_a_huge_table_needs_memory_of_its_size_only():
    """200,000 seats: the pairs alone would take 160 GB; the compiled measure holds a few
    copies of the table."""
    size = 200_000
    values = jax.ShapeDtypeStruct((size,), jnp.int32)
    mask = jax.ShapeDtypeStruct((size,), jnp.bool_)
    compiled = jax.jit(metrics.fairness).lower(values, mask).compile()
    assert compiled.memory_analysis().temp_size_in_bytes < 16 * 4 * size
