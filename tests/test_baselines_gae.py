"""GAE against a plain-NumPy oracle, with terminal ends and cut-offs kept apart."""

import jax
import numpy as np
import pytest

from baselines.common.gae import generalised_advantages

GAMMA, LAMBDA = 0.9, 0.8
STEPS, BATCH = 7, 5


def numpy_gae(reward, value, done, terminal, final_value, last_value, gamma, lam):
    """Step-by-step definition: the next value is 0 at a terminal end, V(final obs) after a
    cut-off, the stored next value otherwise; the recursion stops at episode ends."""
    steps = reward.shape[0]
    advantages = np.zeros_like(reward)
    after = np.zeros_like(last_value)
    for t in reversed(range(steps)):
        next_value = last_value.copy() if t == steps - 1 else value[t + 1].copy()
        next_value = np.where(done[t], np.where(terminal[t], 0.0, final_value[t]), next_value)
        delta = reward[t] + gamma * next_value - value[t]
        after = delta + gamma * lam * (1.0 - done[t]) * after
        advantages[t] = after
    return advantages, advantages + value


@pytest.fixture(scope="module")
def compiled_gae():
    return jax.jit(generalised_advantages, static_argnums=(6, 7))


@pytest.mark.parametrize("seed", range(20))
def test_gae_matches_numpy_oracle(compiled_gae, seed):
    rng = np.random.default_rng(seed)
    reward = rng.normal(size=(STEPS, BATCH)).astype(np.float32)
    value = rng.normal(size=(STEPS, BATCH)).astype(np.float32)
    final_value = rng.normal(size=(STEPS, BATCH)).astype(np.float32)
    last_value = rng.normal(size=(BATCH,)).astype(np.float32)
    terminated = rng.random((STEPS, BATCH)) < 0.15
    truncated = rng.random((STEPS, BATCH)) < 0.15
    done = terminated | truncated
    expected = numpy_gae(reward, value, done, terminated, final_value, last_value, GAMMA, LAMBDA)
    actual = compiled_gae(reward, value, done, terminated, final_value, last_value, GAMMA, LAMBDA)
    np.testing.assert_allclose(actual[0], expected[0], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(actual[1], expected[1], rtol=1e-5, atol=1e-5)


def test_truncation_bootstraps_and_termination_does_not(compiled_gae):
    # Two environments, one step, both ending: env 0 terminated, env 1 truncated.
    reward = np.array([[1.0, 1.0]], np.float32)
    value = np.array([[0.5, 0.5]], np.float32)
    final_value = np.array([[10.0, 10.0]], np.float32)
    last_value = np.array([100.0, 100.0], np.float32)  # a new episode's value: never used
    done = np.array([[True, True]])
    terminated = np.array([[True, False]])
    advantages, targets = compiled_gae(
        reward, value, done, terminated, final_value, last_value, GAMMA, LAMBDA
    )
    np.testing.assert_allclose(advantages[0], [1.0 - 0.5, 1.0 + GAMMA * 10.0 - 0.5], rtol=1e-6)
    np.testing.assert_allclose(targets[0], [1.0, 1.0 + GAMMA * 10.0], rtol=1e-6)
