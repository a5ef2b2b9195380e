"""Static configuration (fixes shapes and the compiled program) and dynamic parameters."""

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
from alemlite.envs.dining.max_meals import require_in_range

SIMULTANEOUS, SEQUENTIAL = "simultaneous", "sequential"
MODES = (SIMULTANEOUS, SEQUENTIAL)
SHAPED, PAPER = "shaped", "paper"
REWARDS = (SHAPED, PAPER)
TERMINATE, RELEASE_ALL = "terminate", "release"
DEADLOCK_MODES = (TERMINATE, RELEASE_ALL)


@dataclass(frozen=True)
class DiningConfig:
    """Everything about a dining table, with the defaults of the dynamic parameters.

    `num_philosophers`, `mode`, `num_message_tokens`, `reward` and
    `max_philosophers` are static; the rest only seed `DiningEnv.default_params`
    and may differ between tables of one batch. Backoff is compiled in only when
    `backoff_steps > 0` here (then `params.backoff_steps` may vary per table, 0
    switching it off); with `backoff_steps = 0` the step draws no random numbers
    and ignores `params.backoff_steps`.
    """

    num_philosophers: int = 5
    max_philosophers: int | None = None  # None: equal to num_philosophers
    mode: str = SIMULTANEOUS
    num_message_tokens: int = 0
    reward: str = SHAPED
    # Defaults of the dynamic parameters.
    max_steps: int = 30
    deadlock_mode: str = TERMINATE
    backoff_steps: int = 0
    backoff_prob: float = 0.5
    shared: bool = False
    paper_meals_weight: float = 0.25
    paper_safety_weight: float = 0.25
    paper_fairness_weight: float = 0.25
    paper_validity_weight: float = 0.25
    deadlock_penalty: float = 1.0
    starvation_penalty: float = 1.0
    fairness_bonus: float = 0.5

    def __post_init__(self) -> None:
        if self.max_philosophers is None:
            object.__setattr__(self, "max_philosophers", self.num_philosophers)
        _require_int(self.num_philosophers, "num_philosophers")
        _require_int(self.max_philosophers, "max_philosophers")
        require(
            self.num_philosophers >= 2,
            f"num_philosophers={self.num_philosophers} is too small; a table needs at least 2",
        )
        require(
            self.max_philosophers >= self.num_philosophers,
            f"max_philosophers={self.max_philosophers} is below num_philosophers="
            f"{self.num_philosophers}; raise max_philosophers or leave it unset",
        )
        _require_choice(self.mode, "mode", MODES)
        _require_choice(self.reward, "reward", REWARDS)
        _require_choice(self.deadlock_mode, "deadlock_mode", DEADLOCK_MODES)
        require(
            not (self.reward == PAPER and self.mode == SEQUENTIAL),
            "reward='paper' needs mode='simultaneous': its max_meals budget does not bound "
            "sequential play; use reward='shaped' with mode='sequential'",
        )
        if self.reward == PAPER:
            require_in_range("num_philosophers", self.num_philosophers)
            require_in_range("max_philosophers", self.max_philosophers)
        _require_int(self.num_message_tokens, "num_message_tokens")
        require(
            self.num_message_tokens >= 0,
            f"num_message_tokens={self.num_message_tokens} must be 0 (no messages) or positive",
        )
        _require_int(self.max_steps, "max_steps")
        require(self.max_steps >= 1, f"max_steps={self.max_steps} must be at least 1")
        # Meal counts are int32: a table's total meals (at most N * T / 2) must fit.
        require(
            self.max_philosophers * self.max_steps < 2**32,
            f"max_steps={self.max_steps} at num_philosophers={self.max_philosophers} could "
            "count more meals than int32 holds; keep num_philosophers * max_steps below 2**32",
        )
        _require_int(self.backoff_steps, "backoff_steps")
        require(
            self.backoff_steps >= 0,
            f"backoff_steps={self.backoff_steps} must be 0 (off) or positive",
        )
        require(
            0.0 <= self.backoff_prob <= 1.0,
            f"backoff_prob={self.backoff_prob} must lie in [0, 1]",
        )
        for name in (
            "paper_meals_weight",
            "paper_safety_weight",
            "paper_fairness_weight",
            "paper_validity_weight",
            "deadlock_penalty",
            "starvation_penalty",
            "fairness_bonus",
        ):
            value = getattr(self, name)
            require(
                math.isfinite(value) and value >= 0,
                f"{name}={value} must be a finite number >= 0",
            )

    @property
    def sequential(self) -> bool:
        return self.mode == SEQUENTIAL

    @property
    def has_backoff(self) -> bool:
        return self.backoff_steps > 0

    @classmethod
    def from_kwargs(cls, **config: Any) -> DiningConfig:
        """Build from keyword arguments, naming any unknown option."""
        known = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(config) - known)
        require(
            not unknown,
            f"unknown dining option(s) {unknown}; choose from: {', '.join(sorted(known))}",
        )
        return cls(**config)


