"""The run-time state of one repeated game: the last round, and counts for the metrics."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from alemlite.envs.matrix.games import MAX_MOVES

NO_MOVE = -1  # `last_moves` before the first round


@struct.dataclass
class MatrixState:
    last_moves: jax.Array  # int32 (N,): each player's move last round, NO_MOVE before round 1
    last_tokens: jax.Array  # int32 (N,): the token each player sent last round, 0 = silent
    last_payoffs: jax.Array  # float32 (N,): each player's payoff last round
    step: jax.Array  # int32 (): rounds played
    payoff_sum: jax.Array  # float32 (N,): each player's payoff so far
    optimal_rounds: jax.Array  # int32 (): rounds whose joint action was welfare-optimal
    split_rounds: jax.Array  # int32 (): rounds where the players did not all play one move
    equilibrium_rounds: jax.Array  # int32 (): rounds on a pure equilibrium that is not optimal
    move_counts: jax.Array  # int32 (3,): moves played, summed over players and rounds
    valid_actions: jax.Array  # int32 (N,): actions the action mask allowed


def initial_state(num_agents: int) -> MatrixState:
    zeros = jnp.zeros((num_agents,), jnp.int32)
    return MatrixState(
        last_moves=jnp.full((num_agents,), NO_MOVE, jnp.int32),
        last_tokens=zeros,
        last_payoffs=jnp.zeros((num_agents,), jnp.float32),
        step=jnp.zeros((), jnp.int32),
        payoff_sum=jnp.zeros((num_agents,), jnp.float32),
        optimal_rounds=jnp.zeros((), jnp.int32),
        split_rounds=jnp.zeros((), jnp.int32),
        equilibrium_rounds=jnp.zeros((), jnp.int32),
        move_counts=jnp.zeros((MAX_MOVES,), jnp.int32),
        valid_actions=zeros,
    )
