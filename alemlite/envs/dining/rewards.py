"""Rewards: `shaped` (dense, per philosopher) and `paper` (one four-term score at the end).

shaped, per step and philosopher: +1 for its own meal; `-deadlock_penalty` for
everyone when the table deadlocks; at episode end `-starvation_penalty` for
each philosopher with zero meals and `fairness_bonus * fairness * own meals`,
so fairness pays only in proportion to meals eaten (all-WAIT earns none of it).

paper, at episode end only, the same to every philosopher:
`w_meals * total meals / max_meals + w_safe * [no deadlock] + w_fair * fairness
+ w_valid * valid-action rate`. All-WAIT scores `w_safe + w_fair + w_valid`
(0.75 with the default weights) without a single meal: the degenerate maximum
of the published score, kept on purpose.

With `shared`, every active philosopher gets the table mean instead.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from alemlite.envs.dining.config import DiningParams
from alemlite.metrics import fairness


def shaped_rewards(
    ate: jax.Array,
    meals: jax.Array,
    deadlock_now: jax.Array,
    done: jax.Array,
    fairness: jax.Array,
    active: jax.Array,
    params: DiningParams,
) -> jax.Array:
    at_end = jnp.where(
        done,
        params.fairness_bonus * fairness * meals - params.starvation_penalty * (meals == 0),
        0.0,
    )
    reward = ate.astype(jnp.float32) - params.deadlock_penalty * deadlock_now + at_end
    return jnp.where(active, reward, 0.0)


def paper_score(
    meals_total: jax.Array,
    max_meals: jax.Array,
    deadlocked: jax.Array,
    fairness: jax.Array,
    valid_action_rate: jax.Array,
    params: DiningParams,
) -> jax.Array:
    meal_term = jnp.where(max_meals > 0, meals_total / jnp.maximum(max_meals, 1), 0.0)
    return (
        params.paper_meals_weight * meal_term
        + params.paper_safety_weight * (~deadlocked)
        + params.paper_fairness_weight * fairness
        + params.paper_validity_weight * valid_action_rate
    )


def paper_rewards(score: jax.Array, done: jax.Array, active: jax.Array) -> jax.Array:
    return jnp.where(active & done, score, 0.0)


def share_if(shared: jax.Array, rewards: jax.Array, active: jax.Array) -> jax.Array:
    """The table mean over active seats for everyone when `shared`, else unchanged."""
    mean = jnp.sum(rewards) / jnp.maximum(active.sum(), 1)
    return jnp.where(shared, jnp.where(active, mean, 0.0), rewards)


def shaped_ceiling(params: DiningParams, max_meals: int) -> float:
    """An upper bound on the mean `shaped` return per philosopher of a full table of
    `params.num_philosophers` that eats at most `max_meals` meals (`DiningEnv.max_meals`).

    For M meals the split as even as integers allow has the highest fairness (moving a meal
    from a richer to a poorer seat lowers the Gini), so the table earns at most
    `(1 + fairness_bonus * fairness) * M / N`; penalties (taken as non-negative) only lower
    it. The bound is the largest over M <= max_meals. At N = 5, T = 30 it is 8.60 (29 meals
    shared 6, 6, 6, 6, 5), which trained teams reach.
    """
    seats = int(params.num_philosophers)
    meals = np.arange(max_meals + 1)[:, None]
    even_splits = meals // seats + (np.arange(seats)[None, :] < meals % seats)
    shares = jax.vmap(fairness, in_axes=(0, None))(
        jnp.asarray(even_splits, jnp.float32), jnp.ones(seats, bool)
    )
    earned = (1.0 + params.fairness_bonus * shares) * meals[:, 0] / seats
    return float(earned.max())
