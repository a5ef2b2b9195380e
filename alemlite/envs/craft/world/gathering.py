"""DO (collect, fight, eat, revive), placing and making, for all agents at once.

Simultaneous actions resolve deterministically:
- A tile that a DO consumes (stone, coal, iron, diamond, a ripe plant) goes to the
  lowest-index agent facing it; the others get nothing from it this step. Trees and
  water are not consumed, so every agent facing them collects.
- Agents hitting one mob add their damage; when it dies, every hitter is credited
  (defeat achievement; for a cow each hitter eats).
- Two agents placing onto one tile: the lowest index places, the other keeps its item.
- DO on a downed teammate revives it at health 1; on a standing teammate it does nothing.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from alemlite.envs.craft import constants as C
from alemlite.envs.craft.world.config import WorldConfig
from alemlite.envs.craft.world.rules import DoRules
from alemlite.envs.craft.world.slots import free_slots_first
from alemlite.envs.craft.world.state import CraftState
from alemlite.envs.craft.world.tiles import (
    first_claim,
    in_bounds,
    nearby_materials,
    read_tiles,
    same_tile,
    write_tiles,
)

SWORDS = jnp.array([C.INV_WOOD_SWORD, C.INV_STONE_SWORD, C.INV_IRON_SWORD])


def facing_target(state: CraftState) -> jax.Array:
    """The tile in front of each agent `(P, 2)`."""
    return state.agents.position + jnp.asarray(C.DIRECTIONS)[state.agents.facing]


def melee_damage(inventory: jax.Array) -> jax.Array:
    """Damage of each agent's best sword (1 without one), `(P,)`."""
    has = jnp.concatenate(
        [jnp.ones((inventory.shape[0], 1), bool), inventory[:, SWORDS] > 0], axis=1
    )
    return jnp.max(jnp.where(has, jnp.asarray(C.SWORD_DAMAGE), 0), axis=1)


def agent_blocking(state: CraftState, target: jax.Array) -> jax.Array:
    """`(K, P)` bool: agent p stands (alive or downed) on target k."""
    present = state.agents.status != C.DEAD
    return same_tile(target, state.agents.position) & present[None, :]


def mob_at(state: CraftState, target: jax.Array) -> jax.Array:
    """`(K, N)` bool: living mob n stands on target k."""
    return same_tile(target, state.mobs.position) & state.mobs.alive[None, :]


def unlock(achievements: jax.Array, index: jax.Array, when: jax.Array) -> jax.Array:
    """Set achievement `index[p]` of each agent p where `when[p]` (index -1: none)."""
    hit = (jnp.arange(C.NUM_ACHIEVEMENTS)[None, :] == index[:, None]) & when[:, None]
    return achievements | hit


def add_items(inventory: jax.Array, item: jax.Array, amount: jax.Array) -> jax.Array:
    """Add `amount[p]` of `item[p]` (ignored where item is -1), capped at 9."""
    one_hot = jnp.arange(C.NUM_ITEMS)[None, :] == item[:, None]
    return jnp.clip(inventory + one_hot * amount[:, None], 0, C.INVENTORY_MAX)


