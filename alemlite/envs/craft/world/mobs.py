"""Zombies, skeletons, cows and arrows in fixed-size tables (crafter/objects.py).

Every mob acts toward or away from the nearest standing agent (L1 distance, as
Crafter's `Object.distance`). Mobs move after the agents; a mob enters a tile only
if it is walkable for its kind and free of agents and of other mobs, and when two
mobs aim at one tile the lower slot wins. Two zombies may hit one agent in the same
step; their damage adds up.

Populations are balanced by sampling a few candidate tiles per kind and step, never
by scanning the map: a kind below its daylight-dependent target spawns on a
candidate of its material far enough from every agent; above it, a random member far
from every agent despawns. Arrows fly straight, hurt the first agent they reach by 2,
vanish on mobs and solid tiles, and break tables and furnaces into path (Crafter).
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from alemlite.core.fusion import materialise
from alemlite.envs.craft import constants as C
from alemlite.envs.craft.world.config import WorldConfig, WorldParams
from alemlite.envs.craft.world.gathering import agent_blocking, mob_at
from alemlite.envs.craft.world.slots import free_slots_first
from alemlite.envs.craft.world.state import CraftState
from alemlite.envs.craft.world.tiles import first_claim, l1_distance, read_tiles, write_tiles

FAR = 10_000
# Per mob kind (zombie, skeleton, cow): walkable materials, spawn material, starting
# health, and the distance to every agent required to spawn or despawn (Crafter's
# _balance_object span distances: 6, 7, 5).
MOB_WALKABLE = np.stack([C.ZOMBIE_WALKABLE, C.SKELETON_WALKABLE, C.COW_WALKABLE])
SPAWN_ON = np.stack([C.material_set(C.GRASS), C.material_set(C.PATH), C.material_set(C.GRASS)])
MOB_HEALTH = np.array([C.ZOMBIE_HEALTH, C.SKELETON_HEALTH, C.COW_HEALTH])
SPAWN_DISTANCE = np.array([6, 7, 5])
SPAWN_CANDIDATES = 4  # tiles tried per kind and step
NUM_KINDS = 3  # kinds in the mob table (arrows have their own)
MOB_RANDOM_DRAWS = 6  # uniforms per mob and step


def random_shapes(config: WorldConfig) -> dict[str, tuple[int, ...]]:
    """Uniform draws this module needs per step (drawn once by the environment)."""
    return {
        "mob": (config.num_mobs, MOB_RANDOM_DRAWS),
        "spawn": (NUM_KINDS, 2),
        "candidates": (NUM_KINDS, SPAWN_CANDIDATES, 2),
        "despawn_pick": (config.num_mobs,),
    }


def daylight(step: jax.Array, day_length: jax.Array) -> jax.Array:
    """Crafter's daylight: 1 - |cos(pi * ((t / day_length) mod 1 + 0.3))|^3."""
    progress = jnp.mod(step / day_length, 1.0) + 0.3
    return 1.0 - jnp.abs(jnp.cos(jnp.pi * progress)) ** 3


def nearest_agent(state: CraftState, position: jax.Array) -> tuple[jax.Array, jax.Array]:
    """Index of and L1 distance to the nearest standing agent for `(K, 2)` positions."""
    standing = state.agents.status == C.ALIVE
    distance = jnp.where(standing[None, :], l1_distance(position, state.agents.position), FAR)
    return jnp.argmin(distance, axis=1), jnp.min(distance, axis=1)


def toward(offset: jax.Array, long_axis: jax.Array) -> jax.Array:
    """Crafter's `Object.toward`: a unit step along the long (or short) axis of `offset`."""
    row_first = jnp.where(
        long_axis,
        jnp.abs(offset[:, 0]) > jnp.abs(offset[:, 1]),
        jnp.abs(offset[:, 0]) <= jnp.abs(offset[:, 1]),
    )
    sign = jnp.sign(offset)
    return jnp.where(
        row_first[:, None],
        jnp.stack([sign[:, 0], jnp.zeros_like(sign[:, 0])], -1),
        jnp.stack([jnp.zeros_like(sign[:, 1]), sign[:, 1]], -1),
    )


