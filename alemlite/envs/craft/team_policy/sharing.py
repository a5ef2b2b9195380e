"""Trading among teammates: what each agent can spare, its gives, and when it may request."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from alemlite.envs.craft.coordination import constants as L
from alemlite.envs.craft.coordination import trading
from alemlite.envs.craft.team_policy.tuning import (
    FOOD_REQUEST,
    FORAGER_KEEPS_FOOD,
    KEEP_STAT,
)
from alemlite.envs.craft.team_policy.view import TeamView
from alemlite.envs.craft.world.observation import teammates


class Sharing(NamedTuple):
    giving: jax.Array  # (P,) bool: a teammate requests what the agent can spare
    give_action: jax.Array  # (P,) the give that answers it
    first_request: int  # id of the first request action (0 without trading)
    teammate_spare: jax.Array  # (P, resources) bool: some teammate can spare the resource
    own_request: jax.Array  # (P,) each agent's open request (-1: none)


def share(view: TeamView, reserve: jax.Array) -> Sharing:
    """Give a teammate what it requests when the giver can spare it beyond `reserve`
    `(P, items)` (its project share) and what it keeps of its own stats."""
    config, num_agents, inventory = view.config, view.num_agents, view.inventory
    request_item = jnp.asarray(L.REQUEST_ITEM)
    spare_items = (inventory - reserve)[:, jnp.maximum(request_item, 0)]
    keep = jnp.where(
        view.forager[:, None] & (jnp.arange(L.NUM_REQUEST_RESOURCES) == FOOD_REQUEST)[None, :],
        FORAGER_KEEPS_FOOD,
        KEEP_STAT,
    )
    spare_stats = view.stats[:, jnp.maximum(jnp.asarray(L.REQUEST_STAT), 0)] - keep
    spare = jnp.where(request_item[None, :] >= 0, spare_items, spare_stats)
    spare = jnp.where(view.able[:, None], spare, 0)  # sleepers cannot give
    others = ~jnp.eye(num_agents, dtype=bool)
    teammate_spare = jnp.any(others[:, :, None] & (spare[None, :, :] > 0), axis=1)
    own_request = view.state.coordination.request_item.astype(jnp.int32)
    if config.has_trading and num_agents > 1:
        wanted = own_request[jnp.asarray(teammates(num_agents))]  # (P, P-1)
        spare_of_wanted = jnp.take_along_axis(spare, jnp.maximum(wanted, 0), axis=1)
        can_give = trading.give_valid(config, view.state, view.params) & (spare_of_wanted > 0)
        giving = jnp.any(can_give, axis=1)
        give_action = trading.first_give(config) + jnp.argmax(can_give, axis=1)
        first_request = trading.first_request(config)
    else:
        giving = jnp.zeros((num_agents,), bool)
        give_action = jnp.zeros((num_agents,), jnp.int32)
        first_request = 0
    return Sharing(giving, give_action, first_request, teammate_spare, own_request)


def _offered(sharing: Sharing, resource: jax.Array) -> jax.Array:
    """`(P,)` bool: some teammate can spare each agent's `resource` `(P,)`."""
    spare = sharing.teammate_spare
    return jnp.take_along_axis(spare, jnp.maximum(resource, 0)[:, None], 1)[:, 0]


def may_request(view: TeamView, sharing: Sharing, resource: jax.Array) -> jax.Array:
    """Request `resource` `(P,)`: trading is on, a teammate can spare it, and the agent's
    open request is another one."""
    if not view.config.has_trading or view.num_agents == 1:
        return jnp.zeros((view.num_agents,), bool)
    return (resource >= 0) & _offered(sharing, resource) & (sharing.own_request != resource)


def open_request(view: TeamView, sharing: Sharing, resource: jax.Array) -> jax.Array:
    """The agent's open request is `resource` and a teammate can still answer it."""
    offered = _offered(sharing, resource)
    return (sharing.own_request == resource) & offered & view.config.has_trading
