"""Joint projects: the next building on the construction sites, and diamond swords at a forge.

Builders and smiths are picked warrior, forager, then miner. Once the team holds a
project's materials the members request what they lack, meet at the site while their
health holds, and act on one step (sync, smiths) or one after the other (handover).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from alemlite.envs.craft import constants as C
from alemlite.envs.craft.coordination import constants as L
from alemlite.envs.craft.coordination import construction
from alemlite.envs.craft.coordination.tasks import quorum, task_kind
from alemlite.envs.craft.team_policy.sharing import Sharing, may_request
from alemlite.envs.craft.team_policy.tuning import ITEM_REQUEST, ROLE_PREFERENCE
from alemlite.envs.craft.team_policy.view import TeamView
from alemlite.envs.craft.world.gathering import facing_target
from alemlite.envs.craft.world.tiles import read_tiles


class Project(NamedTuple):
    """A joint build (or diamond swords) and who takes part."""

    assembling: jax.Array  # () bool: the team holds what the members pay; they gather
    members: jax.Array  # (P,) bool
    place: jax.Array  # (2,) int32: the site (or forge) the members face
    share: jax.Array  # (items,) int32: what each paying member pays
    payers: jax.Array  # (P,) bool: members who still pay
    acting: jax.Array  # (P,) bool: members who do `action` this step
    action: jax.Array  # () int32
    wanted: jax.Array  # (items,) int32: what the team holds for this project
    later: jax.Array  # (items,) int32: and for the projects after it
    clearing: jax.Array  # () bool: a stone beside the site must go to make room for builders
    clear: jax.Array  # (2,) int32: that stone


def _preference_rank(num_agents: int, eligible: jax.Array, first: jax.Array) -> jax.Array:
    """`(P,)` rank of each agent as builder or smith: `first` (-1: none) leads, then roles
    by ROLE_PREFERENCE, then index; ineligible agents come last. A fixed order, so that
    the members (and the shares they keep) stay the same from step to step."""
    agent = jnp.arange(num_agents)
    key = jnp.asarray(ROLE_PREFERENCE)[agent % L.NUM_ROLES] * num_agents + agent
    key = jnp.where(agent == first, -1, key) + jnp.where(eligible, 0, 10 * num_agents)
    return jnp.argsort(jnp.argsort(key))


def building_project(view: TeamView) -> Project:
    """The next building: a started handover first, else shelter, forge, beacon in turn."""
    config, state, params, standing = view.config, view.state, view.params, view.standing
    num_agents = config.num_agents
    agents, coordination = state.agents, state.coordination
    sites = coordination.sites
    slots = sites.task.shape[0]
    position = sites.position.astype(jnp.int32)
    handover = task_kind(sites.task) == L.TASK_HANDOVER
    needed = jnp.where(handover, 2, quorum(sites.task, coordination.alpha, num_agents))
    # Sides builders can stand on: walkable now, or a stone the miner clears first.
    side_tiles = position[:, None, :] + jnp.asarray(C.DIRECTIONS)[None]  # (Q, 4, 2)
    side_material = read_tiles(state.map, side_tiles)
    clipped = jnp.clip(side_tiles, 0, config.map_size - 1)
    side_task = coordination.tile_task[clipped[..., 0], clipped[..., 1]] > 0
    walkable_side = jnp.asarray(C.WALKABLE)[side_material]
    stone_side = (side_material == C.STONE) & ~side_task
    sides = jnp.sum(walkable_side | stone_side, axis=1)
    unbuilt = (sites.task > 0) & (sites.building < 0)
    usable = unbuilt & (sides >= needed) & (needed <= jnp.sum(agents.status != C.DEAD))
    built = jnp.any(sites.building[:, None] == jnp.arange(L.NUM_BUILDINGS)[None], axis=0)
    started = usable & (sites.pending >= 0)

    # The shelter takes the site needing most builders, iron buildings those needing fewest.
    slot = jnp.arange(slots)
    fewest_first = jnp.where(jnp.arange(L.NUM_BUILDINGS) == L.SHELTER_KIND, -1, 1)
    score = fewest_first[:, None] * needed[None, :] * slots + slot[None, :]
    score = jnp.where(usable[None, :], score, 1 << 20)
    site_for = jnp.argmin(score, axis=1)
    open_kind = ~built & jnp.any(usable)
    building = jnp.where(
        jnp.any(started), sites.pending[jnp.argmax(started)], jnp.argmax(open_kind)
    )
    site = jnp.where(jnp.any(started), jnp.argmax(started), site_for[building])
    active = jnp.any(started) | jnp.any(open_kind)
    building = building.astype(jnp.int32)

    starter = jnp.where(jnp.any(started), sites.starter[site].astype(jnp.int32), -1)
    rank = _preference_rank(num_agents, agents.status != C.DEAD, starter)
    members = rank < needed[site]
    payers = members & (jnp.arange(num_agents) != starter)
    share = params.building_share[building]
    held = jnp.sum(agents.inventory * standing[:, None], axis=0)
    assembling = active & jnp.all(held >= jnp.sum(payers) * share)

    facing_site = jnp.all(facing_target(state) == position[site][None, :], axis=1)
    affords = jnp.all(agents.inventory >= share[None, :], axis=1)
    able = standing & ~agents.sleeping
    ready = facing_site & affords & able
    all_ready = jnp.all(ready | ~payers)
    clearing = active & (jnp.sum(walkable_side[site]) < needed[site])
    clear = side_tiles[site, jnp.argmax(stone_side[site])]
    # A sync builds on one step; a handover's first member starts, another finishes.
    acting = jnp.where(
        handover[site],
        jnp.where(starter >= 0, payers & ready, (rank == 0) & all_ready),
        payers & all_ready,
    )
    # Stock for this building and the ones after it (each on its preferred site).
    later = open_kind & (jnp.arange(L.NUM_BUILDINGS) != building)
    later_need = jnp.sum(
        (later * needed[site_for])[:, None] * params.building_share, axis=0
    ).astype(jnp.int32)
    wanted = jnp.where(active, jnp.sum(payers) * share, 0)
    return Project(
        assembling=assembling,
        members=members & active,
        place=position[site],
        share=share,
        payers=payers & active,
        acting=acting & assembling,
        action=(construction.first_build(config) + building).astype(jnp.int32),
        wanted=wanted.astype(jnp.int32),
        later=later_need,
        clearing=clearing,
        clear=clear.astype(jnp.int32),
    )


def sword_project(view: TeamView) -> Project:
    """Diamond swords: two smiths, each with 1 wood + 1 diamond, beside the forge together."""
    config, standing = view.config, view.standing
    agents, sites = view.state.agents, view.state.coordination.sites
    forge = sites.building == L.FORGE_KIND
    place = sites.position[jnp.argmax(forge)].astype(jnp.int32)
    rank = _preference_rank(config.num_agents, standing, jnp.int32(-1))
    members = (rank < L.DIAMOND_SWORD_SMITHS) & (config.num_agents >= L.DIAMOND_SWORD_SMITHS)
    share = jnp.asarray(L.DIAMOND_SWORD_SHARE)
    held = jnp.sum(agents.inventory * standing[:, None], axis=0)
    assembling = jnp.any(forge) & jnp.all(held >= L.DIAMOND_SWORD_SMITHS * share)
    near = jnp.max(jnp.abs(agents.position - place[None, :]), axis=1) <= 1
    affords = jnp.all(agents.inventory >= share[None, :], axis=1)
    ready = near & affords & standing & ~agents.sleeping
    acting = members & jnp.all(ready | ~members) & assembling
    swords_left = ~jnp.all(view.state.coordination.diamond_sword | ~members)
    return Project(
        assembling=assembling,
        members=members,
        place=place,
        share=share,
        payers=members,
        acting=acting,
        action=jnp.int32(construction.first_build(config) + L.NUM_BUILDINGS),
        wanted=jnp.where(swords_left, L.DIAMOND_SWORD_SMITHS * share, 0).astype(jnp.int32),
        later=jnp.zeros_like(share),
        clearing=jnp.bool_(False),
        clear=place,
    )


class Plan(NamedTuple):
    """The project the team works on this step and what it holds back for projects."""

    member: jax.Array  # (P,) bool: takes part in the project under way
    meeting: jax.Array  # (P,) bool: a member free to meet at the place now
    smithing: jax.Array  # () bool: the project under way is diamond swords
    reserve: jax.Array  # (P, items): what each payer keeps for its share
    current_stock: jax.Array  # (items,) what the team gathers for the current project
    later_stock: jax.Array  # (items,) and for the projects after it
    project: Project | None  # the project under way (None without construction)
    building: Project | None  # the next building, under way or not


def plan_projects(view: TeamView, own_needs: jax.Array) -> Plan:
    """The next building or diamond swords; `own_needs` `(P,)`: agents with needs of their
    own to see to before they meet."""
    num_agents, items = view.num_agents, C.NUM_ITEMS
    if not view.config.has_construction:
        nothing = jnp.zeros((num_agents,), bool)
        no_stock = jnp.zeros((items,), jnp.int32)
        return Plan(
            member=nothing,
            meeting=nothing,
            smithing=jnp.bool_(False),
            reserve=jnp.zeros((num_agents, items), jnp.int32),
            current_stock=no_stock,
            later_stock=no_stock,
            project=None,
            building=None,
        )
    building = building_project(view)
    swords = sword_project(view)
    # Forging takes two smiths beside the forge, quicker to gather than builders.
    sword_on = swords.assembling
    building_on = building.assembling & ~sword_on
    project = jax.tree.map(lambda b, s: jnp.where(building_on, b, s), building, swords)
    project_on = building_on | sword_on
    member = project.members & project_on
    # Members meet at the place once none of them has needs of its own to see to;
    # until then each goes on with its own work (its share stays reserved).
    meeting = member & jnp.all(~own_needs | ~member)
    reserve = jnp.where((project.payers & project_on)[:, None], project.share[None, :], 0)
    # Once a forge stands, its diamond swords come before the next building.
    forge_built = jnp.any(view.state.coordination.sites.building == L.FORGE_KIND)
    return Plan(
        member=member,
        meeting=meeting,
        smithing=sword_on,
        reserve=reserve,
        current_stock=jnp.where(forge_built, swords.wanted, building.wanted),
        later_stock=building.later + jnp.where(forge_built, building.wanted, swords.wanted),
        project=project,
        building=building,
    )


class MemberSteps(NamedTuple):
    ask_share: jax.Array  # (P,) bool: request the share the member lacks
    missing_request: jax.Array  # (P,) that request (-1: none)
    smith_here: jax.Array  # (P,) bool: a smith beside the forge
    action: jax.Array  # (P,) the project's action for those acting now (else noop)
    place: jax.Array  # (2,) the site or forge
    clearing: jax.Array  # (P,) bool: the miner clears a stone beside the next site
    clear: jax.Array  # (2,) that stone


def member_steps(view: TeamView, plan: Plan, sharing: Sharing) -> MemberSteps:
    """Project members request a missing share, walk to the place and act together; the
    miner clears a stone from beside the next site when builders lack room."""
    num_agents = view.num_agents
    if not view.config.has_construction:
        nobody = jnp.zeros((num_agents,), bool)
        return MemberSteps(
            ask_share=nobody,
            missing_request=jnp.full((num_agents,), -1),
            smith_here=nobody,
            action=jnp.zeros((num_agents,), jnp.int32),
            place=jnp.zeros((2,), jnp.int32),
            clearing=nobody,
            clear=jnp.zeros((2,), jnp.int32),
        )
    project, building, inventory = plan.project, plan.building, view.inventory
    lacking = (inventory < project.share[None, :]) & project.payers[:, None]
    missing = jnp.argmax(lacking, axis=1)
    missing_request = jnp.where(jnp.any(lacking, axis=1), jnp.asarray(ITEM_REQUEST)[missing], -1)
    near_place = jnp.max(jnp.abs(view.position - project.place[None, :]), axis=1) <= 1
    return MemberSteps(
        ask_share=plan.member & may_request(view, sharing, missing_request),
        missing_request=missing_request,
        smith_here=plan.meeting & plan.smithing & near_place,
        action=jnp.where(project.acting, project.action, C.NOOP),
        place=project.place,
        clearing=view.miner & building.clearing & (inventory[:, C.INV_WOOD_PICKAXE] > 0),
        clear=building.clear,
    )
