"""The table rules: legal moves, one step in either mode, backoff and deadlock.

All functions are pure array code over `(max_philosophers,)` seats; the
sequential mode loops over seats with `fori_loop`, which is the rule's own order.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from alemlite.envs.dining.state import (
    FREE,
    GRAB_LEFT,
    GRAB_RIGHT,
    RELEASE,
    WAIT,
    Ring,
    holdings,
    owner_flag,
)


@struct.dataclass
class TableStep:
    fork_holder: jax.Array  # int32 (M,) after the step
    eating: jax.Array  # bool (M,) after the step
    ate: jax.Array  # bool (M,): started a meal this step
    acquired: jax.Array  # bool (M,): the seat's grab took its fork


def move_mask(fork_holder: jax.Array, eating: jax.Array, ring: Ring, sequential: bool) -> jax.Array:
    """Legal moves `(M, 4)` on the table the actions are chosen from.

    WAIT always; GRAB_LEFT / GRAB_RIGHT only for a HUNGRY philosopher and a free
    fork (sequential mode also allows a fork held by an EATING lower-id
    neighbour, who puts it down earlier in the same step); RELEASE only when
    holding a fork (so an EATING philosopher may WAIT or RELEASE). Inert seats: WAIT.
    """
    hungry = ring.active & ~eating
    holds_left, holds_right = holdings(fork_holder, ring)
    free = fork_holder == FREE
    left_ok, right_ok = free, ring.from_right(free)
    if sequential:
        # The left neighbour has the lower id except at seat 0; the right one only at N - 1.
        left_ok |= (ring.seat > 0) & (fork_holder == ring.left_neighbour) & ring.from_left(eating)
        right_ok |= ring.is_last & (fork_holder[0] == 0) & eating[0]
    return jnp.stack(
        [
            jnp.ones_like(hungry),
            hungry & left_ok,
            hungry & right_ok,
            ring.active & (holds_left | holds_right),
        ],
        axis=-1,
    )


def allowed(mask: jax.Array, moves: jax.Array) -> jax.Array:
    """`mask[i, moves[i]]` per seat, as selects rather than a gather."""
    return jnp.select(
        [moves == WAIT, moves == GRAB_LEFT, moves == GRAB_RIGHT],
        [mask[:, WAIT], mask[:, GRAB_LEFT], mask[:, GRAB_RIGHT]],
        mask[:, RELEASE],
    )


def simultaneous_step(
    fork_holder: jax.Array, eating: jax.Array, moves: jax.Array, ring: Ring
) -> TableStep:
    hungry = ring.active & ~eating
    # 1. RELEASE by a HUNGRY philosopher frees the forks it held at the start.
    releasing = hungry & (moves == RELEASE)
    holder = jnp.where(owner_flag(releasing, fork_holder, ring), FREE, fork_holder)
    # 2. Fork f is wanted as left fork by f and as right fork by its left neighbour;
    # a request counts only if the fork is free after (1), and the lowest id wins:
    # the left neighbour f - 1 < f, except at fork 0 whose left requester is 0.
    wants_left = hungry & (moves == GRAB_LEFT)
    wants_right = ring.from_left(hungry & (moves == GRAB_RIGHT))
    winner = jnp.where(
        ring.seat == 0,
        jnp.where(wants_left, ring.seat, ring.left_neighbour),
        jnp.where(wants_right, ring.left_neighbour, ring.seat),
    )
    granted = ring.active & (holder == FREE) & (wants_left | wants_right)
    holder = jnp.where(granted, winner, holder)
    took_left = granted & (winner == ring.seat)
    took_right = ring.from_right(granted & (winner == ring.left_neighbour))
    acquired = ((moves == GRAB_LEFT) & took_left) | ((moves == GRAB_RIGHT) & took_right)
    # 3. Philosophers EATING at the start put both forks down at the end of the step.
    holder = jnp.where(owner_flag(eating, holder, ring), FREE, holder)
    # 4. A HUNGRY philosopher now holding both forks starts a meal.
    holds_left, holds_right = holdings(holder, ring)
    ate = hungry & holds_left & holds_right
    return TableStep(fork_holder=holder, eating=ate, ate=ate, acquired=acquired)


def sequential_step(
    fork_holder: jax.Array, eating: jax.Array, moves: jax.Array, ring: Ring
) -> TableStep:
    """Philosophers act one at a time in id order, each on the table the previous left."""
    no_one = jnp.zeros_like(eating)

    def turn(seat, carry):
        holder, eating, ate, acquired = carry
        active = ring.active[seat]
        was_eating = eating[seat]
        move = moves[seat]
        # An EATING philosopher puts both forks down at its turn, whatever it chose.
        drops = active & (was_eating | (move == RELEASE))
        holder = jnp.where(drops & (holder == seat), FREE, holder)
        acts = active & ~was_eating
        target = jnp.where(move == GRAB_LEFT, seat, ring.right[seat])
        grabs = acts & ((move == GRAB_LEFT) | (move == GRAB_RIGHT)) & (holder[target] == FREE)
        holder = holder.at[target].set(jnp.where(grabs, seat, holder[target]))
        starts_meal = acts & (holder[seat] == seat) & (holder[ring.right[seat]] == seat)
        eating = eating.at[seat].set(jnp.where(active, starts_meal, eating[seat]))
        return holder, eating, ate.at[seat].set(starts_meal), acquired.at[seat].set(grabs)

    holder, eating, ate, acquired = jax.lax.fori_loop(
        0, ring.seat.shape[0], turn, (fork_holder, eating, no_one, no_one)
    )
    return TableStep(fork_holder=holder, eating=eating, ate=ate, acquired=acquired)


def one_fork(fork_holder: jax.Array, eating: jax.Array, ring: Ring) -> jax.Array:
    """Seats that are HUNGRY and hold exactly one fork."""
    holds_left, holds_right = holdings(fork_holder, ring)
    return ring.active & ~eating & (holds_left != holds_right)


def backoff_drops(
    key: jax.Array,
    one_fork_streak: jax.Array,
    backoff_steps: jax.Array,
    backoff_prob: jax.Array,
) -> jax.Array:
    """Seats whose one-fork streak reached `backoff_steps` and that drop it this step."""
    timed_out = (backoff_steps > 0) & (one_fork_streak >= backoff_steps)
    return timed_out & jax.random.bernoulli(key, backoff_prob, one_fork_streak.shape)


def drop_forks(fork_holder: jax.Array, dropping: jax.Array, ring: Ring) -> jax.Array:
    return jnp.where(owner_flag(dropping, fork_holder, ring), FREE, fork_holder)


def is_deadlocked(fork_holder: jax.Array, eating: jax.Array, ring: Ring) -> jax.Array:
    """Every philosopher HUNGRY and holding exactly one fork."""
    return jnp.all(one_fork(fork_holder, eating, ring) | ~ring.active)
