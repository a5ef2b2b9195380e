"""Scripted teams: `policy(key, state, params) -> actions (N,) int32`, jittable, silent.

They read the params (the game's cooperative, safe and optimal moves) and the last joint
action, which every player observes; none sends a message token.

- `uniform`: each player picks one of the game's moves uniformly.
- `always_cooperate`: every player plays the game's cooperative move.
- `tit_for_tat`: N-player tit-for-tat: cooperate in the first round, then cooperate iff every
  player cooperated last round, else play the safe (maximin) move: defect, hare, c in the
  climbing game, b in the penalty game.
- `optimal`: each player plays its part of the first welfare-optimal joint action.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp

from alemlite.envs.matrix.config import MatrixParams
from alemlite.envs.matrix.state import MatrixState

Policy = Callable[[jax.Array, MatrixState, MatrixParams], jax.Array]


def uniform(key: jax.Array, state: MatrixState, params: MatrixParams) -> jax.Array:
    return jax.random.randint(key, state.last_moves.shape, 0, params.num_moves, jnp.int32)


def always_cooperate(key: jax.Array, state: MatrixState, params: MatrixParams) -> jax.Array:
    return jnp.full(state.last_moves.shape, params.cooperate_move, jnp.int32)


def tit_for_tat(key: jax.Array, state: MatrixState, params: MatrixParams) -> jax.Array:
    all_cooperated = jnp.all(state.last_moves == params.cooperate_move)
    cooperate = (state.step == 0) | all_cooperated
    move = jnp.where(cooperate, params.cooperate_move, params.safe_move)
    return jnp.full(state.last_moves.shape, move, jnp.int32)


def optimal(key: jax.Array, state: MatrixState, params: MatrixParams) -> jax.Array:
    return params.optimal_joint.astype(jnp.int32)


MATRIX_POLICIES: dict[str, Policy] = {
    "uniform": uniform,
    "always_cooperate": always_cooperate,
    "tit_for_tat": tit_for_tat,
    "optimal": optimal,
}
