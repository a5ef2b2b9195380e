"""Trading: requests and gives, actions appended after Crafter's 17.

Actions: `request_<resource>` (8), then `give_to_<k>` (P - 1, the k-th teammate in
order i+1, i+2, ... mod P).
- A request stays open for REQUEST_DURATION steps (a new one replaces it).
- A give moves one unit of what that teammate requests (an item, or a point of food /
  drink) if the giver has it, the teammate stands (alive) within `give_range` (L1,
  0: unlimited) and has room; the request then closes. Giver and receiver both earn
  `give_item`.
Each of these actions takes the agent's whole turn. Teammates see each other's open
request (one-hot over the resources).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from alemlite.envs.craft import constants as C
from alemlite.envs.craft.config import CraftConfig, CraftParams
from alemlite.envs.craft.coordination import constants as L
from alemlite.envs.craft.coordination.part import Draws, Part, Turn
from alemlite.envs.craft.world.observation import teammates
from alemlite.envs.craft.world.state import CraftState
from alemlite.envs.craft.world.tiles import l1_distance


def action_names(config: CraftConfig) -> tuple[str, ...]:
    return tuple(f"request_{name}" for name in L.REQUEST_RESOURCES) + tuple(
        f"give_to_{k}" for k in range(1, config.num_agents)
    )


def first_request(config: CraftConfig) -> int:
    """Id of `request_food` (trading's actions follow Crafter's)."""
    return C.NUM_ACTIONS


def first_give(config: CraftConfig) -> int:
    return C.NUM_ACTIONS + L.NUM_REQUEST_RESOURCES


def _holdings(state: CraftState) -> jax.Array:
    """`(P, 8)` amount of each requestable resource each agent holds."""
    agents = state.agents
    stat = jnp.asarray(L.REQUEST_STAT)
    item = jnp.asarray(L.REQUEST_ITEM)
    return jnp.where(
        stat >= 0, agents.stats[:, jnp.maximum(stat, 0)], agents.inventory[:, jnp.maximum(item, 0)]
    )


def give_valid(config: CraftConfig, state: CraftState, params: CraftParams) -> jax.Array:
    """`(P, P-1)` bool: each give action would move a unit."""
    agents, coordination = state.agents, state.coordination
    mates = jnp.asarray(teammates(config.num_agents))
    wanted = coordination.request_item.astype(jnp.int32)[mates]  # (P, P-1)
    holdings = _holdings(state)
    has = jnp.take_along_axis(holdings, jnp.maximum(wanted, 0), axis=1) > 0
    room = holdings[mates, jnp.maximum(wanted, 0)] < C.INVENTORY_MAX
    distance = l1_distance(agents.position, agents.position)[
        jnp.arange(config.num_agents)[:, None], mates
    ]
    near = (params.give_range <= 0) | (distance <= params.give_range)
    standing = agents.status[mates] == C.ALIVE
    return (wanted >= 0) & has & room & near & standing


def apply(
    config: CraftConfig, state: CraftState, params: CraftParams, actions: jax.Array
) -> CraftState:
    """Requests and gives of this step's actions `(P,)`."""
    coordination, agents = state.coordination, state.agents
    num_agents = config.num_agents
    request = actions - first_request(config)
    requesting = (request >= 0) & (request < L.NUM_REQUEST_RESOURCES)
    received = jnp.zeros((num_agents, L.NUM_REQUEST_RESOURCES), jnp.int32)
    giving = jnp.zeros((num_agents,), bool)
    if num_agents > 1:
        slot = actions - first_give(config)
        giving = (slot >= 0) & (slot < num_agents - 1)
        slot = jnp.clip(slot, 0, num_agents - 2)
        valid = give_valid(config, state, params)
        giving &= jnp.take_along_axis(valid, slot[:, None], 1)[:, 0]
        receiver = jnp.asarray(teammates(num_agents))[jnp.arange(num_agents), slot]
        resource = coordination.request_item.astype(jnp.int32)[receiver]
        moved = jax.nn.one_hot(resource, L.NUM_REQUEST_RESOURCES, dtype=jnp.int32)
        moved = moved * giving[:, None]
        received = received.at[receiver].add(moved)
        change = received - moved
        stat, item = jnp.asarray(L.REQUEST_STAT), jnp.asarray(L.REQUEST_ITEM)
        stats = agents.stats.at[:, stat[:2]].add(change[:, :2])
        inventory = agents.inventory.at[:, item[2:]].add(change[:, 2:])
        agents = agents.replace(
            stats=jnp.clip(stats, 0, C.STAT_MAX),
            inventory=jnp.clip(inventory, 0, C.INVENTORY_MAX),
        )
    got = jnp.any(received > 0, axis=1)
    request_item = jnp.where(requesting, request, coordination.request_item)
    request_item = jnp.where(got & ~requesting, -1, request_item)
    # Open for the next REQUEST_DURATION steps (the end-of-step tick takes one off).
    request_timer = jnp.where(requesting, L.REQUEST_DURATION + 1, coordination.request_timer)
    achievements = coordination.achievements.at[:, L.COORDINATION_INDEX["give_item"]].max(
        giving | got
    )
    coordination = coordination.replace(
        request_item=request_item.astype(jnp.int8),
        request_timer=request_timer.astype(jnp.int16),
        achievements=achievements,
        gives=coordination.gives + jnp.sum(giving).astype(jnp.int16),
    )
    return state.replace(agents=agents, coordination=coordination)


def tick_requests(state: CraftState) -> CraftState:
    """Open requests age by one step and close when their time is up."""
    coordination = state.coordination
    open_ = coordination.request_item >= 0
    timer = jnp.where(open_, coordination.request_timer - 1, 0)
    return state.replace(
        coordination=coordination.replace(
            request_timer=timer.astype(jnp.int16),
            request_item=jnp.where(timer > 0, coordination.request_item, -1).astype(jnp.int8),
        )
    )


class Trading(Part):
    """Requests and gives between teammates."""

    teammate_features = L.NUM_REQUEST_RESOURCES
    achievements = ("give_item",)

    @staticmethod
    def enabled(config: CraftConfig) -> bool:
        return config.has_trading

    @property
    def action_names(self) -> tuple[str, ...]:
        return action_names(self.config)

    def after_do(self, turn: Turn, state: CraftState, params: CraftParams, draws: Draws):
        return apply(self.config, state, params, turn.actions)

    def tick(self, state: CraftState) -> CraftState:
        return tick_requests(state)

    def action_mask(self, state: CraftState, params: CraftParams) -> jax.Array:
        requests = jnp.ones((self.config.num_agents, L.NUM_REQUEST_RESOURCES), bool)
        return jnp.concatenate([requests, give_valid(self.config, state, params)], axis=1)

    def about_teammates(self, state: CraftState, mates: np.ndarray) -> jax.Array:
        request = state.coordination.request_item.astype(jnp.int32)[mates]
        return jax.nn.one_hot(request, L.NUM_REQUEST_RESOURCES)
