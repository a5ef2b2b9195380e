"""The scripted coordinating team of the Craft world (`POLICIES["team"]`).

A reference team without memory: every step each agent reads the whole state and takes
the first behaviour of a priority list that applies to it (`BEHAVIOURS`, decided for
all agents at once; jittable and vmappable). Roles follow the specialisation rules: the
miner makes the pickaxes and mines stone, coal, iron and diamonds (tunnelling through
stone), the warrior makes swords and fights, the forager drinks and hunts for the team.

1. Danger and teammates: fight the zombie or skeleton faced; the nearest able agent
   walks to a downed teammate and revives it (DO); the nearest other agent joins one
   beside an elite, which takes full damage only from two hitters on one step.
2. Sleep when tired (beside the shelter when it is near; the wounded walk to it); give
   a teammate what it requests when the giver can spare it.
3. Construction: shelter, then forge, then beacon on the sites (the shelter on the site
   needing most builders, the iron buildings on those needing fewest; the miner clears
   a stone beside a site that lacks room), and once a forge stands, diamond swords.
   Builders and smiths are picked warrior, forager, then miner: the miner's ore reaches
   them by request and give from wherever it mines. Once the team holds a project's
   materials the members request what they lack, meet at the site while their health
   holds, and act on one step (sync, smiths) or one after the other (handover).
4. Drink and food: the forager keeps its drink high as the team's supply and hunts (it
   eats cows in full); the others request drink and food and fetch their own only
   when nobody can spare any. Only the nearly spent put this before projects and rallies.
5. At night the team sleeps beside its shelter.
6. Task rallies: the cheapest coordination tile near the agents free of the above that
   the agents it needs (the quorum k of a sync, two for a handover) reach and can work
   with a fair chance of passing their role checks; they take its free sides and do DO
   on one step (sync), or one starts and another finishes (handover; the agent likelier
   to fail its role check starts, since it may retry until it passes).
7. Crafter progression and gathering: pickaxes, a table and a furnace (placed where a
   furnace can join the table), swords; each agent fetches the nearest resource of its
   most pressing need (first tools, the current project, the iron pickaxe, later
   projects, some wood), leaving task tiles to rallies; the forager plants saplings;
   agents with nothing to do walk to the task tile they could work together, or explore.

Navigation: a distance field over the whole map per agent, relaxed from the tiles beside
its targets (a tunnel costs a DO and a step; lava, water and teammates block); the agent
steps down it, turns to the target and acts. Rallies weigh walking distances within a
window around each agent.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from alemlite.envs.craft import constants as C
from alemlite.envs.craft.config import CraftConfig, CraftParams
from alemlite.envs.craft.coordination import construction, trading
from alemlite.envs.craft.coordination.tasks import quorum, task_kind
from alemlite.envs.craft.env import CraftEnv
from alemlite.envs.craft.world.gathering import facing_target, melee_damage, mob_at, near_stations
from alemlite.envs.craft.world.mobs import daylight
from alemlite.envs.craft.world.observation import teammates
from alemlite.envs.craft.world.state import CraftState
from alemlite.envs.craft.world.tiles import read_tiles

# Rallies look at the (2 * RALLY_RADIUS + 1)^2 tiles around each agent; a shelter twice
# this far (Chebyshev) is still worth walking to for sleep.
RALLY_RADIUS = 8
FAR = 1 << 20  # distance of an unreachable tile
TUNNEL_COST = 2  # mine the tile, then step into it
EXPLORE_PERIOD = 16  # steps an exploring agent keeps its direction
DETOUR_PROBABILITY = 0.05  # a random step now and then breaks standoffs between agents

# Survival thresholds on the 0..9 stats. The forager keeps its drink high as the team's
# supply; the others ask teammates for drink and food first and fetch for themselves
# only when low (the miner, whose work is far from water and cows, when lower still).
ASK_DRINK = 4
THIRSTY = 3
FORAGER_THIRSTY = 7
ASK_FOOD = 4
HUNGRY = 4
MINER_HUNGRY = 2
SLEEPY = 2
# At or below this, food or drink comes before projects and rallies (the forager's drink
# below FORAGER_URGENT, its stock for the team).
URGENT = 1
FORAGER_URGENT = 6
NIGHT = 0.35  # daylight below which the team sleeps beside its shelter
WOUNDED = 3  # health at which an agent rests beside the shelter
HOLDS = 5  # health above which a member stays at a meeting though hungry or thirsty
HELP_RADIUS = 12  # an agent this close (L1) comes to hit an elite next to a teammate
KEEP_STAT = 6  # a giver keeps this much food or drink (more than any asker has)
# A cow feeds the forager in full and anyone else by half: the forager is the team's
# hunter, eats while below FORAGER_HUNTS and shares all but FORAGER_KEEPS_FOOD.
FORAGER_HUNTS = 6
FORAGER_KEEPS_FOOD = 3
WELL_ENOUGH = 0.5  # an agent whose role check passes this often does the work itself

# Task rallies: the participants' walking distances to a free side of the tile, plus a
# penalty for each one that may fail its role check; a sync is tried only when all of
# its participants pass their role checks together at least this often.
ROLE_PENALTY = 6
MIN_SYNC_SUCCESS = 0.3
# Builders and smiths: warrior, forager, then miner, who gives its ore from afar (gives
# reach any distance) rather than walk back from the mines.
ROLE_PREFERENCE = np.array([0, 1, 2])  # rank of warrior, forager, miner
TABLE_REACH = 10  # walk to a table this close (L1) rather than place a new one
BASE_WOOD = 3  # wood every agent keeps at hand once nothing else is needed

# Gathered resources: inventory item and the material that yields it.
GATHER_ITEMS = np.array([C.INV_WOOD, C.INV_STONE, C.INV_COAL, C.INV_IRON, C.INV_DIAMOND])
GATHER_MATERIALS = np.array([C.TREE, C.STONE, C.COAL, C.IRON, C.DIAMOND])
MINED = C.material_set(C.STONE, C.COAL, C.IRON, C.DIAMOND)
# Diamonds are too rare to leave a soft-sync tile to the team: the miner works one alone
# (a solo DO collects with probability 1 - alpha).
SOLO_MATERIALS = C.material_set(C.DIAMOND)
# Request index of each inventory item (-1: not requestable).
ITEM_REQUEST = np.full(C.NUM_ITEMS, -1, dtype=np.int32)
for _request, _item in enumerate(C.REQUEST_ITEM):
    if _item >= 0:
        ITEM_REQUEST[_item] = _request
FOOD_REQUEST, DRINK_REQUEST = C.REQUEST_RESOURCES.index("food"), C.REQUEST_RESOURCES.index("drink")

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

_SPAN = np.arange(-RALLY_RADIUS, RALLY_RADIUS + 1)
WINDOW_OFFSETS = np.stack(np.meshgrid(_SPAN, _SPAN, indexing="ij"), axis=-1)  # (W, W, 2)


class Goal(NamedTuple):
    """Each agent's choice: an action now, or a walk to target tiles and an action there."""

    walk: jax.Array  # (P,) bool: walk until facing a target, then act
    action: jax.Array  # (P,) int32: the action now, or once facing a target
    materials: jax.Array  # (P, M) bool: target tiles by material
    skip_tasks: jax.Array  # (P,) bool: material targets leave coordination tiles alone
    # (but for soft syncs of SOLO_MATERIALS)
    point: jax.Array  # (P, 2) int32: a target tile
    has_point: jax.Array  # (P,) bool
    mobs: jax.Array  # (P, N) bool: target mobs by slot


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


