"""Construction sites: shelters, forges and beacons built together, and diamond swords.

Sites are a fixed number of solid SITE tiles laid near the start at generation, kept
in the site table (`SiteState`); only the table is read at a step. The actions
`build_shelter`, `build_forge`, `build_beacon` and `make_diamond_sword` follow every
other action (after the message tokens). A build acts on the unbuilt site the agent
faces; every builder pays one share of the building (`CraftParams.building_share`;
by default shelter 1 wood + 1 stone, forge 1 stone + 1 iron + 1 coal, beacon 1 coal
+ 1 iron), and a builder without its share does nothing.
- Sync site: the k agents needed (k = P with probability alpha by the site's roll,
  else 2, at most P) build the same building on it on one step -> it stands and each
  pays. Fewer: nothing happens and nobody pays. Builders of different buildings on
  one site: the building of the lowest-index complete group stands.
- Handover site (with two or more agents): a build starts it (the starter pays at once,
  window as for handover tasks); a *different* agent building the same building
  inside the window finishes it (and pays). The starter again changes nothing; a
  window that runs out lapses and the starter's share is lost.
Everyone who took part (the starter too) earns `build_<building>`.
- Shelter: a sleeper within Chebyshev distance 1 recovers twice as fast (health and
  rest) and zombies cannot hurt it. Beacon: tiles within `beacon_radius` (9x9) are
  lit in the view and zombies (the night spawns) do not spawn there. Forge: two or
  more agents next to one forge doing `make_diamond_sword` on one step each pay
  1 wood + 1 diamond and each get a diamond sword (melee damage 8); one alone fails.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np

from alemlite.core import threefry
from alemlite.envs.craft import constants as C
from alemlite.envs.craft.config import CraftConfig, CraftParams
from alemlite.envs.craft.coordination import constants as L
from alemlite.envs.craft.coordination.part import Draws, Part, Turn
from alemlite.envs.craft.coordination.signals import first_message
from alemlite.envs.craft.coordination.state import CoordinationState, SiteState
from alemlite.envs.craft.coordination.tasks import (
    MAX_WINDOW,
    count_down,
    flag,
    handover_window,
    quorum,
    task_kind,
)
from alemlite.envs.craft.world.gathering import facing_target
from alemlite.envs.craft.world.observation import window_offsets
from alemlite.envs.craft.world.rendering import TILE, Marks, texture
from alemlite.envs.craft.world.rules import DoRules, LifeRules
from alemlite.envs.craft.world.state import CraftState
from alemlite.envs.craft.world.tiles import first_claim, write_tiles

SITE_CANDIDATES = 32  # tiles tried per site at generation
SITE_SPREAD = 10  # sites lie within this Chebyshev distance of the start centre...
SITE_MIN_DISTANCE = 5  # ...and outside the start disc
SITE_VALUES = 9  # sync, handover, quorum / P, shelter, forge, beacon, pending x 3


def first_build(config: CraftConfig) -> int:
    """Id of `build_shelter` (the construction actions follow every other action)."""
    return first_message(config) + config.message_tokens


def lay_sites(
    key: jax.Array, config: CraftConfig, material: jax.Array, centre: jax.Array
) -> tuple[jax.Array, SiteState]:
    """Place the sites on grass near the start (at generation, never inside a step)."""
    slots, size = config.site_slots, config.map_size
    offsets_key, kind_key = threefry.split(key)
    offsets = threefry.randint(
        offsets_key, (slots, SITE_CANDIDATES, 2), -SITE_SPREAD, SITE_SPREAD + 1
    )
    candidates = centre[None, None, :] + offsets
    inside = jnp.all((candidates >= 0) & (candidates < size), axis=-1)
    clipped = jnp.clip(candidates, 0, size - 1)
    ok = inside & (material[clipped[..., 0], clipped[..., 1]] == C.GRASS)
    ok &= jnp.max(jnp.abs(offsets), axis=-1) >= SITE_MIN_DISTANCE
    choice = jnp.argmax(ok, axis=1)
    chosen = clipped[jnp.arange(slots), choice]
    found = ok[jnp.arange(slots), choice]
    earlier_same = jnp.tril(jnp.all(chosen[:, None] == chosen[None, :], -1), k=-1)
    found &= ~jnp.any(earlier_same & found[None, :], axis=1)
    kind_roll, quorum_roll = threefry.uniform(kind_key, (2, slots))
    handover = (kind_roll < L.SITE_HANDOVER_SHARE) & (config.num_agents >= 2)
    kind = jnp.where(handover, L.TASK_HANDOVER, L.TASK_HARD_SYNC)
    roll = jnp.floor(quorum_roll * L.QUORUM_LEVELS).astype(jnp.int32)
    task = jnp.where(found, kind | (roll << L.TASK_KIND_BITS), 0).astype(jnp.uint8)
    material = write_tiles(material, chosen, jnp.full((slots,), L.SITE), found)
    sites = SiteState(
        position=chosen.astype(jnp.int16),
        task=task,
        building=jnp.full((slots,), -1, jnp.int8),
        starter=jnp.full((slots,), -1, jnp.int8),
        pending=jnp.full((slots,), -1, jnp.int8),
        timer=jnp.zeros((slots,), jnp.int16),
    )
    return material, sites


def _chebyshev(a: jax.Array, b: jax.Array) -> jax.Array:
    """`(A, 2)` x `(B, 2)` -> `(A, B)` Chebyshev distance."""
    return jnp.max(jnp.abs(a[:, None, :] - b[None, :, :]), axis=-1)


def near_building(sites: SiteState, position: jax.Array, building: int, radius) -> jax.Array:
    """`(K, Q)` bool: a `building` stands within Chebyshev `radius` of each position."""
    distance = _chebyshev(position, sites.position.astype(jnp.int32))
    return (distance <= radius) & (sites.building == building)[None, :]


def sheltered(state: CraftState) -> jax.Array:
    """`(P,)` bool: a shelter stands next to each agent."""
    near = near_building(state.coordination.sites, state.agents.position, L.SHELTER_KIND, 1)
    return jnp.any(near, axis=1)


def lit_by_beacon(sites: SiteState, position: jax.Array, radius: jax.Array) -> jax.Array:
    """`(...)` bool for `(..., 2)` positions: inside the lit square of a beacon."""
    flat = position.reshape(-1, 2)
    lit = jnp.any(near_building(sites, flat, L.BEACON_KIND, radius), axis=1)
    return lit.reshape(position.shape[:-1])


def beacon_blocker(sites: SiteState, radius: jax.Array) -> Callable[[jax.Array], jax.Array]:
    """A `(K, 2) -> (K,)` rule for `mobs.balance`: zombies do not spawn where beacons light."""
    return lambda position: lit_by_beacon(sites, position, radius)


def melee_floor(state: CraftState) -> jax.Array:
    """`(P,)` melee damage of a diamond sword where held, else 0."""
    return jnp.where(state.coordination.diamond_sword, L.DIAMOND_SWORD_DAMAGE, 0)


def _facing_site(state: CraftState) -> tuple[jax.Array, jax.Array]:
    """Whether each agent faces an unbuilt site, and that site's slot, `(P,)` each."""
    sites = state.coordination.sites
    hit = (
        jnp.all(facing_target(state)[:, None, :] == sites.position.astype(jnp.int32)[None], -1)
        & (sites.task > 0)[None, :]
        & (sites.building < 0)[None, :]
    )
    return jnp.any(hit, axis=1), jnp.argmax(hit, axis=1)


