"""Generalised advantage estimation with terminated and truncated episodes kept apart.

Where an episode ends, the next stored value belongs to a fresh episode, so it is
never used. A terminated episode has no future (next value 0); a truncated one was
cut by the time limit and bootstraps from the value of its final observation.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def generalised_advantages(
    reward: jax.Array,
    value: jax.Array,
    done: jax.Array,
    terminated: jax.Array,
    final_value: jax.Array,
    last_value: jax.Array,
    gamma: float,
    gae_lambda: float,
) -> tuple[jax.Array, jax.Array]:
    """Advantages and value targets, both shaped like `reward`.

    reward, value, final_value: `(T, ...)`; done, terminated: `(T, ...)` broadcastable
    against them; last_value: the value of the observation after the last step, `(...)`.
    """
    done = jnp.broadcast_to(done, reward.shape)
    terminated = jnp.broadcast_to(terminated, reward.shape)
    next_value = jnp.concatenate([value[1:], last_value[None]], axis=0)
    end_value = jnp.where(terminated, 0.0, final_value)
    next_value = jnp.where(done, end_value, next_value)
    delta = reward + gamma * next_value - value
    continues = 1.0 - done.astype(reward.dtype)

    def backwards(advantage_after, step):
        delta_t, continues_t = step
        advantage = delta_t + gamma * gae_lambda * continues_t * advantage_after
        return advantage, advantage

    _, advantages = jax.lax.scan(
        backwards, jnp.zeros_like(last_value), (delta, continues), reverse=True
    )
    return advantages, advantages + value
