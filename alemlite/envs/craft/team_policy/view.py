"""What every behaviour of the team reads of the state, read once per step."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from alemlite.envs.craft import constants as C
from alemlite.envs.craft.config import CraftConfig, CraftParams
from alemlite.envs.craft.coordination import constants as L
from alemlite.envs.craft.env import CraftEnv
from alemlite.envs.craft.world.gathering import facing_target, mob_at
from alemlite.envs.craft.world.state import CraftState
from alemlite.envs.craft.world.tiles import read_tiles


class TeamView(NamedTuple):
    """The state and what the behaviours derive from it in common (P agents, N mob slots,
    M materials)."""

    config: CraftConfig
    state: CraftState
    params: CraftParams
    agent: jax.Array  # (P,) index
    role: jax.Array  # (P,)
    forager: jax.Array  # (P,) bool
    miner: jax.Array  # (P,) bool
    inventory: jax.Array  # (P, items)
    stats: jax.Array  # (P, stats)
    position: jax.Array  # (P, 2)
    food: jax.Array  # (P,)
    drink: jax.Array  # (P,)
    energy: jax.Array  # (P,)
    standing: jax.Array  # (P,) bool: alive, neither downed nor dead
    able: jax.Array  # (P,) bool: standing and awake
    mask: jax.Array  # (P, actions) bool: legal actions
    kinds: jax.Array  # (N,) mob kind of each slot
    elite: jax.Array  # (N,) elite grade of each slot
    facing: jax.Array  # (P, 2) the tile each agent faces
    facing_material: jax.Array  # (P,)
    facing_mobs: jax.Array  # (P, N) bool
    chance: jax.Array  # (P, M) probability of passing the role check of working a material
    has_tool: jax.Array  # (P, M) bool: holds the tool that collects a material
    held: jax.Array  # (items,) what the standing agents hold together

    @property
    def num_agents(self) -> int:
        return self.config.num_agents


def role_chance(
    config: CraftConfig, state: CraftState, params: CraftParams, needed: ArrayLike
) -> jax.Array:
    """`(P, K)` probability that each agent passes the role check of activities needing
    roles `needed` `(K,)` (-1: none)."""
    num_agents = config.num_agents
    needed = jnp.asarray(needed)
    if not config.has_specialisation:
        return jnp.ones((num_agents, needed.shape[0]))
    role = jnp.arange(num_agents) % L.NUM_ROLES
    specialist = (needed[None, :] < 0) | (needed[None, :] == role[:, None])
    other = jnp.where(params.hard_specialisation, 0.0, 1.0 - state.coordination.alpha)
    return jnp.where(specialist, 1.0, other)


def read_view(env: CraftEnv, state: CraftState, params: CraftParams) -> TeamView:
    """What the behaviours share, read once per step."""
    config = env.config
    agents = state.agents
    agent = jnp.arange(config.num_agents)
    role = agent % L.NUM_ROLES
    inventory, stats = agents.inventory, agents.stats
    standing = agents.status == C.ALIVE
    elite = (
        state.coordination.mob_elite
        if config.has_elites
        else jnp.zeros((config.num_mobs,), jnp.int8)
    )
    facing = facing_target(state)
    tool = jnp.asarray(C.COLLECT_TOOL)
    return TeamView(
        config=config,
        state=state,
        params=params,
        agent=agent,
        role=role,
        forager=role == L.FORAGER,
        miner=role == L.MINER,
        inventory=inventory,
        stats=stats,
        position=agents.position,
        food=stats[:, C.FOOD],
        drink=stats[:, C.DRINK],
        energy=stats[:, C.ENERGY],
        standing=standing,
        able=standing & ~agents.sleeping,
        mask=env.action_mask(state, params),
        kinds=jnp.asarray(config.mob_kinds()),
        elite=elite,
        facing=facing,
        facing_material=read_tiles(state.map, facing),
        facing_mobs=mob_at(state, facing),
        chance=role_chance(config, state, params, L.MATERIAL_ROLE),
        has_tool=(tool[None, :] < 0) | (inventory[:, jnp.maximum(tool, 0)] > 0),
        held=jnp.sum(inventory * standing[:, None], axis=0),
    )
