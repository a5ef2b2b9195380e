"""A trained actor as a plain policy, for evaluation, the LLM bridge and demos."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp

from alemlite.core.environment import Environment
from alemlite.core.errors import require
from alemlite.evaluation import Policy
from baselines.common.agents import SharedActor
from baselines.common.checkpoints import make_recorded_env

# Shared options (`alemlite.core.spec.SHARED_OPTIONS`) besides the seats that an actor cannot
# act outside of although the shapes fit: a map's side (positions are observed as fractions
# of it). Compared where both the record and the environment's static config have them.
FIXED_OPTIONS = ("map_size",)


# eq=False: hashed by identity, so `jax.jit(policy)` works despite the dict field.
@dataclass(frozen=True, eq=False)
class TrainedPolicy:
    """`policy(key, obs, mask) -> actions` for one table: obs `(N, ...)`, mask `(N, A)`.

    Jittable and vmappable (the parameters are closed over). Recurrent actors
    keep memory, so they act through `step` with an explicit hidden state.
    Every refusal begins with `name`, the name or directory it was loaded from.
    """

    actor: SharedActor
    params: Any
    description: dict
    name: str = "policy"

    def __call__(self, key: jax.Array, obs: jax.Array, mask: jax.Array) -> jax.Array:
        require(
            not self.recurrent,
            f"{self.name}: this policy is recurrent; call policy.step(key, hidden, obs, mask, "
            "episode_start) with hidden = policy.initial_hidden()",
        )
        return self.step(key, None, obs, mask, jnp.array(False))[1]

    def initial_hidden(self):
        return self.actor.initial_hidden(1)

    def step(self, key, hidden, obs, mask, episode_start) -> tuple[Any, jax.Array]:
        """One step with memory: returns the new hidden state and actions `(N,)`."""
        # Shapes are static, so a table of another size is refused while tracing, in one line.
        seats, actions = self.actor.num_agents, self.actor.num_actions
        expected = ((seats, *self.actor.observation_shape), (seats, actions))
        require(
            (tuple(obs.shape), tuple(mask.shape)) == expected,
            f"{self.name}: observations {tuple(obs.shape)} and action mask {tuple(mask.shape)} "
            f"do not fit a policy trained on {self.trained_on} (observations {expected[0]}, "
            f"mask {expected[1]}); act on its environment, policy.make_env()",
        )
        hidden, actions, _ = self.actor.act(
            self.params, hidden, obs[None], mask[None], jnp.asarray(episode_start)[None], key
        )
        return hidden, actions[0]

    @property
    def recurrent(self) -> bool:
        return self.actor.network.recurrent

    @property
    def recorded_settings(self) -> dict:
        """The recorded environment's options (or, exported before options were recorded,
        its `make` keyword arguments)."""
        recorded = {k: v for k, v in self.description["env"].items() if k != "name"}
        return recorded.get("options", recorded)

    @property
    def trained_on(self) -> str:
        """The recorded environment, e.g. `dining (num_agents=5, max_steps=30, ...)`."""
        settings = ", ".join(f"{k}={v!r}" for k, v in self.recorded_settings.items())
        return f"{self.description['env']['name']} ({settings})"

    def check_fits(self, env: Environment) -> None:
        """Refuse (one line) an environment other than the one recorded at training.

        Compared: the environment, its seats (`num_agents`: table or team size), a map's
        side, then the observation shape and the actions. Other settings (reward,
        difficulty, episode length) may differ on purpose: they are how a policy is tested
        off its training distribution.
        """
        require(
            env.name == self.description["env"]["name"],
            f"{self.name}: trained on {self.trained_on}, but the environment is {env.name}; "
            f"use a checkpoint trained on {env.name}",
        )
        require(
            env.num_agents == self.actor.num_agents,
            f"{self.name}: trained with num_agents={self.actor.num_agents}, but this "
            f"{env.name} environment has num_agents={env.num_agents}; use a checkpoint "
            f"trained with num_agents={env.num_agents}",
        )
        for option in FIXED_OPTIONS:
            trained = self.recorded_settings.get(option)
            given = getattr(getattr(env, "config", None), option, None)
            require(
                trained is None or given is None or trained == given,
                f"{self.name}: trained with {option}={trained}, but this {env.name} "
                f"environment has {option}={given}; use a checkpoint trained with "
                f"{option}={given}",
            )
        trained = (self.actor.observation_shape, self.actor.num_actions)
        given = (tuple(env.observation_shape), env.num_actions)
        require(
            given == trained,
            f"{self.name}: trained on {self.trained_on} with (observation shape, actions) = "
            f"{trained}, but this {env.name} environment has {given}; use a checkpoint "
            "trained on it",
        )

    def state_policy(self, env: Environment) -> Policy:
        """The `policy(key, state, params)` form that `alemlite.evaluation.evaluate` takes.

        That form carries no memory from one step to the next, so a recurrent actor is
        refused here, before anything is compiled, as is an environment other than the
        one the actor was trained on (`check_fits`).
        """
        require(
            not self.recurrent,
            f"{self.name}: the policy is recurrent (GRU), but as policy(key, state, params) "
            "(a team's seat, alemlite.evaluation) it keeps no memory between steps; use a "
            "feed-forward checkpoint (trained with --network.recurrent off)",
        )
        self.check_fits(env)

        def policy(key, state, params):
            return self(key, env.observe(state, params), env.action_mask(state, params))

        return policy

    def make_env(self) -> Environment:
        """The environment this policy was trained on."""
        return make_recorded_env(self.description["env"])
