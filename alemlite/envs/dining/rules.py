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
)


@struct.dataclass
class Hands:
    """Who holds which fork, per seat from both sides of each fork.

    Fork i is philosopher i's left fork and its left neighbour's right fork, so
    the rules never need a fork-holder id lookup: every update is seat-wise.
    """

    holds_left: jax.Array  # bool (M,): philosopher i holds fork i
    holds_right: jax.Array  # bool (M,): philosopher i holds fork right[i]
    held_by_left_neighbour: jax.Array  # bool (M,): fork i is held by i's left neighbour
    right_neighbour_holds_left: jax.Array  # bool (M,): fork right[i] is held by right[i]

    def drop(self, dropping: jax.Array, ring: Ring) -> Hands:
        """The `dropping` seats put down every fork they hold."""
        return Hands(
            holds_left=self.holds_left & ~dropping,
            holds_right=self.holds_right & ~dropping,
            held_by_left_neighbour=self.held_by_left_neighbour & ~ring.from_left(dropping),
            right_neighbour_holds_left=self.right_neighbour_holds_left & ~ring.from_right(dropping),
        )

    def release_all_if(self, release: jax.Array) -> Hands:
        """Every fork free where `release` (a scalar) holds."""
        return jax.tree.map(lambda held: held & ~release, self)

    @property
    def left_available(self) -> jax.Array:
        """Fork i is free or held by i: not held by i's left neighbour."""
        return ~self.held_by_left_neighbour

    @property
    def right_available(self) -> jax.Array:
        return ~self.right_neighbour_holds_left

    def fork_holder(self, ring: Ring) -> jax.Array:
        """Per fork: the philosopher holding it, or FREE."""
        return jnp.where(
            self.holds_left,
            ring.seat,
            jnp.where(self.held_by_left_neighbour, ring.left_neighbour, FREE),
        )


@struct.dataclass
class TableStep:
    hands: Hands  # after the step
    eating: jax.Array  # bool (M,) after the step
    ate: jax.Array  # bool (M,): started a meal this step
    acquired: jax.Array  # bool (M,): the seat's grab took its fork
    legal: jax.Array  # bool (M, 4): `move_mask` of the table the moves were chosen on


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
    return _mask(hungry, left_ok, right_ok, ring.active & (holds_left | holds_right))


def _mask(
    hungry: jax.Array, left_ok: jax.Array, right_ok: jax.Array, holds_any: jax.Array
) -> jax.Array:
    return jnp.stack([jnp.ones_like(hungry), hungry & left_ok, hungry & right_ok, holds_any], -1)


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
    """One simultaneous step, on `Hands` rather than fork-holder ids: every rule is
    seat-wise, and two neighbour lookups (one each way, several flags packed in each)
    carry all it needs."""
    hungry = ring.active & ~eating
    holds_left = fork_holder == ring.seat
    held_by_left_neighbour = fork_holder == ring.left_neighbour  # never FREE
    held_by_left_neighbour_at_start = held_by_left_neighbour
    free_at_start = fork_holder == FREE
    releasing = hungry & (moves == RELEASE)
    wants_left = hungry & (moves == GRAB_LEFT)
    wants_right = hungry & (moves == GRAB_RIGHT)
    left_releases, left_wants_it, left_eats = ring.flags_from_left(releasing, wants_right, eating)
    # 1. RELEASE by a HUNGRY philosopher frees the forks it held at the start.
    holds_left &= ~releasing
    held_by_left_neighbour &= ~left_releases
    # 2. A request counts only if the fork is free after (1), and the lowest id wins:
    # the left neighbour f - 1 < f, except at fork 0 whose left requester is 0.
    free = ring.active & ~holds_left & ~held_by_left_neighbour
    first = ring.seat == 0
    to_self = free & wants_left & (first | ~left_wants_it)
    to_left_neighbour = free & left_wants_it & ~(first & wants_left)
    # 3. Philosophers EATING at the start put both forks down at the end of the step.
    holds_left = (holds_left | to_self) & ~eating
    held_by_left_neighbour = (held_by_left_neighbour | to_left_neighbour) & ~left_eats
    # Inert seats read fork 0 here; `active` and `wants_right` mask them out.
    granted_right, holds_right, right_free_at_start, held_right_at_start, right_holds_left = (
        ring.flags_from_right(
            to_left_neighbour,
            held_by_left_neighbour,
            free_at_start,
            held_by_left_neighbour_at_start,
            holds_left,
        )
    )
    holds_right &= ring.active
    # 4. A HUNGRY philosopher now holding both forks starts a meal.
    ate = hungry & holds_left & holds_right
    took_right = wants_right & granted_right
    held_any_at_start = (fork_holder == ring.seat) | (ring.active & held_right_at_start)
    hands = Hands(
        holds_left=holds_left,
        holds_right=holds_right,
        held_by_left_neighbour=held_by_left_neighbour,
        right_neighbour_holds_left=right_holds_left,
    )
    return TableStep(
        hands=hands,
        eating=ate,
        ate=ate,
        acquired=to_self | took_right,
        legal=_mask(hungry, free_at_start, right_free_at_start, held_any_at_start),
    )


def sequential_step(
    fork_holder: jax.Array, eating: jax.Array, moves: jax.Array, ring: Ring
) -> TableStep:
    """Philosophers act one at a time in id order, each on the table the previous left."""
    legal = move_mask(fork_holder, eating, ring, sequential=True)
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
    holds_left, holds_right = holdings(holder, ring)
    hands = Hands(
        holds_left=holds_left,
        holds_right=holds_right,
        held_by_left_neighbour=holder == ring.left_neighbour,
        right_neighbour_holds_left=ring.from_right(holds_left),
    )
    return TableStep(
        hands=hands,
        eating=eating,
        ate=ate,
        acquired=acquired,
        legal=legal,
    )


def one_fork(hands: Hands, eating: jax.Array) -> jax.Array:
    """Seats that are HUNGRY and hold exactly one fork (inert seats hold none)."""
    return ~eating & (hands.holds_left != hands.holds_right)


def backoff_drops(
    key: jax.Array,
    one_fork_streak: jax.Array,
    backoff_steps: jax.Array,
    backoff_prob: jax.Array,
) -> jax.Array:
    """Seats whose one-fork streak reached `backoff_steps` and that drop it this step."""
    timed_out = (backoff_steps > 0) & (one_fork_streak >= backoff_steps)
    return timed_out & jax.random.bernoulli(key, backoff_prob, one_fork_streak.shape)


def is_deadlocked(one_fork_seats: jax.Array, ring: Ring) -> jax.Array:
    """Every philosopher HUNGRY and holding exactly one fork."""
    return jnp.all(one_fork_seats | ~ring.active)
