"""Drink, food and sleep. The forager keeps its drink high as the team's supply and hunts
(it eats cows in full); the others request drink and food and fetch their own only when
nobody can spare any. The tired sleep, beside the shelter when it is near."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from alemlite.envs.craft import constants as C
from alemlite.envs.craft.coordination import constants as L
from alemlite.envs.craft.team_policy.sharing import Sharing, may_request, open_request
from alemlite.envs.craft.team_policy.tuning import (
    ASK_DRINK,
    ASK_FOOD,
    DRINK_REQUEST,
    FAR,
    FOOD_REQUEST,
    FORAGER_HUNTS,
    FORAGER_THIRSTY,
    FORAGER_URGENT,
    HOLDS,
    HUNGRY,
    MINER_HUNGRY,
    NIGHT,
    RALLY_RADIUS,
    SLEEPY,
    THIRSTY,
    URGENT,
    WELL_ENOUGH,
    WOUNDED,
)
from alemlite.envs.craft.team_policy.view import TeamView
from alemlite.envs.craft.world.gathering import melee_damage
from alemlite.envs.craft.world.mobs import daylight


class Urgency(NamedTuple):
    hunt_below: jax.Array  # (P,) food at or below which the agent hunts
    dry: jax.Array  # (P,) bool: drink comes before projects and rallies
    starving: jax.Array  # (P,) bool: food does
    own_needs: jax.Array  # (P,) bool: needs that keep a member from a meeting


def urgency(view: TeamView) -> Urgency:
    """Agents with urgent needs of their own: they sleep, drink or eat before anything else."""
    forager, drink = view.forager, view.drink
    hunt_below = jnp.select([view.miner, forager], [MINER_HUNGRY, FORAGER_HUNTS], HUNGRY)
    dry = drink <= jnp.where(forager, FORAGER_URGENT, URGENT)
    starving = view.food <= URGENT
    # A meeting at a site takes a few dozen steps: members go on with it hungry or
    # thirsty while their health holds.
    own_needs = (
        ~view.able
        | (view.energy <= SLEEPY)
        | ((dry | starving) & (view.stats[:, C.HEALTH] <= HOLDS))
    )
    return Urgency(hunt_below, dry, starving, own_needs)


class Drinking(NamedTuple):
    ask: jax.Array  # (P,) bool: request drink from a teammate
    go: jax.Array  # (P,) bool: walk to water and drink
    urgently: jax.Array  # (P,) bool: before projects and rallies


def drink(view: TeamView, sharing: Sharing, dry: jax.Array) -> Drinking:
    """Ask a teammate for drink, else walk to water (before projects and rallies when `dry`)."""
    level = view.drink
    drinks_well = view.chance[:, C.WATER] >= WELL_ENOUGH
    at_water = (view.facing_material == C.WATER) & (level < C.STAT_MAX) & drinks_well
    drink_request = jnp.full((view.num_agents,), DRINK_REQUEST)
    ask = ~view.forager & (level <= ASK_DRINK) & ~at_water
    ask &= may_request(view, sharing, drink_request)
    go = (level <= jnp.where(view.forager, FORAGER_THIRSTY, THIRSTY)) | at_water
    go &= ~ask & ~open_request(view, sharing, drink_request)
    return Drinking(ask=ask, go=go, urgently=go & (dry | at_water))


class Eating(NamedTuple):
    cows: jax.Array  # (P, N) bool: cows each agent can kill alone
    ask: jax.Array  # (P,) bool: request food from a teammate
    go: jax.Array  # (P,) bool: hunt or pick a ripe plant
    urgently: jax.Array  # (P,) bool: before projects and rallies


def eat(view: TeamView, sharing: Sharing, urgent: Urgency) -> Eating:
    """Ask a teammate for food, else hunt a cow the agent can kill alone or pick a plant."""
    mobs, elite, food = view.state.mobs, view.elite, view.food
    # A soft large cow takes half damage from a lone hunter (none from a 1-damage hitter);
    # a hard one none: hunt what each agent can kill alone.
    strength = melee_damage(view.inventory) * jnp.where(
        view.role == L.WARRIOR, L.WARRIOR_DAMAGE_FACTOR, 1
    )
    killable = (elite[None, :] == L.ELITE_NONE) | (
        (elite[None, :] == L.ELITE_SOFT) & (strength[:, None] >= 2)
    )
    cows = (view.kinds == C.COW)[None, :] & mobs.alive[None, :] & killable  # (P, N)
    facing_cow = jnp.any(view.facing_mobs & cows, axis=1)
    ripe = jnp.any(view.state.map == C.RIPE_PLANT)
    food_found = jnp.any(cows, axis=1) | ripe
    hungry = (food <= urgent.hunt_below) | (facing_cow & (food < C.STAT_MAX - 1))
    food_request = jnp.full((view.num_agents,), FOOD_REQUEST)
    ask = (food <= ASK_FOOD) & ~facing_cow & may_request(view, sharing, food_request)
    go = hungry & ~ask & ~open_request(view, sharing, food_request) & food_found
    return Eating(cows=cows, ask=ask, go=go, urgently=go & (urgent.starving | facing_cow))


class Rest(NamedTuple):
    sleep_now: jax.Array  # (P,) bool: sleep where it stands
    seek_shelter: jax.Array  # (P,) bool: walk to the shelter to sleep there
    tired: jax.Array  # (P,) bool: tired or wounded
    night_rest: jax.Array  # (P,) bool: rest beside the shelter for the night
    by_shelter: jax.Array  # (P,) bool
    shelter: jax.Array  # (2,) the shelter's tile


def rest(view: TeamView) -> Rest:
    """Beside a shelter zombies cannot hurt a sleeper. The tired sleep there when it is near
    (else where they stand), the wounded wherever it is; at night, once a meeting at a site
    is over, the team rests there as soon as it is a little tired."""
    num_agents, energy = view.num_agents, view.energy
    if view.config.has_construction:
        sites = view.state.coordination.sites
        shelter = sites.building == L.SHELTER_KIND
        shelter_gap = jnp.max(
            jnp.abs(view.position[:, None, :] - sites.position.astype(jnp.int32)[None]), axis=-1
        )
        by_shelter = jnp.any(shelter[None, :] & (shelter_gap <= 1), axis=1)
        shelter_distance = jnp.min(jnp.where(shelter[None, :], shelter_gap, FAR), axis=1)
        shelter_point = sites.position[jnp.argmax(shelter)].astype(jnp.int32)
    else:
        by_shelter = jnp.zeros((num_agents,), bool)
        shelter_distance = jnp.full((num_agents,), FAR)
        shelter_point = jnp.zeros((2,), jnp.int32)
    can_sleep = view.mask[:, C.SLEEP]
    near_shelter = shelter_distance <= 2 * RALLY_RADIUS
    wounded = (view.stats[:, C.HEALTH] <= WOUNDED) & (shelter_distance < FAR) & can_sleep
    tired = ((energy <= SLEEPY) & can_sleep) | wounded
    seek_shelter = tired & ~by_shelter & (near_shelter | wounded) & (energy > 0)
    night = daylight(view.state.step, view.params.day_length) < NIGHT
    return Rest(
        sleep_now=tired & ~seek_shelter,
        seek_shelter=seek_shelter,
        tired=tired,
        night_rest=night & (energy < C.STAT_MAX - 1) & near_shelter & can_sleep,
        by_shelter=by_shelter,
        shelter=shelter_point,
    )
