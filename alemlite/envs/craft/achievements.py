"""Reward from newly unlocked achievements and health, and episode metrics."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from alemlite.envs.craft import constants as C
from alemlite.envs.craft.config import CraftParams
from alemlite.envs.craft.state import AgentState


def reward(before: AgentState, after: AgentState, params: CraftParams) -> jax.Array:
    """Per agent: weights of new achievements + scale * change in health; team mean if shared."""
    new = after.achievements & ~before.achievements
    achievement_reward = new.astype(jnp.float32) @ params.achievement_weights
    health_change = (after.stats[:, C.HEALTH] - before.stats[:, C.HEALTH]).astype(jnp.float32)
    per_agent = achievement_reward + params.health_reward_scale * health_change
    return jnp.where(
        params.shared_reward, jnp.mean(per_agent) * jnp.ones_like(per_agent), per_agent
    )


def episode_metrics(agents: AgentState, params: CraftParams) -> dict[str, jax.Array]:
    """Normalised return, team achievement %, per-achievement success (any agent), survivors.

    Normalised return: each agent's achievement reward as a percentage of the
    maximum (every achievement unlocked), averaged over agents.
    """
    weights = params.achievement_weights
    unlocked = agents.achievements.astype(jnp.float32)
    team = jnp.any(agents.achievements, axis=0).astype(jnp.float32)
    metrics = {
        "normalised_return": 100.0 * jnp.mean(unlocked @ weights) / jnp.sum(weights),
        "team_achievement_percent": 100.0 * jnp.mean(team),
        "agents_alive": jnp.mean((agents.status != C.DEAD).astype(jnp.float32)),
    }
    for index, name in enumerate(C.ACHIEVEMENTS):
        metrics[f"achievement/{name}"] = team[index]
    return metrics
