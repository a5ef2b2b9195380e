"""GRPO, SRPO and TeamTR: every loss term against plain NumPy, and smoke training on dining."""

from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from optax.tree_utils import tree_get_all_with_path

import alemlite
from alemlite.core.errors import ConfigError
from baselines.common.config import GroupConfig, NetworkConfig, PPOConfig, TrainConfig
from baselines.common.group import (
    ADVANTAGE_EPS,
    episode_returns,
    first_episode_mask,
    group_advantages,
    k3_kl,
    set_log_ratio,
)
from baselines.common.trainer import build_algorithm
from baselines.grpo import GRPO
from baselines.srpo import SRPO
from baselines.teamtr import TeamTR, largest_step_within_budget, seat_weights, surrogate_gain
from tests.baselines_toy_env import MatchingGame

CONFIG = TrainConfig(
    num_envs=8,
    num_steps=10,
    network=NetworkConfig(hidden_size=8, num_layers=1),
    ppo=PPOConfig(learning_rate=1e-2, num_epochs=2, num_minibatches=2, clip_eps=0.2),
)
CLIP = CONFIG.ppo.clip_eps
LOG_RATIO = np.array([[0.3, -0.1, 0.05], [-0.4, 0.2, 0.0], [0.1, 0.1, 0.1], [0.02, 0.5, -0.3]])
ACTIVE = np.array([[1, 1, 1], [1, 1, 0], [1, 0, 0], [0, 0, 0]], bool)


def numpy_clipped(ratio, advantage, weights):
    objective = np.minimum(ratio * advantage, np.clip(ratio, 1 - CLIP, 1 + CLIP) * advantage)
    return -(objective * weights).sum() / weights.sum()


@pytest.fixture(scope="module")
def dining():
    return alemlite.make("dining", num_philosophers=3, max_philosophers=4, max_steps=8)


# ---- definitions against NumPy ----------------------------------------------------------
def test_group_advantages_normalise_within_each_group():
    returns = np.array([[1.0, 0.0], [3.0, 0.0], [2.0, 0.0], [5.0, 1.0], [5.0, 2.0], [-1.0, 3.0]])
    grouped = returns.reshape(2, 3, 2)
    expected = (grouped - grouped.mean(1, keepdims=True)) / (
        grouped.std(1, keepdims=True) + ADVANTAGE_EPS
    )
    actual = group_advantages(jnp.asarray(returns), 3)
    np.testing.assert_allclose(actual, expected.reshape(6, 2), rtol=1e-5, atol=1e-6)
    # A group whose members all scored alike carries no signal (seat 1 of group 0).
    np.testing.assert_array_equal(np.asarray(actual)[:3, 1], 0.0)


def test_returns_count_only_the_first_episode_per_seat_or_per_team():
    done = np.array([[0, 0, 0], [1, 0, 0], [0, 0, 1], [1, 0, 0]], bool)  # (T, E)
    mask = np.asarray(first_episode_mask(jnp.asarray(done)))
    np.testing.assert_array_equal(mask, [[1, 1, 1], [1, 1, 1], [0, 1, 1], [0, 1, 0]])
    reward = np.arange(4 * 3 * 2, dtype=np.float32).reshape(4, 3, 2)
    active = np.array([[1, 1], [1, 0], [1, 1]], bool)
    per_seat = (reward * mask[..., None]).sum(0)
    np.testing.assert_allclose(episode_returns(reward, mask, active, team=False), per_seat)
    team = (per_seat * active).sum(1) / active.sum(1)
    np.testing.assert_allclose(
        episode_returns(reward, mask, active, team=True), np.repeat(team[:, None], 2, 1)
    )


def test_k3_estimate_is_unbiased_for_the_kl_of_a_categorical():
    p = np.array([0.5, 0.3, 0.2])
    q = np.array([0.25, 0.35, 0.4])
    log_ratio = np.log(q) - np.log(p)
    per_sample = np.asarray(k3_kl(jnp.asarray(log_ratio)))
    np.testing.assert_allclose(per_sample, np.exp(log_ratio) - 1 - log_ratio, rtol=1e-5)
    assert (per_sample >= 0).all()
    # Its expectation under p is exactly KL(p || q).
    np.testing.assert_allclose((p * per_sample).sum(), (p * np.log(p / q)).sum(), rtol=1e-5)


def test_grpo_surrogate_clips_each_step_and_seat(dining):
    grpo = GRPO(dining, CONFIG.algorithm_config(), GroupConfig(group_size=4))
    advantages = np.array([[1.0, -0.5, 2.0], [-1.0, 0.3, 0.0], [0.7, 0.7, 0.7], [1.0, 1.0, 1.0]])
    loss, diagnostics = grpo.policy_loss(
        jnp.asarray(LOG_RATIO[None]), jnp.asarray(advantages), jnp.asarray(ACTIVE[None])
    )
    ratio = np.exp(LOG_RATIO)
    np.testing.assert_allclose(loss, numpy_clipped(ratio, advantages, ACTIVE), rtol=1e-5)
    kl = ((ratio - 1 - LOG_RATIO) * ACTIVE).sum() / ACTIVE.sum()
    np.testing.assert_allclose(diagnostics["approx_kl"], kl, rtol=1e-5)


