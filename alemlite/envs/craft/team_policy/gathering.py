"""Gathering and the forager's garden. Each agent fetches the nearest resource of its most
pressing need (first tools, the current project, the iron pickaxe, later projects, some
wood), leaving task tiles to rallies; the forager plants saplings."""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from alemlite.envs.craft import constants as C
from alemlite.envs.craft.team_policy.grid import avoided_tasks
from alemlite.envs.craft.team_policy.projects import Plan
from alemlite.envs.craft.team_policy.tuning import (
    BASE_WOOD,
    GATHER_ITEMS,
    GATHER_MATERIALS,
    WELL_ENOUGH,
)
from alemlite.envs.craft.team_policy.view import TeamView


class Gathering(NamedTuple):
    gathering: jax.Array  # (P,) bool: has a resource to fetch
    targets: jax.Array  # (P, M) bool: the materials it fetches
    first_needs: jax.Array  # (P,) bool: fetches for its first tools
    busy_miner: jax.Array  # (P,) bool: the miner with mining still to do


def gather(view: TeamView, wants_tool: jax.Array, plan: Plan) -> Gathering:
    """The resources each agent fetches; `wants_tool` `(P, 6)`: the tools it is to make."""
    num_agents, inventory, miner = view.num_agents, view.inventory, view.miner
    items = C.NUM_ITEMS
    stone_pickaxe = inventory[:, C.INV_STONE_PICKAXE] > 0
    iron_pickaxe = inventory[:, C.INV_IRON_PICKAXE] > 0
    wood_pickaxe = inventory[:, C.INV_WOOD_PICKAXE] > 0
    # First tools: wood pickaxe (and a table), the miner's stone pickaxe, the warrior's
    # wood sword; further tools: the miner's furnace and iron pickaxe.
    first_wood = jnp.where(wants_tool[:, 0] | wants_tool[:, 3], 2, 0) + jnp.where(
        miner & ~stone_pickaxe, 1, 0
    )
    first_stone = jnp.where(miner & wood_pickaxe & ~stone_pickaxe, 1, 0)
    first_tools = jnp.zeros((num_agents, items), jnp.int32)
    first_tools = first_tools.at[:, C.INV_WOOD].set(first_wood).at[:, C.INV_STONE].set(first_stone)
    # The iron pickaxe: wood, coal, iron, and a table's wood and a furnace's stone.
    iron_tool = (miner & stone_pickaxe & ~iron_pickaxe).astype(jnp.int32)
    further_tools = jnp.zeros((num_agents, items), jnp.int32)
    for item, amount in ((C.INV_WOOD, 2), (C.INV_STONE, 1), (C.INV_COAL, 1), (C.INV_IRON, 1)):
        further_tools = further_tools.at[:, item].set(amount * iron_tool)
    gather_items = jnp.asarray(GATHER_ITEMS)
    gather_materials = jnp.asarray(GATHER_MATERIALS)
    can_mine = view.has_tool[:, gather_materials] & (
        view.chance[:, gather_materials] >= WELL_ENOUGH
    )
    open_tiles = ~avoided_tasks(view.state)
    exists = jnp.stack([jnp.any((view.state.map == m) & open_tiles) for m in GATHER_MATERIALS])
    mineable = can_mine & exists[None, :]
    own = inventory[:, gather_items]
    current, held = plan.current_stock, view.held
    current_short = jnp.maximum(current - held, 0)[gather_items][None, :] > 0
    later_short = jnp.maximum(current + plan.later_stock - held, 0)[gather_items][None, :] > 0
    needs = [
        own < first_tools[:, gather_items],
        current_short,
        own < further_tools[:, gather_items],
        later_short,
        (gather_items == C.INV_WOOD)[None, :] & (own < BASE_WOOD),
    ]
    tier = functools.reduce(
        lambda lower, index: jnp.where(needs[index] & mineable, index, lower),
        range(len(needs) - 1, -1, -1),
        jnp.full(own.shape, len(needs)),
    )
    # Each agent fetches whichever resource of its most pressing tier lies nearest.
    best_tier = jnp.min(tier, axis=1)
    gathering = best_tier < len(needs)
    fetched = (tier == best_tier[:, None]) & gathering[:, None]
    targets = jnp.any(
        jax.nn.one_hot(gather_materials, C.MATERIAL_CODES, dtype=bool)[None] & fetched[..., None],
        axis=1,
    )
    return Gathering(
        gathering=gathering,
        targets=targets,
        first_needs=jnp.any(needs[0] & mineable, axis=1),
        # Mining is still to do while anything but the base wood is to fetch.
        busy_miner=miner & jnp.any((tier < len(needs) - 1) & mineable, axis=1),
    )


class Garden(NamedTuple):
    plant: jax.Array  # (P,) bool: place a sapling
    collect_sapling: jax.Array  # (P,) bool: collect one from the grass faced


def garden(view: TeamView, keep_clear: jax.Array) -> Garden:
    """The forager's garden: saplings from grass, then planted (never beside a site)."""
    forager, inventory = view.forager, view.inventory
    plant = forager & view.mask[:, C.PLACE_PLANT] & ~keep_clear
    collect = forager & (inventory[:, C.INV_SAPLING] == 0) & (view.facing_material == C.GRASS)
    return Garden(plant=plant, collect_sapling=collect)
