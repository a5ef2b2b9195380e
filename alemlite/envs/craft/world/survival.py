"""Survival stats, sleep and the downed / revive / death cycle (Crafter's Player).

Counters are in half units (see constants): sleeping adds 1 instead of 2 to hunger
and thirst, lowers fatigue, and doubles recovery.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from alemlite.envs.craft import constants as C
from alemlite.envs.craft.world.config import WorldParams
from alemlite.envs.craft.world.rules import LifeRules
from alemlite.envs.craft.world.state import AgentState


def start_sleep_or_wake(agents: AgentState, actions: jax.Array) -> tuple[AgentState, jax.Array]:
    """Crafter's sleep handling at the start of a step.

    A sleeping agent with full energy wakes up (and unlocks `wake_up`), otherwise
    it keeps sleeping and its action is replaced by noop. SLEEP with energy below
    the maximum falls asleep. Returns the agents and the effective actions.
    """
    rested = agents.sleeping & (agents.stats[:, C.ENERGY] >= C.STAT_MAX)
    still_sleeping = agents.sleeping & ~rested
    actions = jnp.where(still_sleeping, C.NOOP, actions)
    falls_asleep = (actions == C.SLEEP) & (agents.stats[:, C.ENERGY] < C.STAT_MAX)
    achievements = agents.achievements.at[:, C.ACHIEVEMENT_INDEX["wake_up"]].max(rested)
    agents = agents.replace(sleeping=still_sleeping | falls_asleep, achievements=achievements)
    return agents, actions


def update_life_stats(agents: AgentState, rules: LifeRules) -> AgentState:
    """Hunger, thirst, fatigue and health recovery for standing agents.

    `rules.reserve` multiplies the hunger and thirst limits (food and drink last that
    many times as long); a sleeper rests and recovers `rules.rest_boost` times as fast.
    """
    alive = agents.status == C.ALIVE
    sleeping = agents.sleeping
    stats, counters = agents.stats, agents.counters
    tick = jnp.where(sleeping, C.HALF // 2, C.HALF)
    reserve = 1 if rules.reserve is None else rules.reserve
    boost = 1 if rules.rest_boost is None else rules.rest_boost

    hunger = counters[:, C.HUNGER] + tick
    hungry = hunger > C.HUNGER_LIMIT * reserve
    thirst = counters[:, C.THIRST] + tick
    thirsty = thirst > C.THIRST_LIMIT * reserve
    fatigue = jnp.where(
        sleeping,
        jnp.minimum(counters[:, C.FATIGUE] - C.HALF * boost, 0),
        counters[:, C.FATIGUE] + C.HALF,
    )
    rested = fatigue < C.REST_LIMIT
    tired = fatigue > C.FATIGUE_LIMIT
    food = stats[:, C.FOOD] - hungry
    drink = stats[:, C.DRINK] - thirsty
    energy = stats[:, C.ENERGY] + rested - tired

    necessities = (food > 0) & (drink > 0) & ((energy > 0) | sleeping)
    recover = counters[:, C.RECOVER] + jnp.where(
        necessities,
        jnp.where(sleeping, 2 * C.HALF * boost, C.HALF),
        jnp.where(sleeping, -1, -C.HALF),
    )
    heal = recover > C.RECOVER_LIMIT
    hurt = recover < C.DEGEN_LIMIT
    health = stats[:, C.HEALTH] + heal - hurt

    new_counters = jnp.stack(
        [
            jnp.where(hungry, 0, hunger),
            jnp.where(thirsty, 0, thirst),
            jnp.where(rested | tired, 0, fatigue),
            jnp.where(heal | hurt, 0, recover),
        ],
        axis=1,
    )
    new_stats = jnp.clip(jnp.stack([health, food, drink, energy], axis=1), 0, C.STAT_MAX)
    return agents.replace(
        stats=jnp.where(alive[:, None], new_stats, stats),
        counters=jnp.where(alive[:, None], new_counters, counters),
    )


def settle_health(agents: AgentState, health_before: jax.Array, params: WorldParams) -> AgentState:
    """Wake the hurt, down those at zero health, and let unrevived downed agents die.

    A downed agent waits `revive_window` steps (counting the step it fell) for a
    teammate's DO; then it is dead for the rest of the episode.
    """
    health = agents.stats[:, C.HEALTH]
    sleeping = agents.sleeping & (health >= health_before)
    was_downed = agents.status == C.DOWNED
    timer = jnp.where(was_downed, agents.downed_timer - 1, agents.downed_timer)
    falls = (agents.status == C.ALIVE) & (health <= 0)
    timer = jnp.where(falls, params.revive_window - 1, timer)
    status = jnp.where(falls, C.DOWNED, agents.status)
    status = jnp.where((status == C.DOWNED) & (timer < 0), C.DEAD, status)
    return agents.replace(
        stats=agents.stats.at[:, C.HEALTH].set(jnp.maximum(health, 0)),
        sleeping=sleeping & (status == C.ALIVE),
        status=status,
        downed_timer=jnp.maximum(timer, 0),
    )
