"""A trained actor as a plain policy, for evaluation, the LLM bridge and demos."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

import alemlite
from alemlite.core.environment import Environment
from alemlite.core.errors import require
from alemlite.evaluation import Policy
from baselines.common.agents import SharedActor


# eq=False: hashed by identity, so `jax.jit(policy)` works despite the dict field.
@dataclass(frozen=True, eq=False)
class TrainedPolicy:
    """`policy(key, obs, mask) -> actions` for one table: obs `(N, ...)`, mask `(N, A)`.

    Jittable and vmappable (the parameters are closed over). Recurrent actors
    keep memory, so they act through `step` with an explicit hidden state.
    """

    actor: SharedActor
    params: Any
    description: dict

    def __call__(self, key: jax.Array, obs: jax.Array, mask: jax.Array) -> jax.Array:
        require(
            not self.recurrent,
            "this policy is recurrent; call policy.step(key, hidden, obs, mask, episode_start) "
            "with hidden = policy.initial_hidden()",
        )
        return self.step(key, None, obs, mask, jnp.array(False))[1]

    def initial_hidden(self):
        return self.actor.initial_hidden(1)

    def step(self, key, hidden, obs, mask, episode_start) -> tuple[Any, jax.Array]:
        """One step with memory: returns the new hidden state and actions `(N,)`."""
        hidden, actions, _ = self.actor.act(
            self.params, hidden, obs[None], mask[None], jnp.asarray(episode_start)[None], key
        )
        return hidden, actions[0]

    @property
    def recurrent(self) -> bool:
        return self.actor.network.recurrent

    def state_policy(self, env: Environment) -> Policy:
        """The `policy(key, state, params)` form that `alemlite.evaluation.evaluate` takes.

        That form carries no memory from one step to the next, so a recurrent actor is
        refused here, before anything is compiled, as is an environment whose seats,
        observations or actions differ from the ones the actor was trained on.
        """
        require(
            not self.recurrent,
            "the policy is recurrent (GRU), but as policy(key, state, params) (a team's seat, "
            "alemlite.evaluation) it keeps no memory between steps; use a feed-forward "
            "checkpoint (trained with --network.recurrent off)",
        )
        trained_on = (self.actor.num_agents, self.actor.observation_shape, self.actor.num_actions)
        given = (env.num_agents, tuple(env.observation_shape), env.num_actions)
        require(
            given == trained_on,
            f"the policy was trained for (seats, observation shape, actions) = {trained_on}, "
            f"but this {env.name} environment has {given}; use a policy trained on it",
        )

        def policy(key, state, params):
            return self(key, env.observe(state, params), env.action_mask(state, params))

        return policy

    def make_env(self) -> Environment:
        """The environment this policy was trained on."""
        env = dict(self.description["env"])
        return alemlite.make(env.pop("name"), **env)
