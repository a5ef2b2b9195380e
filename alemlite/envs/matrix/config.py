"""Static configuration (fixes shapes) and dynamic parameters (the game, its payoffs, rounds)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from alemlite.core.errors import ConfigError, require
from alemlite.envs.matrix.games import (
    GAME_NAMES,
    GAMES,
    analyse,
    padded_matrix,
    payoff_table,
    safe_move,
)

MAX_AGENTS = 8  # a payoff table holds 3 ** N rows for each set of params
REWARDS = ("payoff", "normalised")


@dataclass(frozen=True)
class MatrixConfig:
    """A repeated matrix game: `num_agents` and `num_message_tokens` are static (shapes);
    `game`, `penalty`, `max_steps` and `reward` only seed `MatrixEnv.default_params` and may
    differ between environments of one batch."""

    num_agents: int = 2
    num_message_tokens: int = 0
    game: str = "climbing"
    penalty: float = -10.0
    max_steps: int = 25
    reward: str = "payoff"

    def __post_init__(self) -> None:
        _require_int(self.num_agents, "num_agents")
        require(
            2 <= self.num_agents <= MAX_AGENTS,
            f"num_agents={self.num_agents} must lie in 2..{MAX_AGENTS}",
        )
        _require_int(self.num_message_tokens, "num_message_tokens")
        require(
            self.num_message_tokens >= 0,
            f"num_message_tokens={self.num_message_tokens} must be 0 (no messages) or positive",
        )
        check_defaults(self.game, self.penalty, self.max_steps, self.reward)

    @classmethod
    def from_kwargs(cls, **config: Any) -> MatrixConfig:
        """Build from keyword arguments, naming any unknown option."""
        known = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(config) - known)
        require(
            not unknown,
            f"unknown matrix option(s) {unknown}; choose from: {', '.join(sorted(known))}",
        )
        return cls(**config)


def check_defaults(game: str, penalty: float, max_steps: int, reward: str) -> None:
    """Refuse a bad value of a dynamic parameter in one line."""
    if game not in GAMES:
        raise ConfigError(f"unknown game {game!r}; choose one of: {', '.join(GAME_NAMES)}")
    require(
        isinstance(penalty, (int, float, np.number)) and math.isfinite(penalty) and penalty <= 0,
        f"penalty={penalty} must be a finite number <= 0 (the penalty game's k)",
    )
    _require_int(max_steps, "max_steps")
    require(max_steps >= 1, f"max_steps={max_steps} must be at least 1")
    if reward not in REWARDS:
        raise ConfigError(f"unknown reward {reward!r}; choose one of: {', '.join(REWARDS)}")


@struct.dataclass
class MatrixParams:
    """Dynamic parameters of one game. A batch mixes games by stacking several along a new
    leading axis: `jax.tree.map(lambda *leaves: jnp.stack(leaves), *params)`."""

    game: jax.Array  # int32 (): index into `GAME_NAMES`
    num_moves: jax.Array  # int32 (): moves of the game (2 or 3); the others are masked
    max_steps: jax.Array  # int32 (): rounds
    matrix: jax.Array  # float32 (3, 3): the 2-player row payoffs, zero-padded
    payoffs: jax.Array  # float32 (3 ** N, N): every player's payoff of every joint action
    optimal: jax.Array  # bool (3 ** N,): welfare-optimal joint actions
    nash: jax.Array  # bool (3 ** N,): pure Nash equilibria of the stage game
    optimal_joint: jax.Array  # int32 (N,): the optimal joint action the `optimal` team plays
    safe_move: jax.Array  # int32 (): the game's maximin move (tit-for-tat's defection)
    cooperate_move: jax.Array  # int32 ()
    payoff_bound: jax.Array  # float32 (): the largest |payoff|, scales observations
    reward_scale: jax.Array  # float32 (): reward = payoff * reward_scale


def make_params(config: MatrixConfig, **overrides: Any) -> MatrixParams:
    """Params of one game from `config`'s defaults with `overrides` (`game`, `penalty`,
    `max_steps`, `reward`); checked here, on the host."""
    values = {
        "game": config.game,
        "penalty": config.penalty,
        "max_steps": config.max_steps,
        "reward": config.reward,
    }
    unknown = sorted(set(overrides) - set(values))
    require(not unknown, f"unknown matrix param(s) {unknown}; choose from: {sorted(values)}")
    values.update(overrides)
    check_defaults(**values)
    game = GAMES[values["game"]]
    payoffs, legal = payoff_table(game, config.num_agents, values["penalty"])
    analysis = analyse(payoffs, legal)
    scale = 1.0 / analysis.bound if values["reward"] == "normalised" else 1.0
    return MatrixParams(
        game=jnp.asarray(GAME_NAMES.index(game.name), jnp.int32),
        num_moves=jnp.asarray(game.num_moves, jnp.int32),
        max_steps=jnp.asarray(values["max_steps"], jnp.int32),
        matrix=jnp.asarray(padded_matrix(game, values["penalty"]), jnp.float32),
        payoffs=jnp.asarray(payoffs, jnp.float32),
        optimal=jnp.asarray(analysis.optimal),
        nash=jnp.asarray(analysis.nash),
        optimal_joint=jnp.asarray(analysis.optimal_joint, jnp.int32),
        safe_move=jnp.asarray(safe_move(game, values["penalty"]), jnp.int32),
        cooperate_move=jnp.asarray(game.cooperate, jnp.int32),
        payoff_bound=jnp.asarray(analysis.bound, jnp.float32),
        reward_scale=jnp.asarray(scale, jnp.float32),
    )


def _require_int(value: Any, name: str) -> None:
    require(
        isinstance(value, (int, np.integer)) and not isinstance(value, bool),
        f"{name}={value!r} must be an integer",
    )
