"""The environment contract: pure, jittable, with a leading agent axis.

An environment is a Python object holding only *static* configuration (anything
that fixes array shapes). Everything that may vary between environments of one
compiled batch lives in a `params` pytree, and all run-time data lives in a
`state` pytree. `reset` and `step` are pure functions of their arguments.

`step` never resets: batching and auto-reset are the job of `VecEnv`, which
draws fresh episodes from `generate` (the expensive part of a reset, e.g. world
generation) and `reset_from` (the cheap per-episode finish).
"""

from __future__ import annotations

import abc
import enum
from typing import Any, Generic, TypeVar

import jax
import jax.numpy as jnp

StateT = TypeVar("StateT")
ParamsT = TypeVar("ParamsT")

# (obs, state, reward, done, info); info always holds "terminated" and "truncated".
StepResult = tuple[jax.Array, Any, jax.Array, jax.Array, dict[str, jax.Array]]


class TimeLimit(enum.Enum):
    """What `truncated` means to a learner, declared by each environment.

    TASK: the time limit is part of the task: a fixed horizon the agent observes
    (and is often paid at), so nothing follows it and value targets end there.
    CUTOFF: an open-ended episode cut short for practical reasons; value targets
    bootstrap from the value of `info["final_observation"]`.
    """

    TASK = "task"
    CUTOFF = "cutoff"


class Environment(abc.ABC, Generic[StateT, ParamsT]):
    """A multi-agent environment with arrays of shape `(num_agents, ...)`.

    Subclasses implement `generate`, `step`, `observe`, `action_mask`,
    `global_state` and `episode_metrics` (and `reset_from` where a reset has a
    per-episode part), and the static properties below.
    """

    name: str = "environment"

    # ---- static description -------------------------------------------------
    @property
    @abc.abstractmethod
    def num_agents(self) -> int:
        """Number of agent seats (the size of every leading agent axis)."""

    @property
    @abc.abstractmethod
    def action_names(self) -> tuple[str, ...]:
        """Names of the discrete actions, indexed by action id."""

    @property
    def num_actions(self) -> int:
        return len(self.action_names)

    @property
    @abc.abstractmethod
    def observation_shape(self) -> tuple[int, ...]:
        """Shape of one agent's observation (without the agent axis)."""

    @property
    @abc.abstractmethod
    def global_state_shape(self) -> tuple[int, ...]:
        """Shape of the global state vector for centralised critics."""

    @property
    @abc.abstractmethod
    def default_params(self) -> ParamsT:
        """Dynamic parameters built from the static config's defaults."""

    @property
    @abc.abstractmethod
    def time_limit(self) -> TimeLimit:
        """Whether reaching `max_steps` ends the task (`TASK`) or cuts it off (`CUTOFF`)."""

    @property
    def needs_step_key(self) -> bool:
        """Whether `step` draws random numbers; if not, batches skip splitting keys for it."""
        return True

    @property
    def needs_reset_key(self) -> bool:
        """Whether `reset` draws random numbers; if not, batches skip splitting keys for it."""
        return True

    # ---- dynamics ------------------------------------------------------------
    @abc.abstractmethod
    def generate(self, key: jax.Array, params: ParamsT) -> StateT:
        """A start state; the expensive part of a reset (e.g. world generation).

        `VecEnv` may pre-generate these into a pool shared by a batch, so a
        generated state must not depend on params that differ within a batch;
        per-environment parts belong in `reset_from`.
        """

    def reset_from(
        self, key: jax.Array, generated: StateT, params: ParamsT
    ) -> tuple[jax.Array, StateT]:
        """Finish a reset from a generated start state; cheap, runs on every auto-reset."""
        return self.observe(generated, params), generated

    def reset(self, key: jax.Array, params: ParamsT) -> tuple[jax.Array, StateT]:
        """Start an episode: `(obs, state)` with obs of shape `(num_agents, *observation_shape)`."""
        generate_key, finish_key = jax.random.split(key)
        return self.reset_from(finish_key, self.generate(generate_key, params), params)

    @abc.abstractmethod
    def step(
        self, key: jax.Array, state: StateT, actions: jax.Array, params: ParamsT
    ) -> StepResult:
        """Advance one step with `actions` of shape `(num_agents,)` int32; never resets."""

    @abc.abstractmethod
    def observe(self, state: StateT, params: ParamsT) -> jax.Array:
        """Per-agent observations `(num_agents, *observation_shape)` float32."""

    @abc.abstractmethod
    def action_mask(self, state: StateT, params: ParamsT) -> jax.Array:
        """Legal actions `(num_agents, num_actions)` bool; every row allows at least one."""

    @abc.abstractmethod
    def global_state(self, state: StateT, params: ParamsT) -> jax.Array:
        """Global state `global_state_shape` float32 for centralised critics."""

    @abc.abstractmethod
    def episode_metrics(self, state: StateT, params: ParamsT) -> dict[str, jax.Array]:
        """Scalar metrics of the episode so far (read at episode end by `LogWrapper`)."""

    def agent_active(self, state: StateT, params: ParamsT) -> jax.Array:
        """Which seats are in play `(num_agents,)` bool; inert seats are excluded from metrics."""
        return jnp.ones((self.num_agents,), dtype=bool)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, num_agents={self.num_agents})"


class Wrapper(Environment[StateT, ParamsT]):
    """Delegates everything to `inner`; subclasses override what they change."""

    def __init__(self, inner: Environment):
        self.inner = inner
        self.name = inner.name

    @property
    def num_agents(self) -> int:
        return self.inner.num_agents

    @property
    def action_names(self) -> tuple[str, ...]:
        return self.inner.action_names

    @property
    def observation_shape(self) -> tuple[int, ...]:
        return self.inner.observation_shape

    @property
    def global_state_shape(self) -> tuple[int, ...]:
        return self.inner.global_state_shape

    @property
    def default_params(self) -> ParamsT:
        return self.inner.default_params

    @property
    def time_limit(self) -> TimeLimit:
        return self.inner.time_limit

    @property
    def needs_step_key(self) -> bool:
        return self.inner.needs_step_key

    @property
    def needs_reset_key(self) -> bool:
        return self.inner.needs_reset_key

    def __getattr__(self, attribute: str) -> Any:
        # Environment-specific helpers (renderers, configs) stay reachable through wrappers.
        if attribute == "inner":
            raise AttributeError(attribute)
        return getattr(self.inner, attribute)
