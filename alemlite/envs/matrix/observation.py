"""Per-player observations and the global state for centralised critics.

Observation of player i (float32):
`[seat one-hot (N), own payoff last round / payoff_bound, rounds left / max_steps,
game one-hot (4), last joint action: one-hot move per player (N * 3)]`, then with C > 0
message tokens the one-hot (C + 1) token every player sent last round (N * (C + 1)).
Before the first round the joint action is all zeros and every token is 0 (silent).

Global state: `[every player's payoff last round / payoff_bound (N), rounds left / max_steps,
game one-hot (4), last joint action (N * 3)]`, then with C > 0 every player's last token.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from alemlite.envs.matrix.config import MatrixParams
from alemlite.envs.matrix.games import GAME_NAMES, MAX_MOVES
from alemlite.envs.matrix.state import MatrixState


def _shared_size(num_agents: int, num_message_tokens: int) -> int:
    tokens = num_agents * (num_message_tokens + 1) if num_message_tokens else 0
    return 1 + len(GAME_NAMES) + num_agents * MAX_MOVES + tokens


def observation_size(num_agents: int, num_message_tokens: int) -> int:
    return num_agents + 1 + _shared_size(num_agents, num_message_tokens)


def global_state_size(num_agents: int, num_message_tokens: int) -> int:
    return num_agents + _shared_size(num_agents, num_message_tokens)


def _shared(state: MatrixState, params: MatrixParams, num_message_tokens: int) -> jax.Array:
    """What every player sees alike: rounds left, the game, the last round's moves and tokens."""
    steps_left = jnp.maximum(params.max_steps - state.step, 0) / jnp.maximum(params.max_steps, 1)
    parts = [
        jnp.asarray(steps_left, jnp.float32)[None],
        jax.nn.one_hot(params.game, len(GAME_NAMES)),
        jax.nn.one_hot(state.last_moves, MAX_MOVES).reshape(-1),  # NO_MOVE: all zeros
    ]
    if num_message_tokens:
        parts.append(jax.nn.one_hot(state.last_tokens, num_message_tokens + 1).reshape(-1))
    return jnp.concatenate(parts)


def _scaled_payoffs(state: MatrixState, params: MatrixParams) -> jax.Array:
    return state.last_payoffs / params.payoff_bound


def observe(state: MatrixState, params: MatrixParams, num_message_tokens: int) -> jax.Array:
    num_agents = state.last_moves.shape[0]
    shared = _shared(state, params, num_message_tokens)
    return jnp.concatenate(
        [
            jnp.eye(num_agents, dtype=jnp.float32),
            _scaled_payoffs(state, params)[:, None],
            jnp.broadcast_to(shared, (num_agents, shared.shape[0])),
        ],
        axis=1,
    )


def global_state(state: MatrixState, params: MatrixParams, num_message_tokens: int) -> jax.Array:
    return jnp.concatenate(
        [_scaled_payoffs(state, params), _shared(state, params, num_message_tokens)]
    )
