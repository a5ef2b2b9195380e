"""Evaluation on the fixed seed protocol shared by MARL agents and the LLM bridge.

Seed protocol: episode `i` of an evaluation with base seed `b` uses
`key = jax.random.PRNGKey(b + i)`; `reset_key, play_key = jax.random.split(key)`
starts the episode, and step `t` uses `jax.random.split(jax.random.fold_in(play_key, t))`
as `(policy_key, env_key)`. Anything that follows it (a trained agent, a
scripted policy, a language model) meets the same start states and the same
environment randomness, so their numbers are comparable episode by episode.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from alemlite.core.environment import Environment
from alemlite.core.errors import require

# policy(key, state, params) -> actions (num_agents,) int32; jittable.
Policy = Callable[[jax.Array, Any, Any], jax.Array]


def seat_policies(policies: Sequence[Policy]) -> Policy:
    """One policy for a team whose seat `i` plays `policies[i]` (the action of seat `i`).

    Each distinct policy (by identity) is computed once per step, on the step's policy key,
    as it would be alone; a team of one policy is that policy."""
    distinct = list(dict.fromkeys(policies))
    if len(distinct) == 1:
        return distinct[0]
    chosen = np.array([distinct.index(policy) for policy in policies])
    seats = np.arange(len(policies))

    def team(key: jax.Array, state: Any, params: Any) -> jax.Array:
        actions = jnp.stack([policy(key, state, params) for policy in distinct])
        return actions[chosen, seats]

    return team


SEED_LIMIT = 2**31
"""Episode seeds (seed + i) are 32-bit integers."""


def check_episode_seeds(seed: int, episodes: int) -> None:
    """Refuse a run whose episode seeds (`seed + i`, i < episodes) leave the 32-bit range."""
    require(episodes >= 1, f"episodes={episodes} must be at least 1")
    require(
        seed >= -SEED_LIMIT and seed + episodes <= SEED_LIMIT,
        f"seed={seed} must keep every episode's seed (seed + i, i < episodes) a 32-bit "
        f"integer: at least {-SEED_LIMIT} and at most {SEED_LIMIT - episodes}",
    )


def episode_keys(base_seed: int, num_episodes: int) -> jax.Array:
    """The per-episode keys of the protocol, `PRNGKey(base_seed + i)`."""
    return jax.vmap(jax.random.PRNGKey)(base_seed + jnp.arange(num_episodes))


def step_keys(play_key: jax.Array, step: jax.Array) -> tuple[jax.Array, jax.Array]:
    """`(policy_key, env_key)` for step `step` of an episode."""
    policy_key, env_key = jax.random.split(jax.random.fold_in(play_key, step))
    return policy_key, env_key


def play_episode(env: Environment, policy: Policy, params: Any, key: jax.Array) -> dict:
    """Play one episode to its end; returns the env's metrics plus return and length."""
    reset_key, play_key = jax.random.split(key)
    _, state = env.reset(reset_key, params)

    def not_done(carry):
        return ~carry[2]

    def one_step(carry):
        state, episode_return, _, step = carry
        policy_key, env_key = step_keys(play_key, step)
        actions = policy(policy_key, state, params)
        _, state, reward, done, _ = env.step(env_key, state, actions, params)
        return state, episode_return + reward, done, step + 1

    initial = (state, jnp.zeros((env.num_agents,), jnp.float32), jnp.array(False), jnp.int32(0))
    state, episode_return, _, length = jax.lax.while_loop(not_done, one_step, initial)
    active = env.agent_active(state, params)
    return {
        **env.episode_metrics(state, params),
        "episode_return": jnp.sum(episode_return * active) / jnp.maximum(active.sum(), 1),
        "episode_length": length,
    }


def evaluate(
    env: Environment,
    policy: Policy,
    params: Any,
    num_episodes: int,
    base_seed: int = 0,
    batch_size: int = 1024,
) -> dict[str, np.ndarray]:
    """Per-episode metrics of `num_episodes` episodes, played in vmapped batches."""
    play_batch = jax.jit(jax.vmap(lambda key: play_episode(env, policy, params, key)))
    batch_size = min(batch_size, num_episodes)
    # Pad with further protocol keys to whole batches, so one program serves every chunk.
    num_padded = -(-num_episodes // batch_size) * batch_size
    keys = episode_keys(base_seed, num_padded)
    chunks = [
        jax.device_get(play_batch(keys[start : start + batch_size]))
        for start in range(0, num_padded, batch_size)
    ]
    return {
        name: np.concatenate([chunk[name] for chunk in chunks])[:num_episodes] for name in chunks[0]
    }