def _neighbour(grid: jax.Array, d_row: int, d_col: int, fill) -> jax.Array:
    """`grid` `(B, H, W)` read one tile away in direction `(d_row, d_col)`, `fill` outside."""
    padded = jnp.pad(grid, ((0, 0), (1, 1), (1, 1)), constant_values=fill)
    height, width = grid.shape[1:]
    return padded[:, 1 + d_row : 1 + d_row + height, 1 + d_col : 1 + d_col + width]


def _over_neighbours(combine: Callable, grid: jax.Array, fill) -> jax.Array:
    """`combine` of the four neighbours of every tile of `grid` `(B, H, W)`."""
    return functools.reduce(
        combine, [_neighbour(grid, int(r), int(c), fill) for r, c in C.DIRECTIONS]
    )


def _any_neighbour(grid: jax.Array) -> jax.Array:
    return _over_neighbours(jnp.logical_or, grid, False)


def _relax(cost: jax.Array, distance: jax.Array, iterations: int) -> jax.Array:
    """Shortest distances (up to `iterations` tiles away) to the seeded tiles `(B, H, W)`;
    entering a tile costs `cost` (FAR: never)."""
    passable = cost < FAR

    def body(_, distance):
        entering = jnp.minimum(distance + cost, FAR)
        best = _over_neighbours(jnp.minimum, entering, FAR)
        return jnp.where(passable, jnp.minimum(distance, best), FAR)

    return jax.lax.fori_loop(0, iterations, body, distance)


def _window(state: CraftState) -> tuple[jax.Array, jax.Array]:
    """Tiles `(P, W, W, 2)` of the rally window around each agent and their materials."""
    cells = state.agents.position[:, None, None, :] + jnp.asarray(WINDOW_OFFSETS)[None]
    return cells, read_tiles(state.map, cells)


def _walking_reach(config: CraftConfig, state: CraftState) -> jax.Array:
    """`(P, S, S)` walking steps from each agent to every tile next to its window's
    walkable tiles it can reach (FAR elsewhere): the cost of reaching a tile to face it."""
    cells, material = _window(state)
    walkable = jnp.asarray(C.WALKABLE)[material]
    cost = jnp.where(walkable, 1, FAR)
    seed = jnp.full(cost.shape, FAR).at[:, RALLY_RADIUS, RALLY_RADIUS].set(0)
    steps = _relax(cost.at[:, RALLY_RADIUS, RALLY_RADIUS].set(1), seed, 2 * RALLY_RADIUS)
    # Facing a tile: one of its sides reached, plus a turn.
    side = _over_neighbours(jnp.minimum, steps, FAR)
    size, num_agents = config.map_size, cells.shape[0]
    rows = jnp.where(jnp.all((cells >= 0) & (cells < size), axis=-1), cells[..., 0], size)
    agent = jnp.broadcast_to(jnp.arange(num_agents)[:, None, None], rows.shape)
    reach = jnp.full((num_agents, size, size), FAR)
    return reach.at[agent, rows, cells[..., 1]].min(side + 1, mode="drop")


def _avoided_tasks(state: CraftState) -> jax.Array:
    """`(S, S)` bool: task tiles an agent gathering alone leaves to the team."""
    byte = state.coordination.tile_task
    solo = (task_kind(byte) == C.TASK_SOFT_SYNC) & jnp.asarray(SOLO_MATERIALS)[state.map]
    return (byte > 0) & ~solo


def _scatter(num_agents: int, size: int, position: jax.Array, value: jax.Array) -> jax.Array:
    """`(P, S, S)` bool grids with `value` `(P, K)` set at the `(K, 2)` positions."""
    agent = jnp.broadcast_to(jnp.arange(num_agents)[:, None], value.shape)
    rows = jnp.broadcast_to(position[None, :, 0], value.shape)
    cols = jnp.broadcast_to(position[None, :, 1], value.shape)
    grid = jnp.zeros((num_agents, size, size), bool)
    return grid.at[agent, rows, cols].max(value, mode="drop")


