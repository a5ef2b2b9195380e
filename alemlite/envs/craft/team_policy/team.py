"""The team's step: every behaviour read from the state, then per agent the first that
applies in priority order (`BEHAVIOURS`), walked to and acted on."""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp

from alemlite.envs.craft import constants as C
from alemlite.envs.craft.config import CraftParams
from alemlite.envs.craft.env import CraftEnv
from alemlite.envs.craft.team_policy.danger import fight, help_against_elites, revive
from alemlite.envs.craft.team_policy.gathering import garden, gather
from alemlite.envs.craft.team_policy.goals import Goals, first_applicable
from alemlite.envs.craft.team_policy.navigation import explore_moves, walk
from alemlite.envs.craft.team_policy.projects import member_steps, plan_projects
from alemlite.envs.craft.team_policy.rallies import rally
from alemlite.envs.craft.team_policy.sharing import share
from alemlite.envs.craft.team_policy.survival import drink, eat, rest, urgency
from alemlite.envs.craft.team_policy.tuning import (
    DETOUR_PROBABILITY,
    DRINK_REQUEST,
    FOOD_REQUEST,
    MINED,
)
from alemlite.envs.craft.team_policy.view import read_view
from alemlite.envs.craft.team_policy.workshop import (
    beside_unbuilt_site,
    make_room_for_furnace,
    progress,
)
from alemlite.envs.craft.world.state import CraftState

BEHAVIOURS = (
    "unable",
    "fight",
    "revive",
    "help",
    "face_zombie",
    "sleep",
    "seek_shelter",
    "give",
    "request_share",
    "smith",
    "build",
    "request_drink",
    "drink_urgently",
    "request_food",
    "eat_urgently",
    "rest",
    "go_rest",
    "clear_site",
    "rally",
    "drink",
    "eat",
    "make",
    "place_table",
    "place_furnace",
    "arrange",
    "go_to_table",
    "gather",
    "plant",
    "seek_task",
    "explore",
)

WATER = C.material_set(C.WATER)
RIPE_PLANTS = C.material_set(C.RIPE_PLANT)
TABLES = C.material_set(C.TABLE)


