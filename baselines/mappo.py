"""MAPPO: IPPO's shared actors with a centralised critic on the environment's global state.

Each seat's value is read from the global state (`env.global_state`) and the
seat's one-hot id, so the critic sees what no single actor can; at truncation it
bootstraps from the global state of `info["final_state"]`. Everything else is IPPO.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from baselines.common.rollout import AgentView
from baselines.ippo import IPPO


class MAPPO(IPPO):
    @property
    def critic_input_shape(self) -> tuple[int, ...]:
        return tuple(self.env.global_state_shape)

    def critic_inputs(self, view: AgentView) -> jax.Array:
        """The global state repeated for every seat: `(..., E, N, *global_state_shape)`."""
        agent_axes = view.action_mask.shape[:-1]
        global_state = jnp.expand_dims(view.global_state, len(agent_axes) - 1)
        return jnp.broadcast_to(global_state, (*agent_axes, *self.critic_input_shape))
