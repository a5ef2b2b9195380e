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

# environment -> the setting that gives its number of seats
SEAT_SETTINGS = {"dining": "num_philosophers", "craft": "num_agents"}
# Settings besides the seats that an actor cannot act outside of although the shapes fit:
# Craft observes positions as fractions of the map's side.
FIXED_SETTINGS = {"craft": ("map_size",)}


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
    def trained_on(self) -> str:
        """The recorded environment, e.g. `dining (num_philosophers=5, reward='shaped')`."""
        recorded = dict(self.description["env"])
        name = recorded.pop("name")
        return f"{name} ({', '.join(f'{k}={v!r}' for k, v in recorded.items())})"

    def check_fits(self, env: Environment) -> None:
        """Refuse (one line) an environment other than the one recorded at training.

        Compared: the environment, its seats (table or team size), Craft's map size, then
        the observation shape and the actions. Other settings (reward, difficulty,
        episode length) may differ on purpose: they are how a policy is tested off its
        training distribution.
        """
        recorded = self.description["env"]
        require(
            env.name == recorded["name"],
            f"{self.name}: trained on {self.trained_on}, but the environment is {env.name}; "
            f"use a checkpoint trained on {env.name}",
        )
        seats = SEAT_SETTINGS.get(env.name, "num_agents")
        require(
            env.num_agents == self.actor.num_agents,
            f"{self.name}: trained with {seats}={self.actor.num_agents}, but this {env.name} "
            f"environment has {seats}={env.num_agents}; use a checkpoint trained with "
            f"{seats}={env.num_agents}",
        )
        for setting in FIXED_SETTINGS.get(env.name, ()):
            requested = getattr(getattr(env, "config", None), setting, None)
            require(
                setting not in recorded or requested is None or recorded[setting] == requested,
                f"{self.name}: trained with {setting}={recorded.get(setting)}, but this "
                f"{env.name} environment has {setting}={requested}; use a checkpoint trained "
                f"with {setting}={requested}",
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
        env = dict(self.description["env"])
        return alemlite.make(env.pop("name"), **env)