def _walk(
    config: CraftConfig,
    state: CraftState,
    goal: Goal,
    tunnels: jax.Array,
    explore: jax.Array,
    detour: jax.Array,
) -> jax.Array:
    """Actions `(P,)` that bring each agent to face one of its targets, then `goal.action`.

    A distance field over the whole map per agent, from the tiles beside its targets.
    `tunnels` `(P, M)`: materials the agent mines through; `explore` `(P,)` the move of
    an agent with no route; `detour` `(P,)` bool: a random step instead of the route.
    """
    num_agents, size = config.num_agents, config.map_size
    agents, mobs = state.agents, state.mobs
    material = state.map.astype(jnp.int32)
    task = state.coordination.tile_task > 0
    avoided = _avoided_tasks(state)
    targets = jnp.take(goal.materials, material, axis=1)
    targets &= ~(goal.skip_tasks[:, None, None] & avoided[None])
    grid = jnp.arange(size)
    targets |= (
        (grid[None, :, None] == goal.point[:, 0, None, None])
        & (grid[None, None, :] == goal.point[:, 1, None, None])
        & goal.has_point[:, None, None]
    )
    targets |= _scatter(num_agents, size, mobs.position, goal.mobs & mobs.alive[None, :])
    any_mob = _scatter(
        num_agents, size, mobs.position, jnp.broadcast_to(mobs.alive, goal.mobs.shape)
    )

    tunnel = jnp.take(tunnels, material, axis=1) & ~task[None]
    walkable = jnp.asarray(C.WALKABLE)[material][None]
    cost = jnp.where(walkable, 1, jnp.where(tunnel, TUNNEL_COST, FAR))
    others = (agents.status != C.DEAD)[None, :] & ~jnp.eye(num_agents, dtype=bool)
    cost = jnp.where(_scatter(num_agents, size, agents.position, others), FAR, cost)
    agent = jnp.arange(num_agents)
    row, col = agents.position[:, 0], agents.position[:, 1]
    cost = cost.at[agent, row, col].set(1)
    goal_tiles = (cost < FAR) & _any_neighbour(targets)
    distance = _relax(cost, jnp.where(goal_tiles, 0, FAR), 2 * size)
    entering = jnp.minimum(distance + cost, FAR)

    steps = jnp.asarray(C.DIRECTIONS)
    around_rows = jnp.clip(row[:, None] + steps[None, :, 0], 0, size - 1)
    around_cols = jnp.clip(col[:, None] + steps[None, :, 1], 0, size - 1)
    inside = (row[:, None] + steps[None, :, 0] == around_rows) & (
        col[:, None] + steps[None, :, 1] == around_cols
    )

    def around(grid, fill):
        return jnp.where(inside, grid[agent[:, None], around_rows, around_cols], fill)

    ways = around(entering, FAR)  # (P, 4), left, right, up, down
    best = jnp.argmin(ways, axis=1)
    has_route = jnp.min(ways, axis=1) < FAR
    target_around = around(targets, False)
    facing = agents.facing
    facing_goal = jnp.take_along_axis(target_around, facing[:, None], 1)[:, 0]
    arrived = goal_tiles[agent, row, col]
    turn = C.MOVE_LEFT + jnp.argmax(target_around, axis=1)
    # A tunnel tile or a mob in the way: face it, then DO.
    in_the_way = around(tunnel | any_mob, False)
    clear = jnp.where(
        (facing == best) & jnp.take_along_axis(in_the_way, best[:, None], 1)[:, 0],
        C.DO,
        C.MOVE_LEFT + best,
    )
    route = jnp.where(has_route & ~detour, clear, explore)
    return jnp.where(facing_goal, goal.action, jnp.where(arrived, turn, route)).astype(jnp.int32)


class _Goals:
    """Builders of `Goal`s for P agents and N mob slots."""

    def __init__(self, num_agents: int, num_mobs: int):
        self.num_agents, self.num_mobs = num_agents, num_mobs

    def _make(self, walk, action, materials=None, skip_tasks=False, point=None, mobs=None):
        agents = self.num_agents
        no_materials = jnp.zeros((agents, C.NUM_MATERIALS), bool)
        return Goal(
            walk=jnp.broadcast_to(jnp.asarray(walk), (agents,)),
            action=jnp.broadcast_to(jnp.asarray(action, jnp.int32), (agents,)),
            materials=no_materials
            if materials is None
            else jnp.broadcast_to(jnp.asarray(materials), (agents, C.NUM_MATERIALS)),
            skip_tasks=jnp.broadcast_to(jnp.asarray(skip_tasks), (agents,)),
            point=jnp.zeros((agents, 2), jnp.int32)
            if point is None
            else jnp.broadcast_to(jnp.asarray(point, jnp.int32), (agents, 2)),
            has_point=jnp.full((agents,), point is not None),
            mobs=jnp.zeros((agents, self.num_mobs), bool)
            if mobs is None
            else jnp.broadcast_to(mobs, (agents, self.num_mobs)),
        )

    def act(self, action) -> Goal:
        return self._make(False, action)

    def to_materials(self, materials, action, skip_tasks=True) -> Goal:
        return self._make(True, action, materials=materials, skip_tasks=skip_tasks)

    def to_point(self, point, action) -> Goal:
        return self._make(True, action, point=point)

    def to_mobs(self, mobs, action, materials=None) -> Goal:
        return self._make(True, action, materials=materials, mobs=mobs)


def _first_applicable(options: list[tuple[jax.Array, Goal]]) -> tuple[Goal, jax.Array]:
    """Per agent the first option that applies (the last one always should)."""
    goal, chosen = options[-1][1], jnp.full(options[-1][0].shape, len(options) - 1)
    for index in range(len(options) - 2, -1, -1):
        applies, option = options[index]

        def pick(new, old, applies=applies):
            return jnp.where(applies.reshape(applies.shape + (1,) * (new.ndim - 1)), new, old)

        goal = jax.tree.map(pick, option, goal)
        chosen = jnp.where(applies, index, chosen)
    return goal, chosen


def _role_chance(config: CraftConfig, state: CraftState, params: CraftParams, needed) -> jax.Array:
    """`(P, K)` probability that each agent passes the role check of activities needing
    roles `needed` `(K,)` (-1: none)."""
    num_agents = config.num_agents
    needed = jnp.asarray(needed)
    if not config.has_specialisation:
        return jnp.ones((num_agents, needed.shape[0]))
    role = jnp.arange(num_agents) % C.NUM_ROLES
    specialist = (needed[None, :] < 0) | (needed[None, :] == role[:, None])
    other = jnp.where(params.hard_specialisation, 0.0, 1.0 - state.coordination.alpha)
    return jnp.where(specialist, 1.0, other)


def _preference_rank(config: CraftConfig, eligible: jax.Array, first: jax.Array) -> jax.Array:
    """`(P,)` rank of each agent as builder or smith: `first` (-1: none) leads, then roles
    by ROLE_PREFERENCE, then index; ineligible agents come last. A fixed order, so that
    the members (and the shares they keep) stay the same from step to step."""
    num_agents = config.num_agents
    agent = jnp.arange(num_agents)
    key = jnp.asarray(ROLE_PREFERENCE)[agent % C.NUM_ROLES] * num_agents + agent
    key = jnp.where(agent == first, -1, key) + jnp.where(eligible, 0, 10 * num_agents)
    return jnp.argsort(jnp.argsort(key))


