"""The table's run-time state and the ring geometry shared by the rules, views and policies."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

FREE = -1  # fork_holder value of a free fork
WAIT, GRAB_LEFT, GRAB_RIGHT, RELEASE = 0, 1, 2, 3
MOVE_NAMES = ("WAIT", "GRAB_LEFT", "GRAB_RIGHT", "RELEASE")
NUM_MOVES = len(MOVE_NAMES)


@struct.dataclass
class DiningState:
    """One table; every `(max_philosophers,)` array is zero (or FREE) beyond the table's N."""

    fork_holder: jax.Array  # int32 (M,): FREE or the id of the philosopher holding fork i
    eating: jax.Array  # bool (M,): EATING (started a meal last step), else HUNGRY
    meals: jax.Array  # int32 (M,)
    last_message: jax.Array  # int32 (M,): token sent last step, 0 = silent
    step: jax.Array  # int32 (): steps played
    deadlocked: jax.Array  # bool (): a deadlock happened this episode
    deadlock_step: jax.Array  # int32 (): step of the first deadlock, -1 if none
    deadlock_events: jax.Array  # int32 (): deadlocks so far (release mode plays on)
    failed_grabs: jax.Array  # int32 (M,): grabs that did not take their fork
    valid_actions: jax.Array  # int32 (M,): actions the action mask allowed
    hungry_streak: jax.Array  # int32 (M,): steps since the last meal
    longest_hungry_streak: jax.Array  # int32 (M,)
    one_fork_streak: jax.Array  # int32 (M,): consecutive steps ended HUNGRY with one fork


def initial_state(max_philosophers: int) -> DiningState:
    """Everyone HUNGRY, every fork free, no meals."""
    zeros = jnp.zeros((max_philosophers,), jnp.int32)
    return DiningState(
        fork_holder=jnp.full((max_philosophers,), FREE, jnp.int32),
        eating=jnp.zeros((max_philosophers,), bool),
        meals=zeros,
        last_message=zeros,
        step=jnp.zeros((), jnp.int32),
        deadlocked=jnp.zeros((), bool),
        deadlock_step=jnp.full((), -1, jnp.int32),
        deadlock_events=jnp.zeros((), jnp.int32),
        failed_grabs=zeros,
        valid_actions=zeros,
        hungry_streak=zeros,
        longest_hungry_streak=zeros,
        one_fork_streak=zeros,
    )


@struct.dataclass
class Ring:
    """Seat geometry of a table of `num_philosophers` inside `max_philosophers` seats.

    Philosopher i's left fork is fork i, its right fork `(i + 1) mod N`; fork i is
    shared with the left neighbour `(i - 1) mod N`. Inert seats point at fork 0
    and are masked out by `active` wherever it matters.
    """

    seat: jax.Array  # int32 (M,)
    active: jax.Array  # bool (M,): seat < N
    is_last: jax.Array  # bool (M,): seat == N - 1
    right: jax.Array  # int32 (M,): right fork = right neighbour
    left_neighbour: jax.Array  # int32 (M,): (i - 1) mod N

    @classmethod
    def of(cls, max_philosophers: int, num_philosophers: jax.Array) -> Ring:
        seat = jnp.arange(max_philosophers, dtype=jnp.int32)
        return cls(
            seat=seat,
            active=seat < num_philosophers,
            is_last=seat == num_philosophers - 1,
            right=jnp.where(seat >= num_philosophers - 1, 0, seat + 1),
            left_neighbour=jnp.where(seat == 0, num_philosophers - 1, seat - 1),
        )

    # Plain gathers: on CPU they beat roll-and-fix shifts in the vmapped step.
    def from_right(self, values: jax.Array) -> jax.Array:
        """`values[right[i]]` per seat."""
        return values[self.right]

    def from_left(self, values: jax.Array) -> jax.Array:
        """`values[left_neighbour[i]]` per seat."""
        return values[self.left_neighbour]

    # Several boolean arrays (up to 8) through one lookup, packed as bits of an int8.
    def flags_from_right(self, *flags: jax.Array) -> tuple[jax.Array, ...]:
        """`flag[right[i]]` per seat for every flag."""
        return _unpack(self.from_right(_pack(flags)), len(flags))

    def flags_from_left(self, *flags: jax.Array) -> tuple[jax.Array, ...]:
        """`flag[left_neighbour[i]]` per seat for every flag."""
        return _unpack(self.from_left(_pack(flags)), len(flags))


def _pack(flags: tuple[jax.Array, ...]) -> jax.Array:
    return sum(flag.astype(jnp.int8) << bit for bit, flag in enumerate(flags))


def _unpack(packed: jax.Array, count: int) -> tuple[jax.Array, ...]:
    return tuple((packed >> bit) & 1 == 1 for bit in range(count))


def holdings(fork_holder: jax.Array, ring: Ring) -> tuple[jax.Array, jax.Array]:
    """`(holds_left, holds_right)` per seat."""
    return fork_holder == ring.seat, ring.from_right(fork_holder) == ring.seat
