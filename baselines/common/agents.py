"""Parameter-shared actor and critic over `(environments, agents)` batches.

The networks in `networks.py` see a flat batch; these wrappers flatten the
environment and agent axes, append each agent's one-hot id, reset recurrent
state at episode starts, and restore the `(T, E, N, ...)` layout that rollouts
and losses use. Everything is time-major so that one code path serves a single
acting step (`T = 1`) and a whole stored rollout.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import flax.linen as nn
import jax
import jax.numpy as jnp

from baselines.common.config import NetworkConfig
from baselines.common.networks import Actor, Critic, initial_hidden, masked_categorical


def _apply_per_agent(module: nn.Module, params, hidden, inputs, resets, *extra):
    """Apply `module` to `inputs` `(T, E, N, ...)`; `hidden` is `(E, N, H)` or None."""
    steps, envs, agents = inputs.shape[:3]
    flat = lambda x: x.reshape(steps, envs * agents, *x.shape[3:])  # noqa: E731
    agent_id = jnp.broadcast_to(jnp.eye(agents), (steps, envs, agents, agents))
    agent_resets = jnp.broadcast_to(resets[:, :, None], (steps, envs, agents))
    flat_hidden = None if hidden is None else hidden.reshape(envs * agents, -1)
    flat_hidden, output = module.apply(
        params, flat_hidden, flat(inputs), flat(agent_id), flat(agent_resets), *map(flat, extra)
    )
    new_hidden = None if hidden is None else flat_hidden.reshape(hidden.shape)
    return new_hidden, output.reshape(steps, envs, agents, *output.shape[2:])


@dataclass(frozen=True)
class SharedActor:
    """One policy network for every agent seat, with action masking."""

    network: NetworkConfig
    num_agents: int
    num_actions: int
    observation_shape: tuple[int, ...]

    @property
    def module(self) -> Actor:
        return Actor(self.network, self.num_actions, len(self.observation_shape))

    def init(self, key: jax.Array) -> Any:
        observation = jnp.zeros((1, 1, *self.observation_shape))
        agent_id = jnp.zeros((1, 1, self.num_agents))
        return self.module.init(
            key,
            initial_hidden(self.network, (1,)),
            observation,
            agent_id,
            jnp.zeros((1, 1), bool),
            jnp.ones((1, 1, self.num_actions), bool),
        )

    def initial_hidden(self, num_envs: int):
        return initial_hidden(self.network, (num_envs, self.num_agents))

    def logits(self, params, hidden, observation, resets, mask):
        """Masked logits `(T, E, N, A)` for observations `(T, E, N, ...)`."""
        return _apply_per_agent(self.module, params, hidden, observation, resets, mask)

    def act(self, params, hidden, observation, mask, episode_start, key):
        """Sample actions for one step: observation `(E, N, ...)`, `episode_start` `(E,)`."""
        hidden, logits = self.logits(
            params, hidden, observation[None], episode_start[None], mask[None]
        )
        distribution = masked_categorical(logits[0], mask)
        actions = distribution.sample(seed=key).astype(jnp.int32)
        return hidden, actions, distribution.log_prob(actions)


@dataclass(frozen=True)
class SharedCritic:
    """One value network for every agent seat; its input is chosen by the algorithm."""

    network: NetworkConfig
    num_agents: int
    input_shape: tuple[int, ...]

    @property
    def module(self) -> Critic:
        return Critic(self.network, len(self.input_shape))

    def init(self, key: jax.Array) -> Any:
        return self.module.init(
            key,
            initial_hidden(self.network, (1,)),
            jnp.zeros((1, 1, *self.input_shape)),
            jnp.zeros((1, 1, self.num_agents)),
            jnp.zeros((1, 1), bool),
        )

    def initial_hidden(self, num_envs: int):
        return initial_hidden(self.network, (num_envs, self.num_agents))

    def values(self, params, hidden, inputs, resets):
        """Values `(T, E, N)` for critic inputs `(T, E, N, ...)`."""
        return _apply_per_agent(self.module, params, hidden, inputs, resets)
