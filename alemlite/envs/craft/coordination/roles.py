"""Soft specialisation: roles by agent index (warrior, forager, miner, warrior, ...).

Role-gated activities (`L.MATERIAL_ROLE`, `L.ACTION_ROLE`): a specialist always
succeeds; anyone else succeeds with probability 1 - alpha, or never with
`hard_specialisation`. A failed attempt costs the turn and nothing else. Warriors deal
double melee damage; non-foragers get half the food of a cow or a plant. A forager has
double food / drink capacity, read as "each unit lasts twice as long": its hunger and
thirst limits are doubled (FORAGER_RESERVE_FACTOR), so a full stomach and water skin
last as long as a double-size store would, while stats keep the 0..9 scale that the
observation, gives and eating use.
"""

from __future__ import annotations

from dataclasses import replace

import jax
import jax.numpy as jnp

from alemlite.envs.craft import constants as C
from alemlite.envs.craft.config import CraftConfig, CraftParams
from alemlite.envs.craft.coordination import constants as L
from alemlite.envs.craft.coordination.part import Draws, Part
from alemlite.envs.craft.world.gathering import agent_blocking, facing_target, mob_at
from alemlite.envs.craft.world.rules import DoRules, LifeRules
from alemlite.envs.craft.world.state import CraftState
from alemlite.envs.craft.world.tiles import read_tiles


def agent_roles(num_agents: int) -> jax.Array:
    return jnp.arange(num_agents) % L.NUM_ROLES


def non_specialist_success(state: CraftState, params: CraftParams) -> jax.Array:
    """Probability that a non-specialist's gated attempt succeeds, `()`."""
    return jnp.where(params.hard_specialisation, 0.0, 1.0 - state.coordination.alpha)


def allowed(
    config: CraftConfig, state: CraftState, params: CraftParams, needed: jax.Array, roll: jax.Array
) -> jax.Array:
    """Whether each agent's attempt needing role `needed` `(P,)` (-1: none) succeeds."""
    specialist = (needed < 0) | (needed == agent_roles(config.num_agents))
    return specialist | (roll < non_specialist_success(state, params))


def gate_actions(
    config: CraftConfig, state: CraftState, params: CraftParams, actions: jax.Array, roll: jax.Array
) -> jax.Array:
    """Role checks for the actions `(P,)`: failed gated actions become noop.

    DO is gated by the material faced (not when facing a teammate or a mob).
    """
    target = facing_target(state)
    facing_entity = jnp.any(
        agent_blocking(state, target) & ~jnp.eye(config.num_agents, dtype=bool), axis=1
    ) | jnp.any(mob_at(state, target), axis=1)
    material_role = jnp.where(
        facing_entity, -1, jnp.asarray(L.MATERIAL_ROLE)[read_tiles(state.map, target)]
    )
    needed = jnp.where(
        actions == C.DO, material_role, jnp.asarray(L.ACTION_ROLE)[actions % C.NUM_ACTIONS]
    )
    needed = jnp.where(actions < C.NUM_ACTIONS, needed, -1)
    return jnp.where(allowed(config, state, params, needed, roll), actions, C.NOOP)


def gated_action_mask(config: CraftConfig, params: CraftParams) -> jax.Array:
    """`(P, NUM_ACTIONS)` bool: actions a hard non-specialist can never succeed at."""
    action_role = jnp.asarray(L.ACTION_ROLE)
    impossible = (action_role[None, :] >= 0) & (
        action_role[None, :] != agent_roles(config.num_agents)[:, None]
    )
    return ~(impossible & params.hard_specialisation)


def melee_factor(num_agents: int) -> jax.Array:
    return jnp.where(agent_roles(num_agents) == L.WARRIOR, L.WARRIOR_DAMAGE_FACTOR, 1)


def food_share(num_agents: int) -> jax.Array:
    return jnp.where(agent_roles(num_agents) == L.FORAGER, 1.0, L.NON_FORAGER_FOOD_SHARE)


def reserve_factor(num_agents: int) -> jax.Array:
    """`(P,)` int: how many times longer each unit of food and drink lasts (foragers 2)."""
    return jnp.where(agent_roles(num_agents) == L.FORAGER, L.FORAGER_RESERVE_FACTOR, 1)


class Roles(Part):
    """Role checks on gated actions, warriors' damage, foragers' food and reserves."""

    identity_features = L.NUM_ROLES  # each agent's role, one-hot

    @staticmethod
    def identity(config: CraftConfig) -> jax.Array:
        return jax.nn.one_hot(agent_roles(config.num_agents), L.NUM_ROLES)

    @staticmethod
    def enabled(config: CraftConfig) -> bool:
        return config.has_specialisation

    @staticmethod
    def random_shapes(config: CraftConfig) -> dict[str, tuple[int, ...]]:
        return {"role": (config.num_agents,)}

    def gate(self, state: CraftState, params: CraftParams, actions: jax.Array, draws: Draws):
        return gate_actions(self.config, state, params, actions, draws["role"])

    def restrict(self, state: CraftState, params: CraftParams, mask: jax.Array) -> jax.Array:
        return mask & gated_action_mask(self.config, params)

    def do_rules(self, state: CraftState, params: CraftParams, rules: DoRules) -> DoRules:
        num_agents = self.config.num_agents
        return replace(
            rules, melee_factor=melee_factor(num_agents), food_share=food_share(num_agents)
        )

    def life_rules(self, state: CraftState, params: CraftParams, rules: LifeRules) -> LifeRules:
        return replace(rules, reserve=reserve_factor(self.config.num_agents))
