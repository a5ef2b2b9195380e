"""A tiny environment for testing the contract's wrappers independently of real worlds.

Each agent holds a counter that starts at a generated offset and grows by its
action (0 or 1). The episode terminates when every agent plays 1 on the same
step, and is truncated after `max_steps`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from alemlite.core import Environment, TimeLimit


@struct.dataclass
class ToyState:
    counters: jax.Array  # (num_agents,) int32
    offset: jax.Array  # () int32, drawn by generate
    step: jax.Array  # () int32


@struct.dataclass
class ToyParams:
    max_steps: jax.Array


class ToyEnv(Environment):
    name = "toy"

    def __init__(self, num_agents: int = 2, max_steps: int = 4):
        self._num_agents = num_agents
        self._max_steps = max_steps

    @property
    def num_agents(self) -> int:
        return self._num_agents

    @property
    def action_names(self) -> tuple[str, ...]:
        return ("STAY", "ADD")

    @property
    def observation_shape(self) -> tuple[int, ...]:
        return (2,)

    @property
    def global_state_shape(self) -> tuple[int, ...]:
        return (self._num_agents + 1,)

    @property
    def time_limit(self) -> TimeLimit:
        return TimeLimit.CUTOFF  # the step count is not observed

    @property
    def default_params(self) -> ToyParams:
        return ToyParams(max_steps=jnp.int32(self._max_steps))

    def generate(self, key, params):
        offset = jax.random.randint(key, (), 1, 100)
        return ToyState(
            counters=jnp.full((self._num_agents,), offset, jnp.int32),
            offset=offset,
            step=jnp.int32(0),
        )

    def step(self, key, state, actions, params):
        state = state.replace(counters=state.counters + actions, step=state.step + 1)
        terminated = jnp.all(actions == 1)
        truncated = (state.step >= params.max_steps) & ~terminated
        reward = actions.astype(jnp.float32)
        info = {"terminated": terminated, "truncated": truncated}
        return self.observe(state, params), state, reward, terminated | truncated, info

    def observe(self, state, params):
        step = jnp.broadcast_to(state.step, state.counters.shape)
        return jnp.stack([state.counters, step], axis=-1).astype(jnp.float32)

    def action_mask(self, state, params):
        return jnp.ones((self._num_agents, 2), dtype=bool)

    def global_state(self, state, params):
        return jnp.concatenate([state.counters, state.step[None]]).astype(jnp.float32)

    def episode_metrics(self, state, params):
        return {"total": state.counters.sum() - state.offset * self._num_agents}