def team_actions(
    env: CraftEnv, key: jax.Array, state: CraftState, params: CraftParams
) -> tuple[jax.Array, jax.Array]:
    """The team's actions `(P,)` and each agent's behaviour (index into BEHAVIOURS)."""
    view = read_view(env, state, params)
    num_agents, able, miner = view.num_agents, view.able, view.miner
    revival, fights, helps = revive(view), fight(view), help_against_elites(view)
    urgent = urgency(view)
    plan = plan_projects(view, urgent.own_needs)
    sharing = share(view, plan.reserve)
    drinking = drink(view, sharing, urgent.dry)
    eating = eat(view, sharing, urgent)
    resting = rest(view)
    keep_clear = beside_unbuilt_site(view)
    progression = progress(view, plan.reserve, keep_clear)
    gathering = gather(view, progression.wants_tool, plan)

    # Rallies take the agents nothing more urgent holds; the miner's first two pickaxes
    # come before any rally, and while it still has mining to do it joins rallies only on
    # what it fetches.
    progressing = progression.making | progression.place_table | progression.place_furnace
    progressing |= progression.go_to_table
    progressing |= miner & (view.inventory[:, C.INV_STONE_PICKAXE] == 0) & gathering.first_needs
    committed = ~able | revival.reviving | helps.helping | resting.tired | resting.night_rest
    committed |= drinking.urgently | eating.urgently | plan.meeting | progressing
    workable = (
        (~committed)[:, None] & view.has_tool & (~gathering.busy_miner[:, None] | gathering.targets)
    )
    rallying = rally(view, workable)
    members = member_steps(view, plan, sharing)
    gardening = garden(view, keep_clear)
    explore = explore_moves(state, num_agents)

    goals = Goals(num_agents, env.config.num_mobs)
    first_request, shelter = sharing.first_request, resting.shelter
    options = [
        ("unable", ~able, goals.act(C.NOOP)),
        ("fight", fights.facing_hostile, goals.act(C.DO)),
        ("revive", revival.reviving, goals.to_point(revival.point, C.DO)),
        ("help", helps.helping, goals.to_mobs(helps.target, C.DO)),
        ("face_zombie", fights.zombie_beside, goals.act(C.MOVE_LEFT + fights.zombie_direction)),
        ("sleep", resting.sleep_now, goals.act(C.SLEEP)),
        ("seek_shelter", resting.seek_shelter, goals.to_point(shelter, C.SLEEP)),
        ("give", sharing.giving, goals.act(sharing.give_action)),
        ("request_share", members.ask_share, goals.act(first_request + members.missing_request)),
        ("smith", members.smith_here, goals.act(members.action)),
        ("build", plan.meeting, goals.to_point(members.place, members.action)),
        ("request_drink", drinking.ask, goals.act(first_request + DRINK_REQUEST)),
        ("drink_urgently", drinking.urgently, goals.to_materials(WATER, C.DO)),
        ("request_food", eating.ask, goals.act(first_request + FOOD_REQUEST)),
        (
            "eat_urgently",
            eating.urgently,
            goals.to_mobs(eating.cows, C.DO, materials=RIPE_PLANTS),
        ),
        ("rest", resting.night_rest & resting.by_shelter, goals.act(C.SLEEP)),
        ("go_rest", resting.night_rest, goals.to_point(shelter, C.SLEEP)),
        ("clear_site", members.clearing, goals.to_point(members.clear, C.DO)),
        (
            "rally",
            rallying.participants,
            goals.to_point(rallying.tile, jnp.where(rallying.doing, C.DO, C.NOOP)),
        ),
        ("drink", drinking.go, goals.to_materials(WATER, C.DO)),
        ("eat", eating.go, goals.to_mobs(eating.cows, C.DO, materials=RIPE_PLANTS)),
        ("make", progression.making, goals.act(progression.make_action)),
        ("place_table", progression.place_table, goals.act(C.PLACE_TABLE)),
        ("place_furnace", progression.place_furnace, goals.act(C.PLACE_FURNACE)),
        ("arrange", progression.arrange, goals.act(make_room_for_furnace(state))),
        (
            "go_to_table",
            progression.go_to_table,
            goals.to_materials(TABLES, C.NOOP, skip_tasks=False),
        ),
        ("gather", gathering.gathering, goals.to_materials(gathering.targets, C.DO)),
        (
            "plant",
            gardening.plant | gardening.collect_sapling,
            goals.act(jnp.where(gardening.plant, C.PLACE_PLANT, C.DO)),
        ),
        ("seek_task", rallying.seeking, goals.to_point(rallying.seek_tile, C.NOOP)),
        ("explore", jnp.ones((num_agents,), bool), goals.act(explore)),
    ]
    assert tuple(name for name, _, _ in options) == BEHAVIOURS
    goal, behaviour = first_applicable([(applies, goal) for _, applies, goal in options])

    # Materials each agent mines through on its way (never a coordination tile).
    tunnels = jnp.asarray(MINED)[None, :] & view.has_tool & (view.chance >= 1.0)
    detour = jax.random.uniform(key, (num_agents,)) < DETOUR_PROBABILITY
    walked = walk(env.config, state, goal, tunnels, explore, detour)
    actions = jnp.where(goal.walk, walked, goal.action)
    return jnp.where(able, actions, C.NOOP).astype(jnp.int32), behaviour


def team_policy(env: CraftEnv) -> Callable:
    """The scripted coordinating team (see the package docstring)."""

    def policy(key: jax.Array, state: CraftState, params: CraftParams) -> jax.Array:
        return team_actions(env, key, state, params)[0]

    return policy