def direction_index(delta: jax.Array) -> jax.Array:
    """Index into DIRECTIONS of unit steps `(K, 2)`."""
    return jnp.argmax(jnp.all(delta[:, None, :] == jnp.asarray(C.DIRECTIONS)[None], -1), axis=1)


def move_and_attack(
    config: WorldConfig,
    state: CraftState,
    uniform: jax.Array,
    harmless: jax.Array | None = None,
) -> tuple[CraftState, jax.Array]:
    """Mob behaviour; returns the state and each skeleton's wish to shoot `(N,)`.

    Zombie attacks on `harmless` `(P,)` agents do no damage.
    """
    mobs = state.mobs
    kinds = jnp.asarray(config.mob_kinds())
    is_zombie, is_skeleton = kinds == C.ZOMBIE, kinds == C.SKELETON
    target, distance = nearest_agent(state, mobs.position)
    offset = state.agents.position[target] - mobs.position
    random_step = jnp.asarray(C.DIRECTIONS)[jnp.floor(uniform[:, 0] * 4).astype(jnp.int32)]
    no_step = jnp.zeros_like(random_step)

    def enterable(position: jax.Array) -> jax.Array:
        walkable = jnp.asarray(MOB_WALKABLE)[kinds, read_tiles(state.map, position)]
        return (
            walkable
            & ~jnp.any(agent_blocking(state, position), axis=1)
            & ~jnp.any(mob_at(state, position), axis=1)
        )

    chase = (distance <= C.ZOMBIE_CHASE_DISTANCE) & (uniform[:, 1] < C.ZOMBIE_CHASE_PROBABILITY)
    zombie_step = jnp.where(
        chase[:, None],
        toward(offset, uniform[:, 2] < C.ZOMBIE_LONG_AXIS_PROBABILITY),
        random_step,
    )
    cow_step = jnp.where((uniform[:, 1] < C.COW_MOVE_PROBABILITY)[:, None], random_step, no_step)
    retreat = materialise(-toward(offset, uniform[:, 2] < 0.6))  # tested like `destination`
    retreats = (distance <= C.SKELETON_RETREAT_DISTANCE) & enterable(mobs.position + retreat)
    shoots = (
        ~retreats
        & (distance <= C.SKELETON_SHOOT_DISTANCE)
        & (uniform[:, 3] < C.SKELETON_SHOOT_PROBABILITY)
    )
    approaches = (
        ~retreats
        & ~shoots
        & (distance <= C.SKELETON_APPROACH_DISTANCE)
        & (uniform[:, 4] < C.SKELETON_APPROACH_PROBABILITY)
    )
    wanders = ~retreats & ~shoots & ~approaches & (uniform[:, 5] < C.SKELETON_WANDER_PROBABILITY)
    skeleton_step = jnp.select(
        [retreats[:, None], approaches[:, None], wanders[:, None]],
        [retreat, toward(offset, uniform[:, 2] < 0.6), random_step],
        no_step,
    )
    step = jnp.select(
        [is_zombie[:, None], is_skeleton[:, None]], [zombie_step, skeleton_step], cow_step
    )
    destination = materialise(mobs.position + step)  # tested against every mob and agent
    moving = mobs.alive & jnp.any(step != 0, axis=1) & enterable(destination)
    moving = first_claim(moving, destination)
    position = jnp.where(moving[:, None], destination, mobs.position)

    # Zombies next to their nearest agent attack after a cooldown.
    target, distance = nearest_agent(state.replace(mobs=mobs.replace(position=position)), position)
    near = mobs.alive & is_zombie & (distance <= 1)
    attacks = near & (mobs.cooldown == 0)
    damage = (
        jnp.where(state.agents.sleeping[target], C.ZOMBIE_SLEEP_DAMAGE, C.ZOMBIE_DAMAGE) * attacks
    )
    cooldown = jnp.where(
        near, jnp.where(attacks, C.ZOMBIE_COOLDOWN, mobs.cooldown - 1), mobs.cooldown
    )
    # Skeletons reload every step.
    cooldown = jnp.where(is_skeleton, jnp.maximum(mobs.cooldown - 1, 0), cooldown)
    if harmless is not None:
        damage = jnp.where(harmless[target], 0, damage)
    hurt = jnp.zeros((config.num_agents,), jnp.int32).at[target].add(damage)
    agents = state.agents
    agents = agents.replace(stats=agents.stats.at[:, C.HEALTH].add(-hurt))
    state = state.replace(agents=agents, mobs=mobs.replace(position=position, cooldown=cooldown))
    return state, mobs.alive & is_skeleton & shoots & (cooldown == 0)


