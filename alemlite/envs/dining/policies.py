"""Reference policies: `policy(key, state, params) -> actions (max_philosophers,) int32`.

They are jittable and pure, and they read the full `DiningState` (fork holders,
eating flags, streaks), not the local observation: they are anchors for
learning curves, not agents under the same information limits. All send no
message (token 0) and WAIT on inert seats.

- `uniform_random`: one of the four moves, uniformly.
- `all_wait`: always WAIT.
- `greedy_left`: grab the left fork, then the right, RELEASE after eating.
  Deadlocks at step 1 in simultaneous mode (everyone holds a left fork).
- `resource_ordering`: grab the lower-numbered fork first (the left fork, except
  for the last philosopher), then the other, RELEASE after eating. The ordering
  breaks the cycle, so it never deadlocks.
- `backoff`: greedy-left, but a philosopher holding nothing grabs only with
  probability 1/2, and one that has held a single fork for `BACKOFF_PATIENCE`
  steps releases it (the timed release of the classic randomised backoff).
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp

from alemlite.envs.dining.config import DiningParams
from alemlite.envs.dining.state import (
    GRAB_LEFT,
    GRAB_RIGHT,
    NUM_MOVES,
    RELEASE,
    WAIT,
    DiningState,
    Ring,
    holdings,
)

Policy = Callable[[jax.Array, DiningState, DiningParams], jax.Array]

BACKOFF_PATIENCE = 2
BACKOFF_GRAB_PROBABILITY = 0.5


def _ring(state: DiningState, params: DiningParams) -> Ring:
    return Ring.of(state.fork_holder.shape[0], params.num_philosophers)


def _on_active(ring: Ring, moves: jax.Array) -> jax.Array:
    return jnp.where(ring.active, moves, WAIT).astype(jnp.int32)


def uniform_random(key: jax.Array, state: DiningState, params: DiningParams) -> jax.Array:
    ring = _ring(state, params)
    return _on_active(ring, jax.random.randint(key, ring.seat.shape, 0, NUM_MOVES))


def all_wait(key: jax.Array, state: DiningState, params: DiningParams) -> jax.Array:
    return jnp.zeros(state.fork_holder.shape, jnp.int32)


def _ordered_grabs(state: DiningState, ring: Ring, left_first: jax.Array) -> jax.Array:
    """Grab the first fork, then the second; RELEASE while eating."""
    holds_left, holds_right = holdings(state.fork_holder, ring)
    first_held = jnp.where(left_first, holds_left, holds_right)
    first, second = (
        jnp.where(left_first, GRAB_LEFT, GRAB_RIGHT),
        jnp.where(left_first, GRAB_RIGHT, GRAB_LEFT),
    )
    return jnp.where(state.eating, RELEASE, jnp.where(first_held, second, first))


def greedy_left(key: jax.Array, state: DiningState, params: DiningParams) -> jax.Array:
    ring = _ring(state, params)
    return _on_active(ring, _ordered_grabs(state, ring, jnp.ones_like(ring.active)))


def resource_ordering(key: jax.Array, state: DiningState, params: DiningParams) -> jax.Array:
    ring = _ring(state, params)
    # The left fork i is the lower-numbered one for every seat but the last (forks N-1, 0).
    left_first = ring.seat != params.num_philosophers - 1
    return _on_active(ring, _ordered_grabs(state, ring, left_first))


def backoff(key: jax.Array, state: DiningState, params: DiningParams) -> jax.Array:
    ring = _ring(state, params)
    holds_left, holds_right = holdings(state.fork_holder, ring)
    greedy = _ordered_grabs(state, ring, jnp.ones_like(ring.active))
    tries = jax.random.bernoulli(key, BACKOFF_GRAB_PROBABILITY, ring.seat.shape)
    holds_nothing = ~holds_left & ~holds_right
    patience_out = state.one_fork_streak >= BACKOFF_PATIENCE
    moves = jnp.where(holds_nothing & ~tries, WAIT, greedy)
    moves = jnp.where(patience_out & (holds_left != holds_right), RELEASE, moves)
    return _on_active(ring, moves)


DINING_POLICIES: dict[str, Policy] = {
    "uniform_random": uniform_random,
    "all_wait": all_wait,
    "greedy_left": greedy_left,
    "resource_ordering": resource_ordering,
    "backoff": backoff,
}