def _affords(inventory: jax.Array, share: jax.Array) -> jax.Array:
    """`(P, K)` bool: each agent holds each of the K shares `(K, items)`."""
    return jnp.all(inventory[:, None, :] >= share[None, :, :], axis=-1)


def _smiths_at_forges(state: CraftState) -> tuple[jax.Array, jax.Array]:
    """`(P, Q)` next to each forge, and `(P,)` holding a diamond sword's share."""
    near = near_building(state.coordination.sites, state.agents.position, L.FORGE_KIND, 1)
    share = jnp.asarray(L.DIAMOND_SWORD_SHARE)[None, :]
    return near, _affords(state.agents.inventory, share)[:, 0]


def action_mask(config: CraftConfig, state: CraftState, params: CraftParams) -> jax.Array:
    """`(P, 4)` bool: builds on a faced unbuilt site with the share in hand (not a handover
    the agent itself started, nor one pending another building); a diamond sword next
    to a forge with the share in hand (whether a partner joins is not known ahead)."""
    facing, slot = _facing_site(state)
    sites = state.coordination.sites
    own = sites.starter[slot] == jnp.arange(config.num_agents)
    pending = sites.pending[slot].astype(jnp.int32)
    building = jnp.arange(L.NUM_BUILDINGS)[None, :]
    fits_pending = (pending[:, None] < 0) | (pending[:, None] == building)
    builds = (
        facing[:, None]
        & ~own[:, None]
        & fits_pending
        & _affords(state.agents.inventory, params.building_share)
    )
    near_forge, has_share = _smiths_at_forges(state)
    smith = jnp.any(near_forge, axis=1) & has_share
    return jnp.concatenate([builds, smith[:, None]], axis=1)


