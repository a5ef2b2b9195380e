"""Actor and critic networks over a batch of agents, feed-forward or recurrent (GRU).

Every network reads sequences: inputs have shape `(T, B, ...)` with `B` the
flattened (environment, agent) batch, and `resets` `(T, B)` marks the first step
of an episode, where a recurrent state starts again from zeros. A feed-forward
network carries no state (`None`), so one code path serves both kinds.
Parameters are shared by all agents; the one-hot agent id tells them apart.
"""

from __future__ import annotations

import functools
from typing import Any

import distrax
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from baselines.common.config import NetworkConfig

# Logit of an illegal action: exp(-1e9) is exactly 0 in float32, and unlike -inf
# it keeps `p * log p` finite in the entropy.
ILLEGAL_LOGIT = -1e9


def masked_categorical(logits: jax.Array, mask: jax.Array) -> distrax.Categorical:
    """A categorical over the legal actions only (`mask` True where legal)."""
    return distrax.Categorical(logits=jnp.where(mask, logits, ILLEGAL_LOGIT))


def _orthogonal(scale: float) -> nn.initializers.Initializer:
    return nn.initializers.orthogonal(scale)


Part = tuple[tuple[int, ...], int]  # (shape, ids): ids > 0 integer ids in [0, ids), 0 reals


def observation_parts(env: Any) -> tuple[Part, ...]:
    """The parts of `env`'s observation as `NetworkConfig.observation_parts` records them.

    An `observation_space` that is a dict of Boxes names parts whose flattened values the
    observation concatenates in order; a Box of an integer dtype holds ids in [low, high].
    Any other space (or none) is one part of real values: `()`.
    """
    # Environments declare a space where their observation is more than real values.
    space = getattr(env, "observation_space", None)
    if not isinstance(space, dict):
        return ()
    return tuple(
        (tuple(box.shape), int(box.high) + 1 if jnp.issubdtype(box.dtype, jnp.integer) else 0)
        for box in space.values()
    )


class ObservationEncoder(nn.Module):
    """Flat vectors pass through; images `(H, W, C)` go through a small CNN; observations
    with parts of integer ids (`parts`) embed every id, summing the ids of one position
    (the last axis of a part) and pass the real-valued parts through.

    The parts describe the actor's observation; an input of another width (a centralised
    critic's global state) is read as real values.
    """

    parts: tuple[Part, ...] = ()
    embedding_size: int = 8

    @nn.compact
    def __call__(self, observation: jax.Array, feature_rank: int) -> jax.Array:
        if feature_rank == 3:
            batch_shape = observation.shape[:-3]
            images = observation.reshape(-1, *observation.shape[-3:])
            images = nn.relu(nn.Conv(16, (3, 3), strides=(2, 2))(images))
            images = nn.relu(nn.Conv(32, (3, 3), strides=(2, 2))(images))
            return images.reshape(*batch_shape, -1)
        flat = observation.reshape(*observation.shape[: observation.ndim - feature_rank], -1)
        sizes = [int(np.prod(shape)) for shape, _ in self.parts]
        if not self.parts or sum(sizes) != flat.shape[-1]:
            return flat
        pieces = []
        for (shape, ids), values in zip(
            self.parts, jnp.split(flat, np.cumsum(sizes)[:-1], axis=-1), strict=True
        ):
            if ids == 0:
                pieces.append(values)
                continue
            per_position = shape[-1] if len(shape) >= 2 else 1
            embed = nn.Embed(
                ids,
                self.embedding_size,
                embedding_init=nn.initializers.normal(1.0 / np.sqrt(per_position)),
            )
            vectors = embed(values.astype(jnp.int32))  # (..., size, d)
            vectors = vectors.reshape(*values.shape[:-1], -1, per_position, self.embedding_size)
            pieces.append(vectors.sum(-2).reshape(*values.shape[:-1], -1))
        return jnp.concatenate(pieces, axis=-1)


def encoder(config: NetworkConfig) -> ObservationEncoder:
    return ObservationEncoder(config.observation_parts, config.embedding_size)


class GRUOverTime(nn.Module):
    """A GRU cell scanned over the leading time axis, reset where `resets` is True."""

    hidden_size: int

    @functools.partial(
        nn.scan,
        variable_broadcast="params",
        in_axes=0,
        out_axes=0,
        split_rngs={"params": False},
    )
    @nn.compact
    def __call__(self, hidden: jax.Array, step: tuple[jax.Array, jax.Array]):
        inputs, resets = step
        hidden = jnp.where(resets[:, None], jnp.zeros_like(hidden), hidden)
        hidden, output = nn.GRUCell(features=self.hidden_size)(hidden, inputs)
        return hidden, output


class Torso(nn.Module):
    """Dense layers, with a GRU after the first when the network is recurrent."""

    config: NetworkConfig

    @nn.compact
    def __call__(self, hidden, inputs: jax.Array, resets: jax.Array):
        x = inputs
        for layer in range(self.config.num_layers):
            x = nn.tanh(nn.Dense(self.config.hidden_size, kernel_init=_orthogonal(np.sqrt(2)))(x))
            if layer == 0 and self.config.recurrent:
                hidden, x = GRUOverTime(self.config.hidden_size)(hidden, (x, resets))
        return hidden, x


class Actor(nn.Module):
    """Masked action logits from an agent's observation and its one-hot id."""

    config: NetworkConfig
    num_actions: int
    observation_rank: int

    @nn.compact
    def __call__(self, hidden, observation, agent_id, resets, mask):
        features = encoder(self.config)(observation, self.observation_rank)
        hidden, x = Torso(self.config)(hidden, jnp.concatenate([features, agent_id], -1), resets)
        logits = nn.Dense(self.num_actions, kernel_init=_orthogonal(0.01))(x)
        return hidden, jnp.where(mask, logits, ILLEGAL_LOGIT)


class Critic(nn.Module):
    """A value per agent from the critic's input (local observation or global state) and id."""

    config: NetworkConfig
    observation_rank: int

    @nn.compact
    def __call__(self, hidden, observation, agent_id, resets):
        features = encoder(self.config)(observation, self.observation_rank)
        hidden, x = Torso(self.config)(hidden, jnp.concatenate([features, agent_id], -1), resets)
        return hidden, nn.Dense(1, kernel_init=_orthogonal(1.0))(x)[..., 0]


def initial_hidden(config: NetworkConfig, batch_shape: tuple[int, ...]):
    """The zero recurrent state for `batch_shape` agents; `None` for feed-forward networks."""
    if not config.recurrent:
        return None
    return jnp.zeros((*batch_shape, config.hidden_size), jnp.float32)