def test_srpo_takes_one_scaled_ratio_and_one_clip_per_set(dining):
    srpo = SRPO(dining, CONFIG.algorithm_config(), GroupConfig(group_size=4))
    team_advantage = np.array([1.5, -2.0, 0.8, 3.0])  # one per environment (set)
    advantages = np.repeat(team_advantage[:, None], 3, 1)
    loss, _ = srpo.policy_loss(
        jnp.asarray(LOG_RATIO[None]), jnp.asarray(advantages), jnp.asarray(ACTIVE[None])
    )
    size = ACTIVE.sum(1)
    set_log = (LOG_RATIO * ACTIVE).sum(1) / np.sqrt(np.maximum(size, 1))
    np.testing.assert_allclose(
        set_log_ratio(jnp.asarray(LOG_RATIO), jnp.asarray(ACTIVE)), set_log, rtol=1e-6
    )
    expected = numpy_clipped(np.exp(set_log), team_advantage, (size > 0).astype(float))
    np.testing.assert_allclose(loss, expected, rtol=1e-5)
    # A set of one is PPO's ratio; an empty set carries no weight.
    np.testing.assert_allclose(set_log[2], LOG_RATIO[2, 0])
    big = np.where(ACTIVE, 0.4, 0.0)  # every non-empty set's ratio leaves the clip range
    clipped_loss, diagnostics = srpo.policy_loss(
        jnp.asarray(big[None]), jnp.asarray(advantages), jnp.asarray(ACTIVE[None])
    )
    set_ratio = np.exp(0.4 * size[:3] / np.sqrt(size[:3]))
    np.testing.assert_allclose(
        clipped_loss, numpy_clipped(set_ratio, team_advantage[:3], np.ones(3)), rtol=1e-5
    )
    np.testing.assert_allclose(diagnostics["clip_fraction"], 1.0)


def test_teamtr_masks_other_seats_and_keeps_the_largest_step_within_budget():
    weights = np.ones((2, 3, 4), bool)
    masked = np.asarray(seat_weights(jnp.asarray(weights), jnp.int32(2)))
    np.testing.assert_array_equal(masked, weights & (np.arange(4) == 2))

    scales = 0.5 ** np.arange(4)
    kls = np.array([0.08, 0.03, 0.011, 0.002])
    assert largest_step_within_budget(jnp.asarray(kls), jnp.asarray(scales), 0.02) == 0.25
    assert largest_step_within_budget(jnp.asarray(kls), jnp.asarray(scales), 0.1) == 1.0
    assert largest_step_within_budget(jnp.asarray(kls), jnp.asarray(scales), 0.001) == 0.0

    advantages = np.array([[1.0, -0.5, 2.0], [-1.0, 0.3, 0.0], [0.7, 0.7, 0.7], [1, 1, 1]])
    gain = surrogate_gain(jnp.asarray(LOG_RATIO), jnp.asarray(advantages), jnp.asarray(ACTIVE))
    expected = ((np.exp(LOG_RATIO) - 1) * advantages * ACTIVE).sum() / ACTIVE.sum()
    np.testing.assert_allclose(gain, expected, rtol=1e-5)


# ---- configuration ------------------------------------------------------------------------
def test_invalid_group_settings_fail_with_the_fix(dining):
    with pytest.raises(ConfigError, match="group_size=1"):
        GroupConfig(group_size=1)
    with pytest.raises(ConfigError, match="kl_budget"):
        GroupConfig(kl_budget=0.0)
    with pytest.raises(ConfigError, match="multiple of group_size=3"):
        GRPO(dining, CONFIG.algorithm_config(), GroupConfig(group_size=3))
    with pytest.raises(ConfigError, match="SRPO"):
        SRPO(dining, CONFIG.algorithm_config(), GroupConfig(group_size=4, returns="agent"))


@pytest.mark.parametrize(
    ("name", "cls", "rollouts"), [("grpo", GRPO, 1), ("srpo", SRPO, 1), ("teamtr", TeamTR, 4)]
)
def test_the_trainer_builds_each_method_from_its_name(name, cls, rollouts, dining):
    algorithm = build_algorithm(TrainConfig(algorithm=name, num_envs=8), dining)
    assert type(algorithm) is cls
    assert algorithm.rollouts_per_update == rollouts  # TeamTR: one rollout per seat


