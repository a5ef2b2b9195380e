"""Episode bookkeeping: returns, lengths and the environment's metrics at episode end."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from alemlite.core.environment import StepResult, Wrapper


@struct.dataclass
class LogState:
    env_state: Any
    episode_return: jax.Array  # (num_agents,) float32, running sum of rewards
    episode_length: jax.Array  # () int32, steps taken so far


class LogWrapper(Wrapper):
    """Accumulates per-agent returns and episode length.

    On every step `info` gains `episode_return`, `episode_length` and
    `episode_metrics` (the environment's own metrics); they describe the episode
    that just ended wherever `done` is true, and the running episode elsewhere.
    """

    def generate(self, key: jax.Array, params: Any) -> LogState:
        return self._fresh(self.inner.generate(key, params))

    def reset_from(self, key: jax.Array, generated: LogState, params: Any):
        obs, env_state = self.inner.reset_from(key, generated.env_state, params)
        return obs, self._fresh(env_state)

    def _fresh(self, env_state: Any) -> LogState:
        return LogState(
            env_state=env_state,
            episode_return=jnp.zeros((self.num_agents,), jnp.float32),
            episode_length=jnp.zeros((), jnp.int32),
        )

    def step(self, key: jax.Array, state: LogState, actions: jax.Array, params: Any) -> StepResult:
        obs, env_state, reward, done, info = self.inner.step(key, state.env_state, actions, params)
        state = LogState(
            env_state=env_state,
            episode_return=state.episode_return + reward,
            episode_length=state.episode_length + 1,
        )
        info = {
            **info,
            "episode_return": state.episode_return,
            "episode_length": state.episode_length,
            "episode_metrics": self.inner.episode_metrics(env_state, params),
        }
        return obs, state, reward, done, info

    def observe(self, state: LogState, params: Any) -> jax.Array:
        return self.inner.observe(state.env_state, params)

    def action_mask(self, state: LogState, params: Any) -> jax.Array:
        return self.inner.action_mask(state.env_state, params)

    def global_state(self, state: LogState, params: Any) -> jax.Array:
        return self.inner.global_state(state.env_state, params)

    def episode_metrics(self, state: LogState, params: Any) -> dict[str, jax.Array]:
        return self.inner.episode_metrics(state.env_state, params)

    def agent_active(self, state: LogState, params: Any) -> jax.Array:
        return self.inner.agent_active(state.env_state, params)