def do_action(
    config: WorldConfig,
    state: CraftState,
    doing: jax.Array,
    sapling_roll: jax.Array,
    rules: DoRules,
) -> CraftState:
    """Apply DO for agents where `doing` `(P,)`; `sapling_roll` are uniforms `(P,)`.

    `rules` may raise each agent's sword damage to a floor, then scale it, replace the
    summed damage of a mob's hitters, and share out the food of a cow or a plant
    (rounded down).
    """
    agents, mobs, world = state.agents, state.mobs, state.map
    num_agents = config.num_agents
    target = facing_target(state)
    material = read_tiles(world, target)

    # Teammates first: a standing agent blocks the DO, a downed one is revived.
    facing_agent = agent_blocking(state, target) & ~jnp.eye(num_agents, dtype=bool)
    doing_agent = doing & jnp.any(facing_agent, axis=1)
    revived = jnp.any(doing_agent[:, None] & facing_agent, axis=0) & (agents.status == C.DOWNED)
    status = jnp.where(revived, C.ALIVE, agents.status)
    stats = agents.stats.at[:, C.HEALTH].set(jnp.where(revived, 1, agents.stats[:, C.HEALTH]))
    counters = jnp.where(revived[:, None], 0, agents.counters)

    # Then mobs: damage adds up over hitters.
    facing_mob = mob_at(state, target)
    hitting = doing & ~doing_agent & jnp.any(facing_mob, axis=1)
    hits = facing_mob & hitting[:, None]
    strength = melee_damage(agents.inventory)
    if rules.melee_floor is not None:
        strength = jnp.maximum(strength, rules.melee_floor)
    if rules.melee_factor is not None:
        strength = strength * rules.melee_factor
    if rules.mob_damage is None:
        damage = jnp.sum(hits * strength[:, None], axis=0)
    else:
        damage = rules.mob_damage(hits, strength)
    mob_health = mobs.health - damage
    killed = mobs.alive & (damage > 0) & (mob_health <= 0)
    kinds = jnp.asarray(config.mob_kinds())
    killer = hits & killed[None, :]
    achievements = agents.achievements
    for kind, name in ((C.ZOMBIE, "defeat_zombie"), (C.SKELETON, "defeat_skeleton")):
        credited = jnp.any(killer & (kinds == kind)[None, :], axis=1)
        achievements = achievements.at[:, C.ACHIEVEMENT_INDEX[name]].max(credited)
    ate_cow = jnp.any(killer & (kinds == C.COW)[None, :], axis=1)
    achievements = achievements.at[:, C.ACHIEVEMENT_INDEX["eat_cow"]].max(ate_cow)

    # Then materials.
    on_material = doing & ~doing_agent & ~hitting & in_bounds(target, config.map_size)
    tool = jnp.asarray(C.COLLECT_TOOL)[material]
    has_tool = (tool < 0) | (jnp.take_along_axis(agents.inventory, tool[:, None], 1)[:, 0] > 0)
    item = jnp.asarray(C.COLLECT_ITEM)[material]
    lucky = (material != C.GRASS) | (sapling_roll < C.SAPLING_PROBABILITY)
    collecting = on_material & (item >= 0) & has_tool & lucky
    leaves = jnp.asarray(C.COLLECT_LEAVES)[material]
    consumes = leaves != material
    collects = jnp.where(consumes, first_claim(collecting & consumes, target), collecting)
    inventory = add_items(agents.inventory, jnp.where(collects, item, -1), jnp.ones_like(item))
    world = write_tiles(world, target, leaves, collects & consumes)
    drinking = on_material & (material == C.WATER)
    eating_plant = first_claim(on_material & (material == C.RIPE_PLANT), target)
    achievements = unlock(
        achievements, jnp.asarray(C.COLLECT_ACHIEVEMENT)[material], collects | drinking
    )
    achievements = achievements.at[:, C.ACHIEVEMENT_INDEX["eat_plant"]].max(eating_plant)
    world = write_tiles(world, target, jnp.full_like(material, C.SAPLING), eating_plant)
    eaten_plant = (
        jnp.any(same_tile(state.plants.position, target) & eating_plant[None, :], axis=1)
        & state.plants.alive
    )

    eaten = C.FOOD_PER_COW * ate_cow + C.FOOD_PER_PLANT * eating_plant
    if rules.food_share is not None:
        eaten = jnp.floor(eaten * rules.food_share).astype(jnp.int32)
    food = stats[:, C.FOOD] + eaten
    drink = stats[:, C.DRINK] + C.DRINK_PER_SIP * drinking
    stats = stats.at[:, C.FOOD].set(food).at[:, C.DRINK].set(drink)
    counters = counters.at[:, C.HUNGER].set(jnp.where(ate_cow, 0, counters[:, C.HUNGER]))
    counters = counters.at[:, C.THIRST].set(jnp.where(drinking, 0, counters[:, C.THIRST]))
    return state.replace(
        map=world,
        agents=agents.replace(
            stats=jnp.clip(stats, 0, C.STAT_MAX),
            counters=counters,
            inventory=inventory,
            status=status,
            achievements=achievements,
        ),
        mobs=mobs.replace(health=mob_health, alive=mobs.alive & ~killed),
        plants=state.plants.replace(grown=jnp.where(eaten_plant, 0, state.plants.grown)),
    )


def near_stations(state: CraftState) -> tuple[jax.Array, jax.Array]:
    """Whether a table / a furnace lies within NEARBY_RADIUS of each agent, `(P,)` each."""
    around = nearby_materials(state.map, state.agents.position, C.NEARBY_RADIUS)
    return jnp.any(around == C.TABLE, axis=1), jnp.any(around == C.FURNACE, axis=1)


def place_valid(config: WorldConfig, state: CraftState) -> jax.Array:
    """`(P, 4)` bool: each place action (stone, table, furnace, plant) would succeed."""
    target = facing_target(state)
    material = read_tiles(state.map, target)
    item_count = state.agents.inventory[:, jnp.asarray(C.PLACE_ITEM)]
    affordable = item_count >= jnp.asarray(C.PLACE_COST)[None, :]
    where_ok = jnp.asarray(C.PLACE_WHERE)[:, material].T
    free = ~jnp.any(agent_blocking(state, target), axis=1) & ~jnp.any(mob_at(state, target), 1)
    near_table, _ = near_stations(state)
    station_ok = ~jnp.asarray(C.PLACE_NEEDS_TABLE)[None, :] | near_table[:, None]
    plant_room = jnp.any(~state.plants.alive)
    room = jnp.array([True, True, True, False]) | plant_room
    return affordable & where_ok & free[:, None] & station_ok & room[None, :]


