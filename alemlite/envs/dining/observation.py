"""Per-philosopher observations and the global state for centralised critics.

Observation of philosopher i (float32, zero for inert seats):
`[eating, holds_left, holds_right, left_available, right_available,
meals / max_steps, steps_left / max_steps]`, then with C > 0 message tokens the
one-hot (C + 1) last token of the left neighbour and of the right neighbour.
A fork is available when it is free or held by i itself.

Global state: per seat `[fork free, fork held by its left user (this seat),
fork held by its right user (the left neighbour), eating, meals / max_steps,
active]`, with C > 0 the one-hot last token of every seat, then steps_left / max_steps.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from alemlite.envs.dining.config import DiningParams
from alemlite.envs.dining.state import FREE, DiningState, Ring, holdings

OWN_FEATURES = 7
SEAT_FEATURES = 6


def observation_size(num_message_tokens: int) -> int:
    messages = 2 * (num_message_tokens + 1) if num_message_tokens else 0
    return OWN_FEATURES + messages


def global_state_size(max_philosophers: int, num_message_tokens: int) -> int:
    messages = num_message_tokens + 1 if num_message_tokens else 0
    return max_philosophers * (SEAT_FEATURES + messages) + 1


def _horizon(state: DiningState, params: DiningParams) -> tuple[jax.Array, jax.Array]:
    scale = 1.0 / jnp.maximum(params.max_steps, 1).astype(jnp.float32)
    steps_left = jnp.maximum(params.max_steps - state.step, 0) * scale
    return scale, steps_left


def observe(
    state: DiningState, params: DiningParams, ring: Ring, num_message_tokens: int
) -> jax.Array:
    holds_left, holds_right = holdings(state.fork_holder, ring)
    left_available = holds_left | (state.fork_holder == FREE)
    right_available = holds_right | (ring.from_right(state.fork_holder) == FREE)
    return observe_seats(
        state,
        params,
        ring,
        num_message_tokens,
        holds_left,
        holds_right,
        left_available,
        right_available,
    )


def observe_seats(
    state: DiningState,
    params: DiningParams,
    ring: Ring,
    num_message_tokens: int,
    holds_left: jax.Array,
    holds_right: jax.Array,
    left_available: jax.Array,
    right_available: jax.Array,
) -> jax.Array:
    """`observe` from per-seat fork facts the caller already has (the step does)."""
    scale, steps_left = _horizon(state, params)
    features = [
        state.eating,
        holds_left,
        holds_right,
        left_available,
        right_available,
        state.meals * scale,
        jnp.broadcast_to(steps_left, ring.seat.shape),
    ]
    columns = [jnp.asarray(feature, jnp.float32)[:, None] for feature in features]
    if num_message_tokens:
        tokens = num_message_tokens + 1
        columns.append(jax.nn.one_hot(ring.from_left(state.last_message), tokens))
        columns.append(jax.nn.one_hot(ring.from_right(state.last_message), tokens))
    return jnp.where(ring.active[:, None], jnp.concatenate(columns, axis=-1), 0.0)


def global_state(
    state: DiningState, params: DiningParams, ring: Ring, num_message_tokens: int
) -> jax.Array:
    scale, steps_left = _horizon(state, params)
    holder = state.fork_holder
    features = [
        holder == FREE,
        holder == ring.seat,
        (holder != FREE) & (holder == ring.left_neighbour),
        state.eating,
        state.meals * scale,
        ring.active,
    ]
    columns = [jnp.asarray(feature, jnp.float32)[:, None] for feature in features]
    if num_message_tokens:
        columns.append(jax.nn.one_hot(state.last_message, num_message_tokens + 1))
    seats = jnp.where(ring.active[:, None], jnp.concatenate(columns, axis=-1), 0.0)
    return jnp.concatenate([seats.reshape(-1), steps_left[None]])
