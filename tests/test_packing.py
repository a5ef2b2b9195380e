"""`Packing` lays a pytree out one array per dtype and gets exactly the same tree back."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from alemlite.core.packing import Packing


def _state(rng: np.random.Generator, batch: tuple[int, ...] = ()) -> dict:
    return {
        "map": rng.integers(0, 255, (*batch, 5, 4), dtype=np.uint8),
        "agents": {
            "position": rng.integers(-9, 9, (*batch, 3, 2)).astype(np.int16),
            "health": rng.normal(size=(*batch, 3)).astype(np.float32),
            "alive": rng.random((*batch, 3)) < 0.5,
        },
        "step": rng.integers(0, 99, batch, dtype=np.int32),
        "alpha": rng.normal(size=batch).astype(np.float32),
        "empty": np.zeros((*batch, 0), np.int16),
    }


def _assert_same(ours, theirs) -> None:
    assert jax.tree.structure(ours) == jax.tree.structure(theirs)
    for a, b in zip(jax.tree.leaves(ours), jax.tree.leaves(theirs), strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


def test_pack_groups_by_dtype_and_unpack_inverts_it():
    rng = np.random.default_rng(0)
    packing = Packing.of(_state(rng))
    for batch in ((), (7,), (2, 3)):
        state = _state(rng, batch)
        packed = packing.pack(state)
        # float32: health (3) + alpha (1); int16: position (6) + empty (0); one array each.
        assert {name: array.shape for name, array in packed.items()} == {
            "uint8": (*batch, 20),
            "int16": (*batch, 6),
            "float32": (*batch, 4),
            "bool": (*batch, 3),
            "int32": (*batch, 1),
        }
        _assert_same(packing.unpack(packed), state)


def test_gathering_packed_rows_gathers_whole_states_under_jit():
    rng = np.random.default_rng(1)
    pool = _state(rng, (6,))
    packing = Packing.of(jax.tree.map(lambda leaf: leaf[0], pool))
    slots = jnp.array([4, 0, 4])

    @jax.jit
    def draw(packed, slots):
        return packing.unpack(jax.tree.map(lambda rows: rows[slots], packed))

    _assert_same(draw(packing.pack(pool), slots), jax.tree.map(lambda leaf: leaf[slots], pool))