def make_valid(state: CraftState) -> jax.Array:
    """`(P, 6)` bool: each make action would succeed."""
    costs = jnp.asarray(C.MAKE_COST)
    affordable = jnp.all(state.agents.inventory[:, None, :] >= costs[None, :, :], axis=-1)
    near_table, near_furnace = near_stations(state)
    furnace_ok = ~jnp.asarray(C.MAKE_NEEDS_FURNACE)[None, :] | near_furnace[:, None]
    return affordable & near_table[:, None] & furnace_ok


def legal_actions(config: WorldConfig, state: CraftState) -> jax.Array:
    """`(P, NUM_ACTIONS)` bool: Crafter's actions that would do something (for agents
    that stand and are awake; noop, moves and DO always count)."""
    always = (
        jnp.zeros((C.NUM_ACTIONS,), bool)
        .at[jnp.array([C.NOOP, C.MOVE_LEFT, C.MOVE_RIGHT, C.MOVE_UP, C.MOVE_DOWN, C.DO])]
        .set(True)
    )
    can_sleep = state.agents.stats[:, C.ENERGY] < C.STAT_MAX
    return jnp.concatenate(
        [
            jnp.broadcast_to(always[: C.SLEEP], (config.num_agents, C.SLEEP)),
            can_sleep[:, None],
            place_valid(config, state),
            make_valid(state),
        ],
        axis=1,
    )


def place_action(config: WorldConfig, state: CraftState, actions: jax.Array) -> CraftState:
    """Apply the place actions `(P,)` (others are ignored)."""
    agents = state.agents
    kind = jnp.clip(actions - C.PLACE_STONE, 0, len(C.PLACE_ACTIONS) - 1)
    wants = (actions >= C.PLACE_STONE) & (actions <= C.PLACE_PLANT)
    valid = jnp.take_along_axis(place_valid(config, state), kind[:, None], 1)[:, 0]
    target = facing_target(state)
    placing = first_claim(wants & valid, target)

    # Plants take the free slots of the plant table in agent order.
    planting = placing & (kind == C.PLACE_PLANT - C.PLACE_STONE)
    free_slots = free_slots_first(state.plants.alive)
    rank = jnp.cumsum(planting) - 1
    slot_free = ~state.plants.alive[free_slots[jnp.clip(rank, 0, None)]]
    placing &= ~planting | slot_free
    planting &= slot_free
    slot = jnp.where(planting, free_slots[jnp.clip(rank, 0, None)], config.plant_slots)
    plants = state.plants.replace(
        position=state.plants.position.at[slot].set(target, mode="drop"),
        grown=state.plants.grown.at[slot].set(0, mode="drop"),
        alive=state.plants.alive.at[slot].set(True, mode="drop"),
    )

    item = jnp.asarray(C.PLACE_ITEM)[kind]
    cost = jnp.asarray(C.PLACE_COST)[kind]
    inventory = add_items(agents.inventory, jnp.where(placing, item, -1), -cost)
    world = write_tiles(state.map, target, jnp.asarray(C.PLACE_RESULT)[kind], placing)
    achievements = unlock(agents.achievements, jnp.asarray(C.PLACE_ACHIEVEMENT)[kind], placing)
    return state.replace(
        map=world,
        plants=plants,
        agents=agents.replace(inventory=inventory, achievements=achievements),
    )


def make_action(state: CraftState, actions: jax.Array) -> CraftState:
    """Apply the make actions `(P,)` (others are ignored)."""
    agents = state.agents
    kind = jnp.clip(actions - C.MAKE_WOOD_PICKAXE, 0, len(C.MAKE_ACTIONS) - 1)
    wants = (actions >= C.MAKE_WOOD_PICKAXE) & (actions <= C.MAKE_IRON_SWORD)
    making = wants & jnp.take_along_axis(make_valid(state), kind[:, None], 1)[:, 0]
    cost = jnp.asarray(C.MAKE_COST)[kind] * making[:, None]
    inventory = add_items(
        agents.inventory - cost,
        jnp.where(making, jnp.asarray(C.MAKE_ITEM)[kind], -1),
        jnp.ones_like(kind),
    )
    achievements = unlock(agents.achievements, jnp.asarray(C.MAKE_ACHIEVEMENT)[kind], making)
    return state.replace(agents=agents.replace(inventory=inventory, achievements=achievements))
