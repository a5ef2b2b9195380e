"""Clipped policy-gradient losses and epochs of shuffled minibatch updates.

Shared by every algorithm: actor-critic ones (IPPO, MAPPO) combine the
clipped surrogate with the clipped value loss; critic-free ones bring their
own advantages (or ratios, for setwise methods) to the same surrogate.
Losses are means weighted by which seats are in play, so inert seats of a
padded table contribute nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import optax

from baselines.common.config import PPOConfig


def weighted_mean(values: jax.Array, weights: jax.Array) -> jax.Array:
    weights = jnp.broadcast_to(weights, values.shape).astype(values.dtype)
    return (values * weights).sum() / jnp.maximum(weights.sum(), 1.0)


def normalise(advantages: jax.Array, weights: jax.Array, eps: float = 1e-8) -> jax.Array:
    """Zero mean, unit standard deviation over the weighted entries."""
    mean = weighted_mean(advantages, weights)
    std = jnp.sqrt(weighted_mean((advantages - mean) ** 2, weights))
    return (advantages - mean) / (std + eps)


def clipped_surrogate(
    log_ratio: jax.Array, advantages: jax.Array, clip_eps: float, weights: jax.Array
) -> tuple[jax.Array, dict[str, jax.Array]]:
    """PPO's pessimistic clipped objective, as a loss; with clip fraction and KL estimate."""
    ratio = jnp.exp(log_ratio)
    unclipped = ratio * advantages
    clipped = jnp.clip(ratio, 1.0 - clip_eps, 1.0 + clip_eps) * advantages
    loss = -weighted_mean(jnp.minimum(unclipped, clipped), weights)
    diagnostics = {
        "clip_fraction": weighted_mean(
            (jnp.abs(ratio - 1.0) > clip_eps).astype(jnp.float32), weights
        ),
        # The k3 estimator of KL(old || new): unbiased and never negative.
        "approx_kl": weighted_mean((ratio - 1.0) - log_ratio, weights),
    }
    return loss, diagnostics


def clipped_value_loss(
    values: jax.Array,
    old_values: jax.Array,
    targets: jax.Array,
    clip_eps: float,
    weights: jax.Array,
) -> jax.Array:
    """Squared error, pessimistic over a value change clipped to `clip_eps`."""
    clipped = old_values + jnp.clip(values - old_values, -clip_eps, clip_eps)
    return 0.5 * weighted_mean(
        jnp.maximum((values - targets) ** 2, (clipped - targets) ** 2), weights
    )


# loss_fn(params, minibatch) -> (loss, diagnostics)
LossFn = Callable[[Any, Any], tuple[jax.Array, dict[str, jax.Array]]]


def minibatch_epochs(
    key: jax.Array,
    params: Any,
    opt_state: Any,
    optimizer: optax.GradientTransformation,
    batch: Any,
    loss_fn: LossFn,
    num_epochs: int,
    num_minibatches: int,
) -> tuple[Any, Any, dict[str, jax.Array]]:
    """`num_epochs` passes over `batch` in shuffled minibatches along its leading axis.

    Every leaf of `batch` leads with the environment axis, so a minibatch holds
    whole environments: their full time sequences (as recurrent networks need)
    and all their agents (as set- and team-wise objectives need).
    Returns the new params and optimiser state and the diagnostics averaged over
    all minibatches.
    """
    batch_size = jax.tree.leaves(batch)[0].shape[0]
    minibatch_size = batch_size // num_minibatches

    def one_minibatch(carry, minibatch):
        params, opt_state = carry
        (loss, diagnostics), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, minibatch)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        params = optax.apply_updates(params, updates)
        return (params, opt_state), {"loss/total": loss, **diagnostics}

    def one_epoch(carry, epoch_key):
        order = jax.random.permutation(epoch_key, batch_size)
        minibatches = jax.tree.map(
            lambda leaf: leaf[order].reshape(num_minibatches, minibatch_size, *leaf.shape[1:]),
            batch,
        )
        return jax.lax.scan(one_minibatch, carry, minibatches)

    (params, opt_state), diagnostics = jax.lax.scan(
        one_epoch, (params, opt_state), jax.random.split(key, num_epochs)
    )
    return params, opt_state, jax.tree.map(jnp.mean, diagnostics)


def adam_optimizer(ppo: PPOConfig, total_steps: int) -> optax.GradientTransformation:
    """Clipped-gradient Adam, linearly annealed over `total_steps` when the config asks."""
    learning_rate = ppo.learning_rate
    if ppo.anneal_learning_rate:
        learning_rate = optax.linear_schedule(ppo.learning_rate, 0.0, total_steps)
    return optax.chain(
        optax.clip_by_global_norm(ppo.max_grad_norm), optax.adam(learning_rate, eps=1e-5)
    )