def _building_project(
    config: CraftConfig, state: CraftState, params: CraftParams, standing: jax.Array
) -> Project:
    """The next building: a started handover first, else shelter, forge, beacon in turn."""
    num_agents = config.num_agents
    agents, coordination = state.agents, state.coordination
    sites = coordination.sites
    slots = sites.task.shape[0]
    position = sites.position.astype(jnp.int32)
    handover = task_kind(sites.task) == C.TASK_HANDOVER
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
    built = jnp.any(sites.building[:, None] == jnp.arange(C.NUM_BUILDINGS)[None], axis=0)
    started = usable & (sites.pending >= 0)

    # The shelter takes the site needing most builders, iron buildings those needing fewest.
    slot = jnp.arange(slots)
    fewest_first = jnp.where(jnp.arange(C.NUM_BUILDINGS) == C.SHELTER_KIND, -1, 1)
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
    rank = _preference_rank(config, agents.status != C.DEAD, starter)
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
    later = open_kind & (jnp.arange(C.NUM_BUILDINGS) != building)
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


def _sword_project(config: CraftConfig, state: CraftState, standing: jax.Array) -> Project:
    """Diamond swords: two smiths, each with 1 wood + 1 diamond, beside the forge together."""
    agents, sites = state.agents, state.coordination.sites
    forge = sites.building == C.FORGE_KIND
    place = sites.position[jnp.argmax(forge)].astype(jnp.int32)
    rank = _preference_rank(config, standing, jnp.int32(-1))
    members = (rank < C.DIAMOND_SWORD_SMITHS) & (config.num_agents >= C.DIAMOND_SWORD_SMITHS)
    share = jnp.asarray(C.DIAMOND_SWORD_SHARE)
    held = jnp.sum(agents.inventory * standing[:, None], axis=0)
    assembling = jnp.any(forge) & jnp.all(held >= C.DIAMOND_SWORD_SMITHS * share)
    near = jnp.max(jnp.abs(agents.position - place[None, :]), axis=1) <= 1
    affords = jnp.all(agents.inventory >= share[None, :], axis=1)
    ready = near & affords & standing & ~agents.sleeping
    acting = members & jnp.all(ready | ~members) & assembling
    swords_left = ~jnp.all(state.coordination.diamond_sword | ~members)
    return Project(
        assembling=assembling,
        members=members,
        place=place,
        share=share,
        payers=members,
        acting=acting,
        action=jnp.int32(construction.first_build(config) + C.NUM_BUILDINGS),
        wanted=jnp.where(swords_left, C.DIAMOND_SWORD_SMITHS * share, 0).astype(jnp.int32),
        later=jnp.zeros_like(share),
        clearing=jnp.bool_(False),
        clear=place,
    )


