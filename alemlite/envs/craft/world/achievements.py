"""Reward from newly unlocked achievements and health, and episode metrics."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from alemlite.envs.craft import constants as C
from alemlite.envs.craft.world.config import WorldParams
from alemlite.envs.craft.world.state import AgentState, CraftState


def shared(per_agent: jax.Array, params: WorldParams) -> jax.Array:
    """`per_agent` rewards `(P,)`, or their team mean for everyone if rewards are shared."""
    return jnp.where(
        params.shared_reward, jnp.mean(per_agent) * jnp.ones_like(per_agent), per_agent
    )


def reward(before: AgentState, after: AgentState, params: WorldParams) -> jax.Array:
    """Per agent: weights of new achievements + scale * change in health; team mean if shared."""
    new = after.achievements & ~before.achievements
    achievement_reward = new.astype(jnp.float32) @ params.achievement_weights
    health_change = (after.stats[:, C.HEALTH] - before.stats[:, C.HEALTH]).astype(jnp.float32)
    return shared(achievement_reward + params.health_reward_scale * health_change, params)


def achievement_score(state: CraftState, params: WorldParams) -> tuple[jax.Array, jax.Array]:
    """Each agent's achievement reward so far `(P,)` and the most there is `()`."""
    unlocked = state.agents.achievements.astype(jnp.float32)
    weights = params.achievement_weights
    return unlocked @ weights, jnp.sum(weights)


def episode_metrics(
    state: CraftState, earned: jax.Array, maximum: jax.Array
) -> dict[str, jax.Array]:
    """Normalised return, team achievement %, per-achievement success (any agent), survivors.

    Normalised return: the `earned` achievement reward `(P,)` as a percentage of the
    `maximum` (every achievement unlocked; `achievement_score`, plus a layer's own),
    averaged over agents.
    """
    agents = state.agents
    team = jnp.any(agents.achievements, axis=0).astype(jnp.float32)
    metrics = {
        "normalised_return": 100.0 * jnp.mean(earned) / maximum,
        "team_achievement_percent": 100.0 * jnp.mean(team),
        "agents_alive": jnp.mean((agents.status != C.DEAD).astype(jnp.float32)),
    }
    for index, name in enumerate(C.ACHIEVEMENTS):
        metrics[f"achievement/{name}"] = team[index]
    return metrics
