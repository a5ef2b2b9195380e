"""The JaxMARL dictionary interface over an array environment, for existing MARL code.

JaxMARL environments key everything by agent name (`agent_0`, ...), add
`"__all__"` to the done dict and restart inside `step`; this adapter does the
same, and keeps the ended episode's observation in `info["final_observation"]`.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from alemlite.core.environment import Environment
from alemlite.core.spaces import Box, Discrete


class JaxMARLAdapter:
    def __init__(self, env: Environment):
        self.env = env
        self.num_agents = env.num_agents
        self.agents = [f"agent_{index}" for index in range(env.num_agents)]

    def _to_dict(self, array: jax.Array) -> dict[str, jax.Array]:
        return {agent: array[index] for index, agent in enumerate(self.agents)}

    def observation_space(self, agent: str) -> Box:
        return Box(-jnp.inf, jnp.inf, self.env.observation_shape)

    def action_space(self, agent: str) -> Discrete:
        return Discrete(self.env.num_actions)

    def reset(self, key: jax.Array, params: Any = None) -> tuple[dict[str, jax.Array], Any]:
        obs, state = self.env.reset(key, self.env.default_params if params is None else params)
        return self._to_dict(obs), state

    def step(self, key: jax.Array, state: Any, actions: dict[str, jax.Array], params: Any = None):
        params = self.env.default_params if params is None else params
        step_key, reset_key = jax.random.split(key)
        action_array = jnp.stack([jnp.asarray(actions[agent], jnp.int32) for agent in self.agents])
        obs, state, reward, done, info = self.env.step(step_key, state, action_array, params)
        restart_obs, restart_state = self.env.reset(reset_key, params)
        info = {**info, "final_observation": self._to_dict(obs)}
        state = jax.tree.map(lambda new, old: jnp.where(done, new, old), restart_state, state)
        obs = jnp.where(done, restart_obs, obs)
        dones = {agent: done for agent in self.agents} | {"__all__": done}
        return self._to_dict(obs), state, self._to_dict(reward), dones, info

    def get_avail_actions(self, state: Any, params: Any = None) -> dict[str, jax.Array]:
        params = self.env.default_params if params is None else params
        return self._to_dict(self.env.action_mask(state, params))