def fly_arrows(config: WorldConfig, state: CraftState, shooting: jax.Array) -> CraftState:
    """Move arrows, apply hits, then launch new arrows from `shooting` skeletons."""
    arrows = state.arrows
    directions = jnp.asarray(C.DIRECTIONS)
    ahead = arrows.position + directions[arrows.direction]
    hit_agents = agent_blocking(state, ahead) & arrows.alive[:, None]
    hits_agent = jnp.any(hit_agents, axis=1)
    hits_mob = arrows.alive & ~hits_agent & jnp.any(mob_at(state, ahead), axis=1)
    material = read_tiles(state.map, ahead)
    flying = arrows.alive & ~hits_agent & ~hits_mob
    breaks = flying & jnp.asarray(C.ARROW_BREAKS)[material]
    moves = flying & jnp.asarray(C.ARROW_FLIES_OVER)[material]
    world = write_tiles(state.map, ahead, jnp.full_like(material, C.PATH), breaks)
    hurt = jnp.sum(hit_agents, axis=0) * C.ARROW_DAMAGE
    agents = state.agents.replace(stats=state.agents.stats.at[:, C.HEALTH].add(-hurt))
    position = jnp.where(moves[:, None], ahead, arrows.position)
    alive = moves
    state = state.replace(map=world, agents=agents)

    # Launch: shooters aim along the long axis at their nearest agent.
    mobs = state.mobs
    target, _ = nearest_agent(state, mobs.position)
    aim = toward(state.agents.position[target] - mobs.position, jnp.ones_like(shooting))
    start = mobs.position + aim
    start_material = read_tiles(world, start)
    clear = (
        jnp.asarray(C.ARROW_FLIES_OVER)[start_material]
        & ~jnp.any(agent_blocking(state, start), axis=1)
        & ~jnp.any(mob_at(state, start), axis=1)
        & jnp.any(aim != 0, axis=1)
    )
    launching = first_claim(shooting & clear, start)
    # Launchers take the free arrow slots in mob order; the rest hold their fire.
    free_slots = free_slots_first(alive)
    rank = jnp.cumsum(launching) - 1
    candidate = free_slots[jnp.clip(rank, 0, config.arrow_slots - 1)]
    launching &= (rank < config.arrow_slots) & ~alive[candidate]
    slot = jnp.where(launching, candidate, config.arrow_slots)
    arrows = arrows.replace(
        position=position.at[slot].set(start, mode="drop"),
        direction=arrows.direction.at[slot].set(direction_index(aim), mode="drop"),
        alive=alive.at[slot].set(True, mode="drop"),
    )
    reload = jnp.where(launching, C.SKELETON_RELOAD, mobs.cooldown)
    return state.replace(arrows=arrows, mobs=mobs.replace(cooldown=reload))


def grow_plants(state: CraftState) -> CraftState:
    """Saplings grow and ripen; a mob next to one eats it (it turns back to grass)."""
    plants, mobs = state.plants, state.mobs
    grown = plants.grown + plants.alive
    next_to_mob = (l1_distance(plants.position, mobs.position) == 1) & mobs.alive[None, :]
    eaten = plants.alive & jnp.any(next_to_mob, axis=1)
    material = jnp.where(eaten, C.GRASS, jnp.where(grown > C.RIPEN_STEPS, C.RIPE_PLANT, C.SAPLING))
    world = write_tiles(state.map, plants.position, material, plants.alive)
    return state.replace(map=world, plants=plants.replace(grown=grown, alive=plants.alive & ~eaten))