def _rally(
    config: CraftConfig, state: CraftState, workable: jax.Array, chance: jax.Array
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """The task tile the team works next and its participants, among the agents that may
    work each material `workable` `(P, M)`.

    Returns the tile `(2,)`, participants `(P,)` (none when no tile qualifies) and
    whether each participant may DO now `(P,)`.
    """
    num_agents, size = config.num_agents, config.map_size
    coordination = state.coordination
    byte = coordination.tile_task
    kind = task_kind(byte)
    material = state.map.astype(jnp.int32)
    handover = kind == C.TASK_HANDOVER
    needed = jnp.where(handover, 2, quorum(byte, coordination.alpha, num_agents))
    walkable = jnp.asarray(C.WALKABLE)[material][None]
    sides = _over_neighbours(jnp.add, walkable.astype(jnp.int32), 0)[0]
    open_task = (kind != C.TASK_NONE) & (sides >= needed) & (needed <= num_agents)

    reach = _walking_reach(config, state)  # (P, S, S)
    pass_chance = jnp.take(chance, material, axis=1)  # (P, S, S)
    usable = jnp.take(workable, material, axis=1) & (pass_chance > 0) & (reach < FAR)
    cost = jnp.where(usable, reach + ROLE_PENALTY * (1.0 - pass_chance), jnp.inf)
    order = jnp.argsort(cost, axis=0)
    sorted_cost = jnp.take_along_axis(cost, order, axis=0)
    sorted_chance = jnp.take_along_axis(pass_chance, order, axis=0)
    last = (needed - 1)[None]
    total = jnp.take_along_axis(jnp.cumsum(sorted_cost, axis=0), last, axis=0)[0]
    together = jnp.take_along_axis(jnp.cumprod(sorted_chance, axis=0), last, axis=0)[0]
    # A handover's finisher is the likelier of the two (the other starts and retries).
    finisher_chance = jnp.maximum(sorted_chance[0], sorted_chance[jnp.minimum(1, num_agents - 1)])
    likely = jnp.where(handover, finisher_chance >= WELL_ENOUGH, together >= MIN_SYNC_SUCCESS)
    total = jnp.where(open_task & likely & jnp.isfinite(total), total, jnp.inf).reshape(-1)
    flat = jnp.argmin(total)
    active = jnp.isfinite(total[flat])
    tile = jnp.stack([flat // size, flat % size]).astype(jnp.int32)

    rank = jnp.argsort(order[:, tile[0], tile[1]])  # each agent's place in the order
    participants = active & (rank < needed[tile[0], tile[1]])
    facing = jnp.all(facing_target(state) == tile[None, :], axis=1)
    able = (state.agents.status == C.ALIVE) & ~state.agents.sleeping
    arrived = participants & facing & able
    all_arrived = jnp.all(arrived | ~participants)
    # Handovers: the pending one at this tile, if any, and who started it.
    pending = jnp.all(coordination.task_position.astype(jnp.int32) == tile[None, :], axis=1) & (
        coordination.task_starter >= 0
    )
    starter = jnp.where(jnp.any(pending), coordination.task_starter[jnp.argmax(pending)], -1)
    agent = jnp.arange(num_agents)
    tile_chance = chance[:, material[tile[0], tile[1]]]
    # The designated starter: the participant likelier to fail its role check.
    starter_rank = jnp.where(participants, tile_chance * num_agents + agent, jnp.inf)
    designated = agent == jnp.argmin(starter_rank)
    doing = jnp.where(
        handover[tile[0], tile[1]],
        jnp.where(starter >= 0, arrived & (agent != starter), designated & all_arrived),
        arrived & all_arrived,
    )
    return tile, participants, doing


def _sidesteps(state: CraftState) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Per agent and direction `(P, 4)`: the tile a step leads to is free to walk on, it
    is beside a table, and the free tile beyond it takes a furnace."""
    position = state.agents.position
    steps = jnp.asarray(C.DIRECTIONS)
    destination = position[:, None, :] + steps[None]  # (P, 4, 2)
    beyond = destination + steps[None]
    around = jnp.asarray(WINDOW_OFFSETS)[
        RALLY_RADIUS - 1 : RALLY_RADIUS + 2, RALLY_RADIUS - 1 : RALLY_RADIUS + 2
    ].reshape(-1, 2)
    beside_table = jnp.any(
        read_tiles(state.map, destination[:, :, None, :] + around[None, None]) == C.TABLE, -1
    )
    occupied = jnp.concatenate([state.agents.position, state.mobs.position])
    alive = jnp.concatenate([state.agents.status != C.DEAD, state.mobs.alive])

    def free(tiles):
        taken = jnp.all(tiles[:, :, None, :] == occupied[None, None], -1) & alive[None, None]
        return ~jnp.any(taken, -1)

    walkable = jnp.asarray(C.WALKABLE)[read_tiles(state.map, destination)] & free(destination)
    furnace_fits = jnp.asarray(C.PLACE_WHERE)[C.PLACE_FURNACE - C.PLACE_STONE]
    fits = furnace_fits[read_tiles(state.map, beyond)] & free(beyond)
    return walkable, beside_table, fits


def _room_for_workshop(state: CraftState) -> jax.Array:
    """`(P,)` bool: with a table placed ahead, a sideways step keeps it beside the table
    and leaves it facing a free tile for a furnace (a step is the only way to turn toward
    a walkable tile)."""
    walkable, _, fits = _sidesteps(state)
    facing = state.agents.facing
    sideways = (jnp.arange(4)[None, :] // 2) != (facing[:, None] // 2)
    return jnp.any(walkable & fits & sideways, axis=1)


def _make_room_for_furnace(state: CraftState) -> jax.Array:
    """`(P,)` action for an agent beside a table that faces no tile a furnace fits on: a
    step that keeps it beside the table and leaves it facing a free tile that takes one,
    else mine a stone beside it (it leaves path, which takes one; never a task tile,
    which a lone DO does not mine)."""
    walkable, beside_table, fits = _sidesteps(state)
    score = (walkable & beside_table) * (1 + fits)
    destination = state.agents.position[:, None, :] + jnp.asarray(C.DIRECTIONS)[None]
    clipped = jnp.clip(destination, 0, state.map.shape[0] - 1)
    task = state.coordination.tile_task[clipped[..., 0], clipped[..., 1]] > 0
    stone = (read_tiles(state.map, destination) == C.STONE) & ~task
    facing_stone = jnp.take_along_axis(stone, state.agents.facing[:, None], 1)[:, 0]
    return jnp.where(
        jnp.any(score > 0, axis=1),
        C.MOVE_LEFT + jnp.argmax(score, axis=1),
        jnp.where(facing_stone, C.DO, C.MOVE_LEFT + jnp.argmax(stone, axis=1)),
    )


def _task_to_seek(
    config: CraftConfig, state: CraftState, workable: jax.Array, chance: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """The task tile nearest (L1) to the free agents' centre that enough of them could
    work (`workable` `(P, M)`), each passing its role check at least WELL_ENOUGH; `(2,)`
    and who walks there."""
    num_agents, size = config.num_agents, config.map_size
    byte = state.coordination.tile_task
    kind = task_kind(byte)
    material = state.map.astype(jnp.int32)
    needed = jnp.where(
        kind == C.TASK_HANDOVER, 2, quorum(byte, state.coordination.alpha, num_agents)
    )
    workers = workable & (chance >= WELL_ENOUGH)  # (P, M)
    free = jnp.any(workers, axis=1)
    enough = jnp.sum(workers, axis=0)[material] >= needed
    centre = jnp.sum(state.agents.position * free[:, None], axis=0) // jnp.maximum(jnp.sum(free), 1)
    grid = jnp.arange(size)
    distance = jnp.abs(grid - centre[0])[:, None] + jnp.abs(grid - centre[1])[None, :]
    distance = jnp.where((kind != C.TASK_NONE) & enough, distance, FAR).reshape(-1)
    flat = jnp.argmin(distance)
    tile = jnp.stack([flat // size, flat % size]).astype(jnp.int32)
    seeking = free & workers[:, material[tile[0], tile[1]]] & (distance[flat] < FAR)
    return tile, seeking


def team_actions(
    env: CraftEnv, key: jax.Array, state: CraftState, params: CraftParams
) -> tuple[jax.Array, jax.Array]:
    """The team's actions `(P,)` and each agent's behaviour (index into BEHAVIOURS)."""
    config = env.config
    num_agents, num_mobs = config.num_agents, config.num_mobs
    goals = _Goals(num_agents, num_mobs)
    agents, coordination, mobs = state.agents, state.coordination, state.mobs
    agent = jnp.arange(num_agents)
    role = agent % C.NUM_ROLES
    inventory, stats, position = agents.inventory, agents.stats, agents.position
    standing = agents.status == C.ALIVE
    able = standing & ~agents.sleeping
    mask = env.action_mask(state, params)
    kinds = jnp.asarray(config.mob_kinds())
    elite = coordination.mob_elite if config.has_elites else jnp.zeros((num_mobs,), jnp.int8)
    facing = facing_target(state)
    facing_material = read_tiles(state.map, facing)
    facing_mobs = mob_at(state, facing)
    chance = _role_chance(config, state, params, C.MATERIAL_ROLE)  # (P, M)
    tool = jnp.asarray(C.COLLECT_TOOL)
    has_tool = (tool[None, :] < 0) | (inventory[:, jnp.maximum(tool, 0)] > 0)
    food, drink, energy = stats[:, C.FOOD], stats[:, C.DRINK], stats[:, C.ENERGY]
    forager = role == C.FORAGER
    miner = role == C.MINER

    # ---- revive: the nearest able teammate walks to each downed agent -------------------
    gap = jnp.sum(jnp.abs(position[:, None, :] - position[None, :, :]), axis=-1)
    helper = jnp.where(able[:, None] & ~jnp.eye(num_agents, dtype=bool), gap, FAR)
    downed = agents.status == C.DOWNED
    assigned = downed[None, :] & (jnp.argmin(helper, axis=0)[None, :] == agent[:, None])
    assigned &= helper < FAR
    reviving = jnp.any(assigned, axis=1)
    revive_point = position[jnp.argmax(assigned, axis=1)]

    # ---- fights ---------------------------------------------------------------------------
    hostile = (kinds == C.ZOMBIE) | (kinds == C.SKELETON)
    facing_hostile = jnp.any(facing_mobs & hostile[None, :], axis=1)
    offset = mobs.position[None, :, :] - position[:, None, :]  # (P, N, 2)
    beside = (
        (jnp.sum(jnp.abs(offset), -1) == 1) & mobs.alive[None, :] & (kinds == C.ZOMBIE)[None, :]
    )
    direction = jnp.argmax(
        jnp.all(offset[:, :, None, :] == jnp.asarray(C.DIRECTIONS)[None, None], -1), -1
    )
    zombie_direction = jnp.take_along_axis(direction, jnp.argmax(beside, 1)[:, None], 1)[:, 0]
    # An elite next to an agent takes damage only (or fully) from two hitters on one step:
    # the nearest other able agent comes to hit it too.
    mob_gap = jnp.sum(jnp.abs(offset), axis=-1)  # (P, N)
    pressing = hostile & (elite != C.ELITE_NONE) & mobs.alive & jnp.any(mob_gap <= 1, axis=0)
    helper_gap = jnp.where(able[:, None] & (mob_gap > 1), mob_gap, FAR)
    helps = pressing[None, :] & (jnp.argmin(helper_gap, axis=0)[None, :] == agent[:, None])
    helps &= helper_gap <= HELP_RADIUS
    helping = jnp.any(helps, axis=1)
    help_target = jax.nn.one_hot(jnp.argmax(helps, axis=1), num_mobs, dtype=bool)

    # Agents with urgent needs of their own: they sleep, drink or eat before anything else.
    hunt_below = jnp.select([miner, forager], [MINER_HUNGRY, FORAGER_HUNTS], HUNGRY)
    dry = drink <= jnp.where(forager, FORAGER_URGENT, URGENT)
    starving = food <= URGENT
    # A meeting at a site takes a few dozen steps: members go on with it hungry or
    # thirsty while their health holds.
    own_needs = ~able | (energy <= SLEEPY) | ((dry | starving) & (stats[:, C.HEALTH] <= HOLDS))

    # ---- projects: the next building and diamond swords -----------------------------------
    items = C.NUM_ITEMS
    if config.has_construction:
        building = _building_project(config, state, params, standing)
        swords = _sword_project(config, state, standing)
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
        forge_built = jnp.any(coordination.sites.building == C.FORGE_KIND)
        current_stock = jnp.where(forge_built, swords.wanted, building.wanted)
        later_stock = building.later + jnp.where(forge_built, building.wanted, swords.wanted)
    else:
        member = meeting = jnp.zeros((num_agents,), bool)
        reserve = jnp.zeros((num_agents, items), jnp.int32)
        current_stock = later_stock = jnp.zeros((items,), jnp.int32)
    held = jnp.sum(inventory * standing[:, None], axis=0)

    # ---- trading: what each agent can spare, gives and the resource it would request ------
    request_item = jnp.asarray(C.REQUEST_ITEM)
    spare_items = (inventory - reserve)[:, jnp.maximum(request_item, 0)]
    keep = jnp.where(
        forager[:, None] & (jnp.arange(C.NUM_REQUEST_RESOURCES) == FOOD_REQUEST)[None, :],
        FORAGER_KEEPS_FOOD,
        KEEP_STAT,
    )
    spare_stats = stats[:, jnp.maximum(jnp.asarray(C.REQUEST_STAT), 0)] - keep
    spare = jnp.where(request_item[None, :] >= 0, spare_items, spare_stats)
    spare = jnp.where(able[:, None], spare, 0)  # sleepers cannot give
    # Spare of any teammate, per agent and resource.
    others = ~jnp.eye(num_agents, dtype=bool)
    teammate_spare = jnp.any(others[:, :, None] & (spare[None, :, :] > 0), axis=1)
    own_request = coordination.request_item.astype(jnp.int32)
    if config.has_trading and num_agents > 1:
        mates = jnp.asarray(teammates(num_agents))
        wanted = own_request[mates]  # (P, P-1)
        spare_of_wanted = jnp.take_along_axis(spare, jnp.maximum(wanted, 0), axis=1)
        can_give = trading.give_valid(config, state, params) & (spare_of_wanted > 0)
        giving = jnp.any(can_give, axis=1)
        give_action = trading.first_give(config) + jnp.argmax(can_give, axis=1)
        first_request = trading.first_request(config)
    else:
        giving = jnp.zeros((num_agents,), bool)
        give_action = jnp.zeros((num_agents,), jnp.int32)
        first_request = 0

    def may_request(resource):
        """Request `resource` `(P,)`: trading is on, a teammate can spare it, and the
        agent's open request is another one."""
        if not config.has_trading or num_agents == 1:
            return jnp.zeros((num_agents,), bool)
        offered = jnp.take_along_axis(teammate_spare, jnp.maximum(resource, 0)[:, None], 1)[:, 0]
        return (resource >= 0) & offered & (own_request != resource)

    def open_request(resource):
        """The agent's open request is `resource` and a teammate can still answer it."""
        offered = jnp.take_along_axis(teammate_spare, jnp.maximum(resource, 0)[:, None], 1)[:, 0]
        return (own_request == resource) & offered & config.has_trading

    # ---- survival -------------------------------------------------------------------------
    drinks_well = chance[:, C.WATER] >= WELL_ENOUGH
    at_water = (facing_material == C.WATER) & (drink < C.STAT_MAX) & drinks_well
    drink_request = jnp.full((num_agents,), DRINK_REQUEST)
    ask_drink = ~forager & (drink <= ASK_DRINK) & ~at_water & may_request(drink_request)
    go_drink = (drink <= jnp.where(forager, FORAGER_THIRSTY, THIRSTY)) | at_water
    go_drink &= ~ask_drink & ~open_request(drink_request)
    drink_urgently = go_drink & (dry | at_water)
    # A soft large cow takes half damage from a lone hunter (none from a 1-damage hitter);
    # a hard one none: hunt what each agent can kill alone.
    strength = melee_damage(inventory) * jnp.where(role == C.WARRIOR, C.WARRIOR_DAMAGE_FACTOR, 1)
    killable = (elite[None, :] == C.ELITE_NONE) | (
        (elite[None, :] == C.ELITE_SOFT) & (strength[:, None] >= 2)
    )
    cows = (kinds == C.COW)[None, :] & mobs.alive[None, :] & killable  # (P, N)
    facing_cow = jnp.any(facing_mobs & cows, axis=1)
    ripe = jnp.any(state.map == C.RIPE_PLANT)
    food_found = jnp.any(cows, axis=1) | ripe
    hungry = (food <= hunt_below) | (facing_cow & (food < C.STAT_MAX - 1))
    food_request = jnp.full((num_agents,), FOOD_REQUEST)
    ask_food = (food <= ASK_FOOD) & ~facing_cow & may_request(food_request)
    go_eat = hungry & ~ask_food & ~open_request(food_request) & food_found
    eat_urgently = go_eat & (starving | facing_cow)
    if config.has_construction:
        sites = coordination.sites
        shelter = sites.building == C.SHELTER_KIND
        shelter_gap = jnp.max(
            jnp.abs(position[:, None, :] - sites.position.astype(jnp.int32)[None]), axis=-1
        )
        by_shelter = jnp.any(shelter[None, :] & (shelter_gap <= 1), axis=1)
        shelter_distance = jnp.min(jnp.where(shelter[None, :], shelter_gap, FAR), axis=1)
        shelter_point = sites.position[jnp.argmax(shelter)].astype(jnp.int32)
    else:
        by_shelter = jnp.zeros((num_agents,), bool)
        shelter_distance = jnp.full((num_agents,), FAR)
        shelter_point = jnp.zeros((2,), jnp.int32)
    # Beside a shelter zombies cannot hurt a sleeper. The tired sleep there when it is near
    # (else where they stand), the wounded wherever it is; at night, once a meeting at a
    # site is over, the team rests there as soon as it is a little tired.
    can_sleep = mask[:, C.SLEEP]
    near_shelter = shelter_distance <= 2 * RALLY_RADIUS
    wounded = (stats[:, C.HEALTH] <= WOUNDED) & (shelter_distance < FAR) & can_sleep
    tired = ((energy <= SLEEPY) & can_sleep) | wounded
    seek_shelter = tired & ~by_shelter & (near_shelter | wounded) & (energy > 0)
    sleep_now = tired & ~seek_shelter
    night = daylight(state.step, params.day_length) < NIGHT
    night_rest = night & (energy < C.STAT_MAX - 1) & near_shelter & can_sleep

    # ---- Crafter progression --------------------------------------------------------------
    make_actions = jnp.asarray(C.MAKE_ACTIONS)
    make_chance = _role_chance(config, state, params, C.ACTION_ROLE[np.array(C.MAKE_ACTIONS)])
    lacking_tool = inventory[:, jnp.asarray(C.MAKE_ITEM)] == 0
    is_pickaxe = jnp.asarray([True, True, True, False, False, False])
    # Pickaxes: the miner all three, others a wood pickaxe (for coal); swords: the warrior.
    wants_tool = jnp.where(
        is_pickaxe[None, :],
        miner[:, None] | (jnp.arange(6) == 0)[None, :],
        (role == C.WARRIOR)[:, None] & (jnp.arange(6) < 5)[None, :],
    )
    wants_tool &= lacking_tool & (make_chance > 0)
    free_inventory = inventory - reserve
    affordable = jnp.all(free_inventory[:, None, :] >= jnp.asarray(C.MAKE_COST)[None], axis=-1)
    make_now = mask[:, make_actions] & wants_tool & affordable
    making = jnp.any(make_now, axis=1)
    make_action = make_actions[jnp.argmax(make_now, axis=1)]
    near_table, near_furnace = near_stations(state)
    needs_furnace = jnp.asarray(C.MAKE_NEEDS_FURNACE)
    station_wanted = wants_tool & affordable & ~make_now
    wants_table = jnp.any(station_wanted, axis=1) & ~near_table
    wants_furnace = jnp.any(station_wanted & needs_furnace[None, :], axis=1) & near_table
    wants_furnace &= ~near_furnace
    grid = jnp.arange(config.map_size)
    table_distance = jnp.min(
        jnp.where(
            (state.map == C.TABLE)[None],
            jnp.abs(grid[None, :, None] - position[:, 0, None, None])
            + jnp.abs(grid[None, None, :] - position[:, 1, None, None]),
            FAR,
        ).reshape(num_agents, -1),
        axis=1,
    )
    go_to_table = wants_table & (table_distance <= TABLE_REACH)
    spare_wood = free_inventory[:, C.INV_WOOD] >= 2
    # A table for iron tools goes only where a furnace can join it.
    roomy = _room_for_workshop(state) | ~jnp.any(station_wanted & needs_furnace[None, :], 1)
    # Nothing is placed beside an unbuilt site: builders stand there.
    if config.has_construction:
        sites = coordination.sites
        unbuilt_site = (sites.task > 0) & (sites.building < 0)
        site_gap = jnp.max(jnp.abs(facing[:, None, :] - sites.position.astype(jnp.int32)), -1)
        keep_clear = jnp.any(unbuilt_site[None, :] & (site_gap <= 1), axis=1)
    else:
        keep_clear = jnp.zeros((num_agents,), bool)
    place_table = wants_table & ~go_to_table & spare_wood & mask[:, C.PLACE_TABLE] & roomy
    place_table &= ~keep_clear
    place_furnace = wants_furnace & mask[:, C.PLACE_FURNACE] & ~keep_clear
    arrange = wants_furnace & ~place_furnace & (free_inventory[:, C.INV_STONE] >= 1)

    # ---- gathering: first tools, the current project, further tools, later projects, wood --
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
    can_mine = has_tool[:, gather_materials] & (chance[:, gather_materials] >= WELL_ENOUGH)
    open_tiles = ~_avoided_tasks(state)
    exists = jnp.stack([jnp.any((state.map == m) & open_tiles) for m in GATHER_MATERIALS])
    mineable = can_mine & exists[None, :]
    own = inventory[:, gather_items]
    current_short = jnp.maximum(current_stock - held, 0)[gather_items][None, :] > 0
    later_short = jnp.maximum(current_stock + later_stock - held, 0)[gather_items][None, :] > 0
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
    first_needs = jnp.any(needs[0] & mineable, axis=1)
    fetched = (tier == best_tier[:, None]) & gathering[:, None]
    gather_targets = jnp.any(
        jax.nn.one_hot(gather_materials, C.NUM_MATERIALS, dtype=bool)[None] & fetched[..., None],
        axis=1,
    )

    # ---- task rally among the agents nothing more urgent holds ----------------------------
    # The miner's first two pickaxes come before any rally.
    early_miner = miner & (inventory[:, C.INV_STONE_PICKAXE] == 0)
    progressing = making | place_table | place_furnace | go_to_table
    progressing |= early_miner & first_needs
    committed = ~able | reviving | helping | tired | night_rest | drink_urgently | eat_urgently
    committed |= meeting | progressing
    # While it still has mining to do, the miner joins rallies only on what it fetches.
    busy_miner = miner & jnp.any((tier < len(needs) - 1) & mineable, axis=1)
    workable = (~committed)[:, None] & has_tool & (~busy_miner[:, None] | gather_targets)
    if config.has_tasks:
        rally_tile, participant, rally_do = _rally(config, state, workable, chance)
    else:
        rally_tile = jnp.zeros((2,), jnp.int32)
        participant = rally_do = jnp.zeros((num_agents,), bool)

    # Free agents with nothing else to do walk to the task tile nearest to them all that
    # they could work together; near it, the rally takes over.
    if config.has_tasks:
        seek_tile, seeking = _task_to_seek(config, state, workable, chance)
    else:
        seek_tile, seeking = jnp.zeros((2,), jnp.int32), jnp.zeros((num_agents,), bool)

    # ---- project members: request a missing share, walk to the place, act together --------
    if config.has_construction:
        lacking = (inventory < project.share[None, :]) & project.payers[:, None]
        missing = jnp.argmax(lacking, axis=1)
        missing_request = jnp.where(
            jnp.any(lacking, axis=1), jnp.asarray(ITEM_REQUEST)[missing], -1
        )
        ask_share = member & may_request(missing_request)
        project_action = jnp.where(project.acting, project.action, C.NOOP)
        near_place = jnp.max(jnp.abs(position - project.place[None, :]), axis=1) <= 1
        smith_here = meeting & sword_on & near_place
        building_place = project.place
    else:
        ask_share = smith_here = jnp.zeros((num_agents,), bool)
        missing_request = jnp.full((num_agents,), -1)
        project_action = jnp.zeros((num_agents,), jnp.int32)
        building_place = jnp.zeros((2,), jnp.int32)

    # The miner clears a stone from beside the next site when builders lack room.
    clearing = (
        miner & building.clearing & (inventory[:, C.INV_WOOD_PICKAXE] > 0)
        if config.has_construction
        else jnp.zeros((num_agents,), bool)
    )
    clear_tile = building.clear if config.has_construction else jnp.zeros((2,), jnp.int32)

    # ---- the forager's garden: saplings from grass, then planted -------------------------
    plant = forager & mask[:, C.PLACE_PLANT] & ~keep_clear
    collect_sapling = forager & (inventory[:, C.INV_SAPLING] == 0) & (facing_material == C.GRASS)

    # ---- explore: the period's direction, or the next one round that is free to walk ----
    period = jax.random.fold_in(jax.random.PRNGKey(0), state.step // EXPLORE_PERIOD)
    turns = jax.random.randint(period, (num_agents,), 0, 4)[:, None] + jnp.arange(4)[None, :]
    around = read_tiles(state.map, position[:, None, :] + jnp.asarray(C.DIRECTIONS)[turns % 4])
    open_way = jnp.asarray(C.WALKABLE)[around]
    explore = jnp.where(
        jnp.any(open_way, axis=1),
        C.MOVE_LEFT + jnp.take_along_axis(turns % 4, jnp.argmax(open_way, 1)[:, None], 1)[:, 0],
        C.NOOP,
    )

    # ---- choose -----------------------------------------------------------------------------
    water = np.asarray(C.material_set(C.WATER))
    food_tiles = np.asarray(C.material_set(C.RIPE_PLANT))
    table = np.asarray(C.material_set(C.TABLE))
    build_walk = goals.to_point(building_place, project_action)
    options = [
        ("unable", ~able, goals.act(C.NOOP)),
        ("fight", facing_hostile, goals.act(C.DO)),
        ("revive", reviving, goals.to_point(revive_point, C.DO)),
        ("help", helping, goals.to_mobs(help_target, C.DO)),
        ("face_zombie", jnp.any(beside, axis=1), goals.act(C.MOVE_LEFT + zombie_direction)),
        ("sleep", sleep_now, goals.act(C.SLEEP)),
        ("seek_shelter", seek_shelter, goals.to_point(shelter_point, C.SLEEP)),
        ("give", giving, goals.act(give_action)),
        ("request_share", ask_share, goals.act(first_request + missing_request)),
        ("smith", smith_here, goals.act(project_action)),
        ("build", meeting, build_walk),
        ("request_drink", ask_drink, goals.act(first_request + DRINK_REQUEST)),
        ("drink_urgently", drink_urgently, goals.to_materials(water, C.DO)),
        ("request_food", ask_food, goals.act(first_request + FOOD_REQUEST)),
        ("eat_urgently", eat_urgently, goals.to_mobs(cows, C.DO, materials=food_tiles)),
        ("rest", night_rest & by_shelter, goals.act(C.SLEEP)),
        ("go_rest", night_rest, goals.to_point(shelter_point, C.SLEEP)),
        ("clear_site", clearing, goals.to_point(clear_tile, C.DO)),
        ("rally", participant, goals.to_point(rally_tile, jnp.where(rally_do, C.DO, C.NOOP))),
        ("drink", go_drink, goals.to_materials(water, C.DO)),
        ("eat", go_eat, goals.to_mobs(cows, C.DO, materials=food_tiles)),
        ("make", making, goals.act(make_action)),
        ("place_table", place_table, goals.act(C.PLACE_TABLE)),
        ("place_furnace", place_furnace, goals.act(C.PLACE_FURNACE)),
        ("arrange", arrange, goals.act(_make_room_for_furnace(state))),
        ("go_to_table", go_to_table, goals.to_materials(table, C.NOOP, skip_tasks=False)),
        ("gather", gathering, goals.to_materials(gather_targets, C.DO)),
        ("plant", plant | collect_sapling, goals.act(jnp.where(plant, C.PLACE_PLANT, C.DO))),
        ("seek_task", seeking, goals.to_point(seek_tile, C.NOOP)),
        ("explore", jnp.ones((num_agents,), bool), goals.act(explore)),
    ]
    assert tuple(name for name, _, _ in options) == BEHAVIOURS
    goal, behaviour = _first_applicable([(applies, goal) for _, applies, goal in options])

    # Materials each agent mines through on its way (never a coordination tile).
    tunnels = jnp.asarray(MINED)[None, :] & has_tool & (chance >= 1.0)
    detour = jax.random.uniform(key, (num_agents,)) < DETOUR_PROBABILITY
    walked = _walk(config, state, goal, tunnels, explore, detour)
    actions = jnp.where(goal.walk, walked, goal.action)
    return jnp.where(able, actions, C.NOOP).astype(jnp.int32), behaviour


def team_policy(env: CraftEnv) -> Callable:
    """The scripted coordinating team (see the module docstring)."""

    def policy(key: jax.Array, state: CraftState, params: CraftParams) -> jax.Array:
        return team_actions(env, key, state, params)[0]

    return policy
