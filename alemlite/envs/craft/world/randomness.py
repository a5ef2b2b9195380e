"""One uniform draw per call site, cut into named arrays.

Each call compiles its own copy of the generator, so drawing every number a function
needs at once keeps compile time and run time down. The draw is `jax.random.uniform`'s,
computed by `alemlite.core.threefry` (the same numbers, one fused kernel on CPU).
"""

from __future__ import annotations

import jax
import numpy as np

from alemlite.core import threefry


def draw_uniforms(key: jax.Array, shapes: dict[str, tuple[int, ...]]) -> dict[str, jax.Array]:
    """Uniforms in [0, 1) with the given named shapes, from a single draw."""
    sizes = [int(np.prod(shape)) for shape in shapes.values()]
    flat = threefry.uniform(key, (sum(sizes),))
    bounds = np.cumsum([0, *sizes])
    return {
        name: flat[start:stop].reshape(shape)
        for (name, shape), start, stop in zip(shapes.items(), bounds[:-1], bounds[1:], strict=True)
    }
