"""A tiny two-agent matching game for testing the baselines without a real environment.

Each step a cue (0 or 1) is drawn; an agent earns 1 for playing the cue. The
episode terminates when the two agents play different actions and is truncated
after `max_steps`. Action 3 is never legal and action 2 only on odd steps; an
illegal action costs 10, so a masking bug shows in the returns as well.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
from flax import struct

from alemlite.core.environment import Environment, TimeLimit


@struct.dataclass
class MatchingState:
    cue: jax.Array  # () int32
    step: jax.Array  # () int32
    matches: jax.Array  # () int32


@struct.dataclass
class MatchingParams:
    max_steps: jax.Array


@dataclass(frozen=True)
class MatchingGame(Environment):
    max_steps: int = 4
    name: str = "matching"

    @property
    def num_agents(self) -> int:
        return 2

    @property
    def action_names(self) -> tuple[str, ...]:
        return ("ZERO", "ONE", "TWO", "NEVER")

    @property
    def observation_shape(self) -> tuple[int, ...]:
        return (3,)

    @property
    def global_state_shape(self) -> tuple[int, ...]:
        return (4,)

    @property
    def time_limit(self) -> TimeLimit:
        return TimeLimit.TASK  # the time left is observed

    @property
    def default_params(self) -> MatchingParams:
        return MatchingParams(max_steps=jnp.int32(self.max_steps))

    def generate(self, key, params):
        cue = jax.random.randint(key, (), 0, 2)
        return MatchingState(cue=cue, step=jnp.int32(0), matches=jnp.int32(0))

    def step(self, key, state, actions, params):
        legal = jnp.take_along_axis(self.action_mask(state, params), actions[:, None], 1)[:, 0]
        reward = (actions == state.cue).astype(jnp.float32) - 10.0 * (~legal)
        terminated = actions[0] != actions[1]
        step = state.step + 1
        truncated = (step >= params.max_steps) & ~terminated
        state = MatchingState(
            cue=jax.random.randint(key, (), 0, 2),
            step=step,
            matches=state.matches + jnp.all(actions == state.cue),
        )
        info = {"terminated": terminated, "truncated": truncated}
        return self.observe(state, params), state, reward, terminated | truncated, info

    def observe(self, state, params):
        cue = jax.nn.one_hot(state.cue, 2)
        time_left = 1.0 - state.step / params.max_steps
        single = jnp.concatenate([cue, time_left[None]])
        return jnp.broadcast_to(single, (2, 3)).astype(jnp.float32)

    def action_mask(self, state, params):
        row = jnp.array([True, True, False, False]).at[2].set(state.step % 2 == 1)
        return jnp.broadcast_to(row, (2, 4))

    def global_state(self, state, params):
        cue = jax.nn.one_hot(state.cue, 2)
        return jnp.concatenate([cue, state.step[None] / params.max_steps, state.matches[None]])

    def episode_metrics(self, state, params):
        return {"matches": state.matches.astype(jnp.float32)}
