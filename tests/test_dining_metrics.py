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
