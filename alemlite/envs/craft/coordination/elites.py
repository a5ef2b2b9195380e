"""Elite zombies and skeletons and large cows (see constants: ELITE_*).

A mob's elite kind is drawn whenever its slot fills (at generation and at spawn) and
lives in `CoordinationState.mob_elite`; elites start with ELITE_HEALTH_FACTOR times
the health. Damage from the agents hitting one mob on one step: a normal mob takes
the sum; an elite takes double the sum when two or more agents hit it, else half
(soft) or nothing (hard).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from alemlite.envs.craft import constants as C
from alemlite.envs.craft.config import CraftConfig

RANDOM_DRAWS = 2  # per mob slot: elite or not, hard or soft


def draw_elite(config: CraftConfig, uniform: jax.Array) -> jax.Array:
    """Elite kind `(N,)` int8 for every mob slot from uniforms `(N, 2)`."""
    probability = jnp.asarray(C.ELITE_PROBABILITY)[jnp.asarray(config.mob_kinds())]
    elite = uniform[:, 0] < probability
    hard = uniform[:, 1] < C.ELITE_HARD_SHARE
    return jnp.where(elite, jnp.where(hard, C.ELITE_HARD, C.ELITE_SOFT), C.ELITE_NONE).astype(
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
    boosted = jnp.where(filled & (drawn != C.ELITE_NONE), health * C.ELITE_HEALTH_FACTOR, health)
    return mob_elite, boosted


def damage_rule(mob_elite: jax.Array):
    """A `(hits (P, N), strength (P,)) -> damage (N,)` rule for `do_action`."""

    def damage(hits: jax.Array, strength: jax.Array) -> jax.Array:
        total = jnp.sum(hits * strength[:, None], axis=0)
        together = jnp.sum(hits, axis=0) >= 2
        alone = jnp.where(mob_elite == C.ELITE_SOFT, total // 2, 0)
        return jnp.where(mob_elite == C.ELITE_NONE, total, jnp.where(together, 2 * total, alone))

    return damage
