"""Pieces shared by the group-relative, critic-free algorithms (GRPO, SRPO, TeamTR).

A *group* is `G` environments that start from the same start state (each on its
own action and step keys); a member's advantage is its episode return measured
against the other members of its group, so no critic is needed. A *set* is the
`K` actions that jointly cause one transition (the seats in play of one
environment at one step); setwise methods take one ratio per set.

Every function here is pure and shape-generic, so the algorithms and the unit
tests share exactly one definition of each quantity.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

# Added to a group's standard deviation: a group whose members all scored the same
# gets advantage 0 rather than 0 / 0.
ADVANTAGE_EPS = 1e-4


def env_major(tree):
    """Swap the leading time and environment axes, `(T, E, ...)` <-> `(E, T, ...)`."""
    return jax.tree.map(lambda leaf: jnp.swapaxes(leaf, 0, 1), tree)


def tile_groups(tree, group_size: int):
    """Repeat every leading-axis entry `group_size` times: group `g` is rows `g*G .. g*G+G-1`."""
    return jax.tree.map(lambda leaf: jnp.repeat(leaf, group_size, axis=0), tree)


def first_episode_mask(done: jax.Array) -> jax.Array:
    """`(T, E)`: True up to and including each environment's first `done`.

    Only the first episode of a rollout starts from the group's shared state; the
    auto-reset episodes after it are not comparable and carry no loss.
    """
    ended_before = jnp.cumsum(done.astype(jnp.int32), axis=0) - done.astype(jnp.int32)
    return ended_before == 0


def episode_returns(
    reward: jax.Array, in_episode: jax.Array, active: jax.Array, team: bool
) -> jax.Array:
    """Undiscounted returns `(E, N)` of the first episode (cut at `T` steps if still running).

    reward `(T, E, N)`, in_episode `(T, E)`, active `(E, N)` seats in play. With `team`,
    every seat gets the mean return over the seats in play.
    """
    returns = (reward * in_episode[..., None]).sum(0)
    if not team:
        return returns
    team_return = (returns * active).sum(-1) / jnp.maximum(active.sum(-1), 1)
    return jnp.broadcast_to(team_return[:, None], returns.shape)


def group_advantages(returns: jax.Array, group_size: int) -> jax.Array:
    """`(R - mean_group) / (std_group + ADVANTAGE_EPS)` over consecutive groups on axis 0.

    The standard deviation is the population one (ddof 0) over the `G` members.
    """
    grouped = returns.reshape(-1, group_size, *returns.shape[1:])
    mean = grouped.mean(axis=1, keepdims=True)
    std = grouped.std(axis=1, keepdims=True)
    return ((grouped - mean) / (std + ADVANTAGE_EPS)).reshape(returns.shape)


def k3_kl(log_ratio: jax.Array) -> jax.Array:
    """The k3 estimator `r - 1 - log r` with `r = exp(log_ratio)`, per sample; never negative.

    With samples from `p` and `log_ratio = log q - log p` its mean is unbiased for KL(p || q):
    GRPO's penalty uses `log_ratio = log pi_ref - log pi_theta`, a trust region
    `log pi_new - log pi_old`.
    """
    return jnp.expm1(log_ratio) - log_ratio


def set_log_ratio(log_ratio: jax.Array, members: jax.Array) -> jax.Array:
    """SRPO's set log-ratio `(1 / sqrt(K)) * sum of member log-ratios`, reducing the agent axis.

    log_ratio `(..., N)`; members `(..., N)` marks the seats of the set (K = their count).
    """
    members = members.astype(log_ratio.dtype)
    size = members.sum(-1)
    return (log_ratio * members).sum(-1) / jnp.sqrt(jnp.maximum(size, 1.0))
