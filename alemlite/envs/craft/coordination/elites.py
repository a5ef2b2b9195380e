"""Elite zombies and skeletons and large cows (see constants: ELITE_*).

A mob's elite kind is drawn whenever its slot fills (at generation and at spawn) and
lives in `CoordinationState.mob_elite`; elites start with ELITE_HEALTH_FACTOR times
the health. Damage from the agents hitting one mob on one step: a normal mob takes
the sum; an elite takes double the sum when two or more agents hit it, else half
(soft) or nothing (hard).
"""

from __future__ import annotations

from dataclasses import replace

import jax
import jax.numpy as jnp

from alemlite.core import threefry
from alemlite.envs.craft import constants as C
from alemlite.envs.craft.config import CraftConfig, CraftParams
from alemlite.envs.craft.coordination import constants as L
from alemlite.envs.craft.coordination.part import Draws, Part, Turn
from alemlite.envs.craft.world.gathering import mob_at
from alemlite.envs.craft.world.observation import entity_planes
from alemlite.envs.craft.world.rendering import Marks
from alemlite.envs.craft.world.rules import DoRules
from alemlite.envs.craft.world.state import CraftState

RANDOM_DRAWS = 2  # per mob slot: elite or not, hard or soft
CHANNELS = 2  # window channels: soft, hard


def draw_elite(config: CraftConfig, uniform: jax.Array) -> jax.Array:
    """Elite kind `(N,)` int8 for every mob slot from uniforms `(N, 2)`."""
    probability = jnp.asarray(L.ELITE_PROBABILITY)[jnp.asarray(config.mob_kinds())]
    elite = uniform[:, 0] < probability
    hard = uniform[:, 1] < L.ELITE_HARD_SHARE
    return jnp.where(elite, jnp.where(hard, L.ELITE_HARD, L.ELITE_SOFT), L.ELITE_NONE).astype(
        jnp.int8
    )


def refill(
    config: CraftConfig,
    mob_elite: jax.Array,
    health: jax.Array,
    filled: jax.Array,
    uniform: jax.Array,
) -> tuple[jax.Array, jax.Array]:
    """New elite kinds and health for the slots that just `filled` `(N,)`."""
    drawn = draw_elite(config, uniform)
    mob_elite = jnp.where(filled, drawn, mob_elite)
    boosted = jnp.where(filled & (drawn != L.ELITE_NONE), health * L.ELITE_HEALTH_FACTOR, health)
    return mob_elite, boosted


def damage_rule(mob_elite: jax.Array):
    """A `(hits (P, N), strength (P,)) -> damage (N,)` rule for `do_action`."""

    def damage(hits: jax.Array, strength: jax.Array) -> jax.Array:
        total = jnp.sum(hits * strength[:, None], axis=0)
        together = jnp.sum(hits, axis=0) >= 2
        alone = jnp.where(mob_elite == L.ELITE_SOFT, total // 2, 0)
        return jnp.where(mob_elite == L.ELITE_NONE, total, jnp.where(together, 2 * total, alone))

    return damage


def credit_kills(config: CraftConfig, turn: Turn, state: CraftState) -> CraftState:
    """`defeat_elite` / `eat_large_cow` for every hitter of a killed elite; more food."""
    mobs_before = turn.before.mobs
    elite = state.coordination.mob_elite != L.ELITE_NONE
    killed = mobs_before.alive & ~state.mobs.alive & elite
    hits = mob_at(turn.before, turn.target) & turn.doing[:, None]
    cow = jnp.asarray(config.mob_kinds()) == C.COW
    ate_large = jnp.any(hits & (killed & cow)[None, :], axis=1)
    defeated = jnp.any(hits & (killed & ~cow)[None, :], axis=1)
    share = 1.0 if turn.rules.food_share is None else turn.rules.food_share
    extra = jnp.floor(C.FOOD_PER_COW * share * ate_large).astype(jnp.int32)
    agents = state.agents
    stats = agents.stats.at[:, C.FOOD].set(jnp.minimum(agents.stats[:, C.FOOD] + extra, C.STAT_MAX))
    coordination = state.coordination
    achievements = (
        coordination.achievements.at[:, L.COORDINATION_INDEX["defeat_elite"]]
        .max(defeated)
        .at[:, L.COORDINATION_INDEX["eat_large_cow"]]
        .max(ate_large)
    )
    return state.replace(
        agents=agents.replace(stats=stats),
        coordination=coordination.replace(achievements=achievements),
    )


def refill_filled(
    config: CraftConfig, state: CraftState, filled: jax.Array, uniform: jax.Array
) -> CraftState:
    """Draw the elite kind (and boost the health) of the mob slots that `filled` `(N,)`."""
    mob_elite, health = refill(
        config, state.coordination.mob_elite, state.mobs.health, filled, uniform
    )
    return state.replace(
        mobs=state.mobs.replace(health=health),
        coordination=state.coordination.replace(mob_elite=mob_elite),
    )


class Elites(Part):
    """Elite zombies and skeletons and large cows, which reward hitting together."""

    window_channels = CHANNELS
    achievements = ("defeat_elite", "eat_large_cow")

    @staticmethod
    def enabled(config: CraftConfig) -> bool:
        return config.has_elites

    @staticmethod
    def random_shapes(config: CraftConfig) -> dict[str, tuple[int, ...]]:
        return {"elite": (config.num_mobs, RANDOM_DRAWS)}

    def generate(self, key: jax.Array, state: CraftState) -> CraftState:
        draws = threefry.uniform(threefry.fold_in(key, 2), (self.config.num_mobs, RANDOM_DRAWS))
        return refill_filled(self.config, state, state.mobs.alive, draws)

    def do_rules(self, state: CraftState, params: CraftParams, rules: DoRules) -> DoRules:
        return replace(rules, mob_damage=damage_rule(state.coordination.mob_elite))

    def after_do(self, turn: Turn, state: CraftState, params: CraftParams, draws: Draws):
        return credit_kills(self.config, turn, state)

    def after_spawn(self, state: CraftState, spawned: jax.Array, draws: Draws) -> CraftState:
        return refill_filled(self.config, state, spawned, draws["elite"])

    def window_planes(self, state: CraftState, params: CraftParams) -> jax.Array:
        mobs = state.mobs
        elite = state.coordination.mob_elite.astype(jnp.int32)
        present = mobs.alive & (elite != L.ELITE_NONE)
        return entity_planes(
            self.config, state.agents.position, mobs.position, present, elite - 1, CHANNELS
        )

    def marks(self, state: CraftState, rows: jax.Array, cols: jax.Array, marks: Marks) -> Marks:
        mobs = state.mobs
        at_mob = (
            (mobs.position[:, 0, None, None] == rows[None])
            & (mobs.position[:, 1, None, None] == cols[None])
            & mobs.alive[:, None, None]
        )
        elite = state.coordination.mob_elite.astype(jnp.int32)[jnp.argmax(at_mob, axis=0)]
        elite = jnp.where(jnp.any(at_mob, axis=0), elite, L.ELITE_NONE)
        return marks._replace(
            frame=elite > 0, frame_colour=jnp.asarray(L.ELITE_FRAME_COLOURS)[elite]
        )