def apply(
    config: CraftConfig,
    state: CraftState,
    params: CraftParams,
    actions: jax.Array,
    uniform: jax.Array,
) -> CraftState:
    """Builds and diamond swords of this step's actions `(P,)`; `uniform` `(P,)` draws
    the window of started handovers."""
    num_agents, slots = config.num_agents, config.site_slots
    agents, coordination = state.agents, state.coordination
    sites = coordination.sites
    index = actions - first_build(config)
    kind = jnp.clip(index, 0, L.NUM_BUILDINGS - 1)
    facing, slot = _facing_site(state)
    share = params.building_share[kind]  # (P, items)
    affords = jnp.all(agents.inventory >= share, axis=1)
    builder = (index >= 0) & (index < L.NUM_BUILDINGS) & facing & affords
    byte = sites.task[slot]
    site_kind = task_kind(byte)
    agent = jnp.arange(num_agents)
    same_site = slot[:, None] == slot[None, :]
    same_building = same_site & (kind[:, None] == kind[None, :])

    # Syncs: the quorum of builders of one building; the lowest-index group wins a site.
    syncing = builder & (site_kind == L.TASK_HARD_SYNC)
    partners = jnp.sum(same_building & syncing[None, :], axis=1)
    built = syncing & (partners >= quorum(byte, coordination.alpha, num_agents))
    first_group = jnp.argmax(same_site & built[None, :], axis=1)
    built &= kind == kind[first_group]

    # Handovers: start (pay now) or finish (a different agent, the same building).
    handing = builder & (site_kind == L.TASK_HANDOVER)
    starter = sites.starter[slot].astype(jnp.int32)
    pending = starter >= 0
    target = sites.position[slot].astype(jnp.int32)
    finishing = first_claim(
        handing & pending & (starter != agent) & (kind == sites.pending[slot]), target
    )
    starting = first_claim(handing & ~pending, target)
    credited = jnp.zeros((num_agents,), bool).at[starter].max(finishing)
    starter_kind = (
        jnp.zeros((num_agents,), jnp.int32).at[starter].max(jnp.where(finishing, kind + 1, 0)) - 1
    )

    # Payment, the sites that now stand, and the started handovers.
    completing = built | finishing
    paying = completing | starting
    inventory = agents.inventory - share * paying[:, None]
    done_slot = jnp.where(completing, slot, slots)
    standing = jnp.zeros((slots,), bool).at[done_slot].set(True, mode="drop")
    building = sites.building.at[done_slot].set(kind.astype(jnp.int8), mode="drop")
    world = write_tiles(
        state.map,
        sites.position.astype(jnp.int32),
        jnp.asarray(L.BUILDING_MATERIAL)[jnp.maximum(building, 0)],
        standing,
    )
    start_slot = jnp.where(starting, slot, slots)
    window = handover_window(coordination.alpha, uniform)
    # Stored as steps left after this one: the finisher may act on the next `window` steps.
    sites = sites.replace(
        building=building,
        starter=jnp.where(standing, -1, sites.starter)
        .at[start_slot]
        .set(agent.astype(jnp.int8), mode="drop"),
        pending=jnp.where(standing, -1, sites.pending)
        .at[start_slot]
        .set(kind.astype(jnp.int8), mode="drop"),
        timer=jnp.where(standing, 0, sites.timer)
        .at[start_slot]
        .set((window + 1).astype(jnp.int16), mode="drop"),
    )

    # Diamond swords: two or more smiths next to one forge on one step.
    near_forge, has_share = _smiths_at_forges(state)
    smithing = (index == L.NUM_BUILDINGS) & has_share
    at_forge = near_forge & smithing[:, None]
    smiths = jnp.sum(at_forge, axis=0)
    forged = jnp.any(at_forge & (smiths >= L.DIAMOND_SWORD_SMITHS)[None, :], axis=1)
    inventory = inventory - jnp.asarray(L.DIAMOND_SWORD_SHARE)[None, :] * forged[:, None]

    credit_kind = jnp.where(completing, kind, starter_kind)
    builders = (
        jax.nn.one_hot(credit_kind, L.NUM_BUILDINGS, dtype=bool) & (completing | credited)[:, None]
    )
    first = L.COORDINATION_INDEX["build_shelter"]
    achievements = (
        coordination.achievements.at[:, first : first + L.NUM_BUILDINGS]
        .max(builders)
        .at[:, L.COORDINATION_INDEX["make_diamond_sword"]]
        .max(forged)
    )
    new_buildings = jnp.sum(
        jax.nn.one_hot(jnp.where(standing, building, -1), L.NUM_BUILDINGS, dtype=jnp.int16), axis=0
    ).astype(jnp.int16)
    coordination = coordination.replace(
        sites=sites,
        achievements=achievements,
        diamond_sword=coordination.diamond_sword | forged,
        buildings_built=coordination.buildings_built + new_buildings,
        diamond_swords=coordination.diamond_swords + jnp.sum(forged).astype(jnp.int16),
    )
    return state.replace(
        map=world, agents=agents.replace(inventory=inventory), coordination=coordination
    )


