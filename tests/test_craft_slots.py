"""Craft's slot tables hand out free slots in the order a stable sort would."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from alemlite.envs.craft.world.slots import free_slots_first

FREE_FIRST = jax.jit(jax.vmap(free_slots_first))


@pytest.mark.parametrize("num_slots", [1, 4, 8, 13])
def test_free_slots_first_is_the_stable_argsort_of_occupied(num_slots):
    rng = np.random.default_rng(num_slots)
    occupied = rng.random((300, num_slots)) < rng.random((300, 1))
    occupied[0], occupied[1] = True, False  # a full table and an empty one
    ours = np.asarray(FREE_FIRST(occupied))
    assert ours.dtype == np.int32
    np.testing.assert_array_equal(ours, np.argsort(occupied, axis=1, kind="stable"))
