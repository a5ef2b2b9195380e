"""Training-only reward shaping (`--ppo.event-metric`, `--ppo.event-bonus`): the rollout's
rewards gain the bonus per rise of an episode metric, and nothing else changes."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from alemlite.core import LogWrapper, VecEnv
from alemlite.core.errors import ConfigError
from baselines.common import rollout as rollouts
from baselines.common.config import ImitationConfig, PPOConfig, TrainConfig
from tests.baselines_toy_env import MatchingGame

STEPS = 12  # three episodes of the 4-step game


def play(event_bonus):
    env = MatchingGame()
    vec_env = VecEnv(LogWrapper(env), num_envs=5)
    params = env.default_params

    def act(params_, hidden, view, key):  # uniform over the legal actions
        logits = jnp.where(view.action_mask, 0.0, -jnp.inf)
        actions = jax.random.categorical(key, logits).astype(jnp.int32)
        shape = actions.shape
        return hidden, actions, jnp.zeros(shape), jnp.zeros(shape)

    def bootstrap(params_, hidden, final_view):
        return jnp.zeros(final_view.active.shape)

    start = rollouts.reset(vec_env, params, jax.random.PRNGKey(0), None)
    _, transitions = rollouts.collect(
        vec_env, params, act, bootstrap, None, start, jax.random.PRNGKey(1), STEPS,
        event_bonus=event_bonus,
    )  # fmt: skip
    return jax.device_get(transitions)


def test_the_bonus_pays_every_seat_in_play_per_rise_of_the_metric_and_only_in_the_reward():
    plain, shaped = play(None), play(rollouts.EventBonus("matches", 0.5))
    np.testing.assert_array_equal(shaped.actions, plain.actions)  # the same episodes
    matches = np.asarray(plain.episode_metrics["matches"])  # (T, E), the episode's so far
    # each episode starts from no matches: the rise is the count after a step minus the
    # count after the previous step of the same episode
    before = np.concatenate([np.zeros_like(matches[:1]), matches[:-1]])
    before[1:][np.asarray(plain.done[:-1])] = 0.0
    rise = matches - before
    assert rise.sum() > 0 and (rise >= 0).all()
    expected = plain.reward + 0.5 * rise[..., None] * plain.view.active
    np.testing.assert_allclose(shaped.reward, expected, rtol=1e-6)
    np.testing.assert_array_equal(shaped.episode_return, plain.episode_return)


def test_an_unknown_metric_is_refused_in_one_line():
    with pytest.raises(ConfigError, match=r"^ppo.event_metric='meals' is not an episode metric "
                       r"of matching; choose one of matches$"):  # fmt: skip
        play(rollouts.EventBonus("meals", 1.0))


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: PPOConfig(event_metric="matches"), "give both"),
        (lambda: PPOConfig(event_bonus=1.0), "give both"),
        (lambda: PPOConfig(event_metric="matches", event_bonus=float("nan")), "finite"),
        (
            lambda: TrainConfig(
                algorithm="dagger",
                env="dining",
                imitation=ImitationConfig(teacher="resource_ordering"),
                ppo=PPOConfig(event_metric="meals", event_bonus=1.0),
            ),
            "ppo.event_metric shapes the reward of ippo and mappo",
        ),
    ],
)
def test_shaping_settings_that_cannot_apply_are_refused(build, message):
    with pytest.raises(ConfigError, match=message):
        build()