def tick_sites(sites: SiteState) -> SiteState:
    """At the end of a step, windows of started handover builds shrink; at zero they lapse."""
    starter, timer, lapses = count_down(sites.starter, sites.timer)
    return sites.replace(
        timer=timer, starter=starter, pending=jnp.where(lapses, -1, sites.pending).astype(jnp.int8)
    )


def site_values(config: CraftConfig, state: CraftState) -> jax.Array:
    """`(Q, SITE_VALUES)` float32 per site: unbuilt sync, unbuilt handover, quorum / P
    (sync), shelter, forge, beacon, then the building a started handover will make
    (one-hot) times its window left / MAX_WINDOW. Empty slots are all zero."""
    coordination = state.coordination
    sites = coordination.sites
    kind = task_kind(sites.task)
    unbuilt = (sites.task > 0) & (sites.building < 0)
    sync = unbuilt & (kind == L.TASK_HARD_SYNC)
    handover = unbuilt & (kind == L.TASK_HANDOVER)
    needed = quorum(sites.task, coordination.alpha, config.num_agents)
    left = sites.timer.astype(jnp.float32) / MAX_WINDOW
    return jnp.concatenate(
        [
            sync[:, None],
            handover[:, None],
            jnp.where(sync, needed / config.num_agents, 0.0)[:, None],
            jax.nn.one_hot(sites.building, L.NUM_BUILDINGS),
            jax.nn.one_hot(sites.pending, L.NUM_BUILDINGS) * left[:, None],
        ],
        axis=1,
    ).astype(jnp.float32)


def site_planes(config: CraftConfig, state: CraftState) -> jax.Array:
    """`(P, H, W, SITE_VALUES)`: each site's values on its tile of each window."""
    rows, cols = window_offsets(config)
    sites = state.coordination.sites
    relative = sites.position.astype(jnp.int32)[None] - state.agents.position[:, None]
    present = (sites.task > 0)[None, :, None]
    row_hit = (relative[..., 0, None] == rows) & present  # (P, Q, H)
    col_hit = relative[..., 1, None] == cols  # (P, Q, W)
    return jnp.einsum(
        "pqh,pqw,qc->phwc",
        row_hit.astype(jnp.float32),
        col_hit.astype(jnp.float32),
        site_values(config, state),
    )


def block_sprites() -> dict[int, np.ndarray]:
    """Sprites of an unbuilt site (dashed edge) and of each building (roof, anvil, star)."""
    rows, cols = np.mgrid[:TILE, :TILE]
    edge = (rows == 0) | (rows == TILE - 1) | (cols == 0) | (cols == TILE - 1)
    dashes = edge & ((rows + cols) % 3 != 0)
    slope = 3 - np.minimum(cols, TILE - 1 - cols)
    roof = (rows <= slope + 3) & (rows >= slope)
    anvil = ((rows == 2) | (rows == 3)) & (cols >= 1) & (cols <= 6)
    anvil |= (rows >= 4) & (rows <= 6) & (cols >= 3) & (cols <= 4)
    star = (np.abs(rows - 3.5) + np.abs(cols - 3.5) <= 3) & (
        (np.abs(rows - 3.5) < 1) | (np.abs(cols - 3.5) < 1) | (np.abs(rows - cols) < 1)
    )
    site, shelter, forge, beacon = L.BLOCK_COLOURS
    return {
        L.SITE: texture(site, (110, 90, 60), dashes),
        L.SHELTER: texture(C.MATERIAL_COLOURS[C.PATH], shelter, roof),
        L.FORGE: texture(forge, (250, 120, 40), anvil),
        L.BEACON: texture(C.MATERIAL_COLOURS[C.STONE], beacon, star),
    }


