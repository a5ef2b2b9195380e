"""Generalised advantage estimation with terminal ends and cut-offs kept apart.

Where an episode ends, the next stored value belongs to a fresh episode, so it is
never used. At a terminal end (a termination, or a time limit that is part of
the task) nothing follows: the next value is 0. An episode cut off by a time
limit that is not part of the task bootstraps from the value of its final
observation.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp


def generalised_advantages(
    reward: jax.Array,
    value: jax.Array,
    done: jax.Array,
    terminal: jax.Array,
    final_value: jax.Array,
    last_value: jax.Array,
    gamma: float,
    gae_lambda: float,
) -> tuple[jax.Array, jax.Array]:
    """Advantages and value targets, both shaped like `reward`.

    reward, value, final_value: `(T, ...)`; done, terminal: `(T, ...)` broadcastable
    against them; last_value: the value of the observation after the last step, `(...)`.
    """
    done = jnp.broadcast_to(done, reward.shape)
    terminal = jnp.broadcast_to(terminal, reward.shape)
    next_value = jnp.concatenate([value[1:], last_value[None]], axis=0)
    end_value = jnp.where(terminal, 0.0, final_value)
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
