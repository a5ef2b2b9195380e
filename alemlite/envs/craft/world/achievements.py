"""Reward from newly unlocked achievements and health, and episode metrics."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from alemlite.envs.craft import constants as C
from alemlite.envs.craft.config import CraftConfig, CraftParams
from alemlite.envs.craft.world.state import AgentState, CoordinationState, CraftState


def _shared(per_agent: jax.Array, params: CraftParams) -> jax.Array:
    return jnp.where(
        params.shared_reward, jnp.mean(per_agent) * jnp.ones_like(per_agent), per_agent
    )


def reward(before: AgentState, after: AgentState, params: CraftParams) -> jax.Array:
    """Per agent: weights of new achievements + scale * change in health; team mean if shared."""
    new = after.achievements & ~before.achievements
    achievement_reward = new.astype(jnp.float32) @ params.achievement_weights
    health_change = (after.stats[:, C.HEALTH] - before.stats[:, C.HEALTH]).astype(jnp.float32)
    return _shared(achievement_reward + params.health_reward_scale * health_change, params)


def coordination_reward(
    before: CoordinationState, after: CoordinationState, params: CraftParams
) -> jax.Array:
    """Per agent: weights of newly unlocked coordination achievements; team mean if shared."""
    new = after.achievements & ~before.achievements
    return _shared(new.astype(jnp.float32) @ params.coordination_weights, params)


def coordination_achievements_in_play(config: CraftConfig) -> np.ndarray:
    """Which coordination achievements the config's switches make reachable."""
    reachable = {
        "complete_sync": config.has_tasks,
        "complete_handover": config.has_tasks,
        "defeat_elite": config.has_elites,
        "eat_large_cow": config.has_elites,
        "give_item": config.has_trading,
        "revive_teammate": config.has_layer,
        "build_shelter": config.has_construction,
        "build_forge": config.has_construction,
        "build_beacon": config.has_construction,
        "make_diamond_sword": config.has_construction and config.num_agents >= 2,
    }
    return np.array([reachable[name] for name in C.COORDINATION_ACHIEVEMENTS])


def episode_metrics(
    config: CraftConfig, state: CraftState, params: CraftParams
) -> dict[str, jax.Array]:
    """Normalised return, team achievement %, per-achievement success (any agent), survivors.

    Normalised return: each agent's achievement reward as a percentage of the maximum
    (every achievement unlocked, coordination ones in play included), averaged over
    agents. With the coordination layer on, also the coordination achievement % (any
    agent, over those in play), the task, give and revive counts, and with construction
    the buildings built per kind and the diamond swords made.
    """
    agents = state.agents
    weights = params.achievement_weights
    unlocked = agents.achievements.astype(jnp.float32)
    team = jnp.any(agents.achievements, axis=0).astype(jnp.float32)
    earned, maximum = unlocked @ weights, jnp.sum(weights)
    metrics: dict[str, jax.Array] = {}
    if config.has_layer:
        coordination = state.coordination
        in_play = jnp.asarray(coordination_achievements_in_play(config))
        coordination_weights = params.coordination_weights * in_play
        earned = earned + coordination.achievements.astype(jnp.float32) @ coordination_weights
        maximum = maximum + jnp.sum(coordination_weights)
        coordination_team = jnp.any(coordination.achievements, axis=0) & in_play
        metrics["coordination_achievement_percent"] = (
            100.0 * jnp.sum(coordination_team) / jnp.maximum(jnp.sum(in_play), 1)
        )
        for name in ("syncs", "handovers", "lapsed", "failed_solo", "gives", "revives"):
            metrics[f"coordination/{name}"] = getattr(coordination, name).astype(jnp.float32)
        metrics["coordination/task_completions"] = (
            coordination.syncs + coordination.handovers
        ).astype(jnp.float32)
        metrics["alpha"] = coordination.alpha
        if config.has_construction:
            for index, name in enumerate(C.BUILDINGS):
                metrics[f"construction/{name}s"] = coordination.buildings_built[index].astype(
                    jnp.float32
                )
            metrics["construction/diamond_swords"] = coordination.diamond_swords.astype(jnp.float32)
        for index, name in enumerate(C.COORDINATION_ACHIEVEMENTS):
            metrics[f"achievement/{name}"] = coordination_team[index].astype(jnp.float32)
    metrics["normalised_return"] = 100.0 * jnp.mean(earned) / maximum
    metrics["team_achievement_percent"] = 100.0 * jnp.mean(team)
    metrics["agents_alive"] = jnp.mean((agents.status != C.DEAD).astype(jnp.float32))
    for index, name in enumerate(C.ACHIEVEMENTS):
        metrics[f"achievement/{name}"] = team[index]
    return metrics