class Construction(Part):
    """Shelters, forges and beacons built together on sites, and diamond swords."""

    stream = 2  # draws of its own, so the other parts' draws stay as they are
    window_channels = SITE_VALUES
    own_features = 1  # holds a diamond sword

    @staticmethod
    def enabled(config: CraftConfig) -> bool:
        return config.has_construction

    @staticmethod
    def random_shapes(config: CraftConfig) -> dict[str, tuple[int, ...]]:
        return {"build_window": (config.num_agents,)}

    @property
    def action_names(self) -> tuple[str, ...]:
        return L.BUILD_ACTIONS

    @property
    def achievements(self) -> tuple[str, ...]:
        swords = ("make_diamond_sword",) if self.config.num_agents >= 2 else ()
        return tuple(f"build_{name}" for name in L.BUILDINGS) + swords

    @property
    def global_features(self) -> int:
        return self.config.site_slots * (2 + SITE_VALUES)

    def lay(
        self,
        key: jax.Array,
        material: jax.Array,
        centre: jax.Array,
        coordination: CoordinationState,
    ) -> tuple[jax.Array, CoordinationState]:
        material, sites = lay_sites(threefry.fold_in(key, 3), self.config, material, centre)
        return material, coordination.replace(sites=sites)

    def do_rules(self, state: CraftState, params: CraftParams, rules: DoRules) -> DoRules:
        return replace(rules, melee_floor=melee_floor(state))

    def after_do(self, turn: Turn, state: CraftState, params: CraftParams, draws: Draws):
        return apply(self.config, state, params, turn.actions, draws["build_window"])

    def life_rules(self, state: CraftState, params: CraftParams, rules: LifeRules) -> LifeRules:
        by_shelter = sheltered(state)
        return replace(
            rules,
            rest_boost=jnp.where(by_shelter, L.SHELTER_RECOVERY_FACTOR, 1),
            harmless=by_shelter & state.agents.sleeping,
            zombie_blocked=beacon_blocker(state.coordination.sites, params.beacon_radius),
        )

    def tick(self, state: CraftState) -> CraftState:
        coordination = state.coordination
        return state.replace(
            coordination=coordination.replace(sites=tick_sites(coordination.sites))
        )

    def action_mask(self, state: CraftState, params: CraftParams) -> jax.Array:
        return action_mask(self.config, state, params)

    def window_planes(self, state: CraftState, params: CraftParams) -> jax.Array:
        return site_planes(self.config, state)

    def own(self, state: CraftState) -> jax.Array:
        return state.coordination.diamond_sword[:, None]

    def global_part(self, state: CraftState) -> jax.Array:
        sites = state.coordination.sites
        position = sites.position.astype(jnp.float32) / self.config.map_size
        position = position * (sites.task > 0)[:, None]
        return jnp.concatenate([position, site_values(self.config, state)], axis=1).reshape(-1)

    def lit(self, state: CraftState, params: CraftParams, position: jax.Array) -> jax.Array:
        return lit_by_beacon(state.coordination.sites, position, params.beacon_radius)

    def marks(self, state: CraftState, rows: jax.Array, cols: jax.Array, marks: Marks) -> Marks:
        sites = state.coordination.sites
        unbuilt = (sites.task > 0) & (sites.building < 0)
        site_position = sites.position.astype(jnp.int32)
        at_site = (
            (site_position[:, 0, None, None] == rows[None])
            & (site_position[:, 1, None, None] == cols[None])
            & unbuilt[:, None, None]
        )
        site_kind = task_kind(sites.task)[jnp.argmax(at_site, axis=0)]
        return flag(site_kind, jnp.any(at_site, axis=0), marks)

    def sprites(self) -> dict[int, np.ndarray]:
        return block_sprites()

    def metrics(self, state: CraftState) -> dict[str, jax.Array]:
        coordination = state.coordination
        metrics = {
            f"construction/{name}s": coordination.buildings_built[index].astype(jnp.float32)
            for index, name in enumerate(L.BUILDINGS)
        }
        metrics["construction/diamond_swords"] = coordination.diamond_swords.astype(jnp.float32)
        return metrics