@struct.dataclass
class DiningParams:
    """Dynamic parameters; any leaf may carry a leading batch axis under `VecEnv`."""

    num_philosophers: jax.Array  # int32, 2..max_philosophers
    max_steps: jax.Array  # int32
    release_on_deadlock: jax.Array  # bool: deadlock_mode == "release"
    backoff_steps: jax.Array  # int32, 0 = off
    backoff_prob: jax.Array  # float32
    shared: jax.Array  # bool: every philosopher gets the table mean
    paper_meals_weight: jax.Array
    paper_safety_weight: jax.Array
    paper_fairness_weight: jax.Array
    paper_validity_weight: jax.Array
    deadlock_penalty: jax.Array
    starvation_penalty: jax.Array
    fairness_bonus: jax.Array


_FLOAT_PARAMS = (
    "backoff_prob",
    "paper_meals_weight",
    "paper_safety_weight",
    "paper_fairness_weight",
    "paper_validity_weight",
    "deadlock_penalty",
    "starvation_penalty",
    "fairness_bonus",
)


def make_params(config: DiningConfig, **overrides: Any) -> DiningParams:
    """Dynamic params from `config`'s defaults, with `overrides` (scalars or per-table arrays).

    `deadlock_mode` may be given as "terminate" / "release" (or an array of bools
    as `release_on_deadlock`). Values are checked here, on the host.
    """
    values: dict[str, Any] = {
        "num_philosophers": config.num_philosophers,
        "max_steps": config.max_steps,
        "release_on_deadlock": config.deadlock_mode == RELEASE_ALL,
        "backoff_steps": config.backoff_steps,
        "shared": config.shared,
        **{name: getattr(config, name) for name in _FLOAT_PARAMS},
    }
    if "deadlock_mode" in overrides:
        mode = overrides.pop("deadlock_mode")
        _require_choice(mode, "deadlock_mode", DEADLOCK_MODES)
        values["release_on_deadlock"] = mode == RELEASE_ALL
    unknown = sorted(set(overrides) - set(values))
    require(not unknown, f"unknown dining param(s) {unknown}; choose from: {sorted(values)}")
    values.update(overrides)

    tables = np.asarray(values["num_philosophers"])
    require(
        bool(np.all((tables >= 2) & (tables <= config.max_philosophers))),
        f"num_philosophers={values['num_philosophers']} must lie in 2..max_philosophers="
        f"{config.max_philosophers}; raise max_philosophers in the config",
    )
    require(
        bool(np.all(np.asarray(values["max_steps"]) >= 1)),
        f"max_steps={values['max_steps']} must be at least 1",
    )
    require(
        bool(np.all(np.asarray(values["backoff_steps"]) >= 0)),
        f"backoff_steps={values['backoff_steps']} must be 0 (off) or positive",
    )
    probability = np.asarray(values["backoff_prob"])
    require(
        bool(np.all((probability >= 0) & (probability <= 1))),
        f"backoff_prob={values['backoff_prob']} must lie in [0, 1]",
    )
    return DiningParams(
        num_philosophers=jnp.asarray(values["num_philosophers"], jnp.int32),
        max_steps=jnp.asarray(values["max_steps"], jnp.int32),
        release_on_deadlock=jnp.asarray(values["release_on_deadlock"], bool),
        backoff_steps=jnp.asarray(values["backoff_steps"], jnp.int32),
        shared=jnp.asarray(values["shared"], bool),
        **{name: jnp.asarray(values[name], jnp.float32) for name in _FLOAT_PARAMS},
    )


def _require_int(value: Any, name: str) -> None:
    require(
        isinstance(value, (int, np.integer)) and not isinstance(value, bool),
        f"{name}={value!r} must be an integer",
    )


def _require_choice(value: Any, name: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ConfigError(f"unknown {name} {value!r}; choose one of: {', '.join(choices)}")
