"""Shared actors: masking never samples an illegal action; images and memory are handled."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from baselines.common.agents import SharedActor, SharedCritic
from baselines.common.config import NetworkConfig
from baselines.common.networks import masked_categorical

NUM_ENVS, NUM_AGENTS, NUM_ACTIONS = 256, 3, 5


def random_masks(key, shape):
    masks = jax.random.bernoulli(key, 0.4, shape)
    # Every row allows at least one action, as the environment contract promises.
    forced = jax.nn.one_hot(jax.random.randint(key, shape[:-1], 0, shape[-1]), shape[-1]) > 0
    return masks | forced


@pytest.fixture(scope="module")
def sample_adversarial():
    @jax.jit
    def sample(key):
        mask_key, sample_key = jax.random.split(key)
        masks = random_masks(mask_key, (NUM_ENVS, NUM_AGENTS, NUM_ACTIONS))
        # Illegal actions get by far the largest raw logits.
        logits = jnp.where(masks, 0.0, 50.0)
        samples = masked_categorical(logits, masks).sample(seed=sample_key, sample_shape=(64,))
        return masks, samples

    return sample


@pytest.mark.parametrize("seed", range(5))
def test_masked_sampling_never_picks_an_illegal_action(sample_adversarial, seed):
    masks, samples = sample_adversarial(jax.random.PRNGKey(seed))
    legal = np.take_along_axis(
        np.broadcast_to(np.asarray(masks), (64, *masks.shape)), np.asarray(samples)[..., None], -1
    )
    assert legal.all()


def test_masked_distribution_has_finite_entropy_and_zero_illegal_mass():
    mask = jnp.array([[True, False, True, False]])
    distribution = masked_categorical(jnp.array([[1.0, 30.0, -2.0, 5.0]]), mask)
    assert np.isfinite(distribution.entropy()).all()
    np.testing.assert_array_equal(np.asarray(distribution.probs)[~np.asarray(mask)], 0.0)


@pytest.mark.parametrize("recurrent", [False, True])
def test_actor_acts_legally_from_images_and_flat_vectors(recurrent):
    network = NetworkConfig(hidden_size=8, num_layers=1, recurrent=recurrent)
    for observation_shape in [(6,), (7, 7, 3)]:
        actor = SharedActor(network, NUM_AGENTS, NUM_ACTIONS, observation_shape)
        params = actor.init(jax.random.PRNGKey(0))
        key = jax.random.PRNGKey(1)
        masks = random_masks(key, (8, NUM_AGENTS, NUM_ACTIONS))
        observation = jax.random.normal(key, (8, NUM_AGENTS, *observation_shape))
        hidden, actions, log_prob = actor.act(
            params, actor.initial_hidden(8), observation, masks, jnp.ones(8, bool), key
        )
        assert actions.shape == (8, NUM_AGENTS) and np.isfinite(log_prob).all()
        assert np.take_along_axis(np.asarray(masks), np.asarray(actions)[..., None], -1).all()
        assert (hidden is None) == (not recurrent)


def test_recurrent_state_restarts_at_episode_start():
    network = NetworkConfig(hidden_size=8, num_layers=1, recurrent=True)
    critic = SharedCritic(network, NUM_AGENTS, (4,))
    params = critic.init(jax.random.PRNGKey(0))
    inputs = jax.random.normal(jax.random.PRNGKey(1), (1, 2, NUM_AGENTS, 4))
    stale = jnp.ones((2, NUM_AGENTS, 8))
    starts = jnp.ones((1, 2), bool)
    _, from_stale = critic.values(params, stale, inputs, starts)
    _, from_zero = critic.values(params, critic.initial_hidden(2), inputs, starts)
    np.testing.assert_allclose(from_stale, from_zero, rtol=1e-6)
    _, carried = critic.values(params, stale, inputs, ~starts)
    assert not np.allclose(carried, from_zero)