def population_targets(config: WorldConfig, state: CraftState, light: jax.Array) -> jax.Array:
    """Target count per kind (zombie, skeleton, cow) from daylight and free space.

    Crafter's per-chunk targets: zombies 3.5 - 3 * daylight (with >= 50 grass),
    skeletons 1..2 (with >= 6 path), cows 1..1.5 + daylight (with >= 30 grass),
    rescaled to the slot counts.
    """
    zombies = jnp.round(config.zombie_slots * jnp.clip((3.5 - 3.0 * light) / 3.5, 0.0, 1.0))
    cows = jnp.round(config.cow_slots * (1.5 + light) / 2.5)
    return jnp.stack(
        [
            zombies * (state.grass_tiles >= 50),
            config.skeleton_slots * (state.path_tiles >= 6),
            cows * (state.grass_tiles >= 30),
        ]
    ).astype(jnp.int32)


def balance(
    config: WorldConfig,
    state: CraftState,
    params: WorldParams,
    draws: dict[str, jax.Array],
    zombie_blocked: Callable[[jax.Array], jax.Array] | None = None,
) -> CraftState:
    """Spawn one mob per kind below target, despawn one above it (if far from agents).

    `zombie_blocked(candidates (K, 2)) -> (K,)` bool rules out zombie spawn tiles.
    """
    mobs = state.mobs
    kinds = jnp.asarray(config.mob_kinds())
    of_kind = kinds[None, :] == jnp.arange(NUM_KINDS)[:, None]  # (3, N)
    counts = jnp.sum(of_kind & mobs.alive[None, :], axis=1)
    targets = population_targets(config, state, daylight(state.step, params.day_length))
    present = state.agents.status != C.DEAD

    candidates = jnp.floor(draws["candidates"] * config.map_size).astype(jnp.int32)
    flat = candidates.reshape(-1, 2)
    far = jnp.min(
        jnp.where(present[None, :], l1_distance(flat, state.agents.position), FAR), axis=1
    ).reshape(NUM_KINDS, SPAWN_CANDIDATES)
    free = (
        ~jnp.any(agent_blocking(state, flat), axis=1) & ~jnp.any(mob_at(state, flat), axis=1)
    ).reshape(NUM_KINDS, SPAWN_CANDIDATES)
    material = read_tiles(state.map, candidates)
    suitable = (
        jnp.take_along_axis(jnp.asarray(SPAWN_ON), material.reshape(NUM_KINDS, -1), axis=1)
        & (far >= jnp.asarray(SPAWN_DISTANCE)[:, None])
        & free
    )
    if zombie_blocked is not None:
        blocked = zombie_blocked(candidates[C.ZOMBIE])
        suitable = suitable.at[C.ZOMBIE].set(suitable[C.ZOMBIE] & ~blocked)
    chosen = candidates[jnp.arange(NUM_KINDS), jnp.argmax(suitable, axis=1)]
    empty = of_kind & ~mobs.alive[None, :]
    spawn_probability = jnp.stack(
        [
            params.zombie_spawn_probability,
            params.skeleton_spawn_probability,
            params.cow_spawn_probability,
        ]
    )
    spawns = (
        (draws["spawn"][:, 0] < spawn_probability)
        & (counts < targets)
        & jnp.any(suitable, axis=1)
        & jnp.any(empty, axis=1)
    )
    slot = jnp.where(spawns, jnp.argmax(empty, axis=1), config.num_mobs)

    # Despawn a random member of each kind above target, if no agent is near.
    members = of_kind & mobs.alive[None, :]
    pick = jnp.argmax(jnp.where(members, draws["despawn_pick"][None, :], -1.0), axis=1)
    _, distance = nearest_agent(state, mobs.position[pick])
    despawns = (
        (draws["spawn"][:, 1] < params.despawn_probability)
        & (counts > targets)
        & (distance >= jnp.asarray(SPAWN_DISTANCE))
    )
    gone = (
        jnp.zeros((config.num_mobs,), bool)
        .at[jnp.where(despawns, pick, config.num_mobs)]
        .set(True, mode="drop")
    )
    mobs = mobs.replace(
        position=mobs.position.at[slot].set(chosen, mode="drop"),
        health=mobs.health.at[slot].set(jnp.asarray(MOB_HEALTH), mode="drop"),
        cooldown=mobs.cooldown.at[slot].set(0, mode="drop"),
        alive=(mobs.alive & ~gone).at[slot].set(True, mode="drop"),
    )
    return state.replace(mobs=mobs)