# ---- rollouts and training -------------------------------------------------------------
def test_a_group_shares_its_start_state_but_not_its_randomness():
    """The toy game draws a random cue at the start and after every step."""
    env = MatchingGame(max_steps=4)
    grpo = GRPO(
        env, TrainConfig(num_envs=64, num_steps=4).algorithm_config(), GroupConfig(group_size=8)
    )

    def rollout(key):
        runner = grpo.init(key)
        return grpo.group_rollout(runner.params["actor"], runner.rollout, key)[1]

    batch = jax.jit(rollout)(jax.random.PRNGKey(0))
    observation = np.asarray(batch["transitions"].view.observation)  # (E, T, N, 3)
    cue = observation[:, :, 0, 1].reshape(8, 8, -1)  # (group, member, step)
    assert (cue[:, :, 0] == cue[:, :1, 0]).all()  # one start cue per group
    assert len(np.unique(cue[:, 0, 0])) == 2  # groups draw their own start states
    at_step_1 = np.asarray(batch["weights"])[:, 1, 0].reshape(8, 8)  # still in episode one
    varies = [len(np.unique(cue[g, :, 1][at_step_1[g]])) > 1 for g in range(8)]
    assert any(varies)  # members' steps are not replays of one another


def smoke_run(algorithm, num_updates=3):
    runner = jax.jit(algorithm.init)(jax.random.PRNGKey(0))
    update = jax.jit(algorithm.update)
    start = jax.tree.map(np.asarray, runner.params["actor"])
    history = []
    for _ in range(num_updates):
        runner, metrics = update(runner)
        history.append(jax.tree.map(np.asarray, metrics))
    return start, runner, history


@pytest.fixture(scope="module")
def grpo_run(dining):
    return smoke_run(
        GRPO(dining, CONFIG.algorithm_config(), GroupConfig(group_size=4, kl_coef=0.1))
    )


@pytest.fixture(scope="module")
def srpo_run(dining):
    return smoke_run(SRPO(dining, CONFIG.algorithm_config(), GroupConfig(group_size=4)))


BUDGET = 1e-3


@pytest.fixture(scope="module")
def teamtr_run(dining):
    # A large learning rate against a small budget, so the budget has to bind.
    config = replace(CONFIG, ppo=replace(CONFIG.ppo, learning_rate=0.1))
    return smoke_run(
        TeamTR(dining, config.algorithm_config(), GroupConfig(group_size=4, kl_budget=BUDGET))
    )


@pytest.mark.parametrize("run", ["grpo_run", "srpo_run", "teamtr_run"])
def test_smoke_training_on_dining_has_finite_losses_and_moves_the_actor(run, request):
    start, runner, history = request.getfixturevalue(run)
    for metrics in history:
        for name in ("loss/total", "loss/policy", "loss/entropy", "loss/approx_kl"):
            assert np.isfinite(metrics[name]), (name, metrics)
        assert metrics["episode/count"] == CONFIG.num_envs  # one first episode per member
        assert np.isfinite(metrics["episode/return"])
    leaves = zip(jax.tree.leaves(start), jax.tree.leaves(runner.params["actor"]), strict=True)
    assert any(not np.allclose(before, after) for before, after in leaves)
    assert int(runner.update_step) == len(history)


def test_grpo_penalises_drift_from_its_frozen_reference(grpo_run):
    start, runner, history = grpo_run
    for reference, initial in zip(
        jax.tree.leaves(runner.params["reference"]), jax.tree.leaves(start), strict=True
    ):
        np.testing.assert_array_equal(reference, initial)
    kls = np.array([metrics["loss/kl_reference"] for metrics in history])
    assert np.isfinite(kls).all() and (kls >= 0).all() and kls[-1] > 0


def test_teamtr_holds_every_seat_within_budget_and_skips_the_inert_seat(teamtr_run, dining):
    _, _, history = teamtr_run
    num_stages = dining.num_agents  # 4 seats, of which seat 3 is not at the table
    scales = []
    for metrics in history:
        seats = sorted(int(metrics[f"teamtr/stage_{k}/seat"]) for k in range(num_stages))
        assert seats == [0, 1, 2, 3]
        for k in range(num_stages):
            assert metrics[f"teamtr/stage_{k}/kl"] <= BUDGET + 1e-6
            assert np.isfinite(metrics[f"teamtr/stage_{k}/gain"])
            scales.append(metrics[f"teamtr/stage_{k}/step_scale"])
            if metrics[f"teamtr/stage_{k}/seat"] == 3:
                assert metrics[f"teamtr/stage_{k}/epochs"] == 0
                assert metrics[f"teamtr/stage_{k}/gain"] == 0
    assert min(scales) < 1.0  # the budget did bind


def test_teamtr_keeps_optimizer_state_only_of_steps_taken_whole(teamtr_run):
    _, runner, history = teamtr_run
    stages = [
        (metrics[f"teamtr/stage_{k}/epochs"], metrics[f"teamtr/stage_{k}/step_scale"])
        for metrics in history
        for k in range(4)
    ]
    steps_per_epoch = CONFIG.ppo.num_minibatches
    taken = sum(epochs * steps_per_epoch for epochs, scale in stages if scale == 1.0)
    tried = sum(epochs * steps_per_epoch for epochs, _ in stages)
    assert tried > taken  # some stage ran epochs and was scaled back
    counts = {int(count) for _, count in tree_get_all_with_path(runner.opt_state, "count")}
    assert counts == {int(taken)}
