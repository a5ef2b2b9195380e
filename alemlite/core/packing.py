"""A pytree of arrays laid out as one array per dtype, for moving whole states at once.

Copying, gathering or scattering a state with dozens of leaves costs one compiled kernel
per leaf; on its packed form it costs one per dtype. `VecEnv` keeps its pool of start
states packed for that reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


@dataclass(frozen=True)
class Packing:
    """Where each leaf of one state lies in the packed arrays (shapes exclude batch axes).

    `pack` maps leaves of shape `batch + shape` to `{dtype name: batch + (size,)}`, the
    leaves of a dtype flattened and concatenated in tree order; `unpack` inverts it for
    any leading batch axes.
    """

    treedef: Any
    shapes: tuple[tuple[int, ...], ...]
    dtypes: tuple[str, ...]
    offsets: tuple[int, ...]  # each leaf's start within its dtype's array

    @classmethod
    def of(cls, state: Any) -> Packing:
        """The packing of one (unbatched) state, from its leaves' shapes and dtypes."""
        leaves, treedef = jax.tree.flatten(state)
        shapes = tuple(tuple(np.shape(leaf)) for leaf in leaves)
        dtypes = tuple(np.dtype(leaf.dtype).name for leaf in leaves)
        filled: dict[str, int] = {}
        offsets = []
        for shape, dtype in zip(shapes, dtypes, strict=True):
            offsets.append(filled.get(dtype, 0))
            filled[dtype] = offsets[-1] + prod(shape)
        return cls(treedef, shapes, dtypes, tuple(offsets))

    def pack(self, state: Any) -> dict[str, jax.Array]:
        leaves = self.treedef.flatten_up_to(state)
        batch = jnp.shape(leaves[0])[: jnp.ndim(leaves[0]) - len(self.shapes[0])]
        grouped: dict[str, list[jax.Array]] = {}
        for leaf, shape, dtype in zip(leaves, self.shapes, self.dtypes, strict=True):
            grouped.setdefault(dtype, []).append(jnp.reshape(leaf, (*batch, prod(shape))))
        return {dtype: jnp.concatenate(parts, axis=-1) for dtype, parts in grouped.items()}

    def unpack(self, packed: dict[str, jax.Array]) -> Any:
        batch = next(iter(packed.values())).shape[:-1]
        leaves = [
            packed[dtype][..., offset : offset + prod(shape)].reshape(*batch, *shape)
            for shape, dtype, offset in zip(self.shapes, self.dtypes, self.offsets, strict=True)
        ]
        return self.treedef.unflatten(leaves)
