"""Training on Craft: the difficulty setting, a few updates of every method, the shipped policy."""

from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import alemlite
import baselines
from alemlite.core.errors import ConfigError
from baselines.common.config import GroupConfig, NetworkConfig, PPOConfig, TrainConfig
from baselines.common.trainer import build_algorithm, make_env

# Tiny on purpose: one compile per method is the cost. Episodes (6 steps) end inside every
# rollout (8 steps), so auto-reset, truncation bootstrapping and episode statistics all run.
CRAFT = alemlite.spec("craft")
SMOKE = TrainConfig(
    env="craft",
    options=CRAFT.options(num_agents=2, map_size=16, max_steps=6),
    num_envs=4,
    num_steps=8,
    num_updates=2,
    updates_per_chunk=1,
    eval_interval=1,
    network=NetworkConfig(hidden_size=16, num_layers=1),
    ppo=PPOConfig(learning_rate=1e-2, num_epochs=1, num_minibatches=2),
    group=GroupConfig(group_size=2),
)


@pytest.mark.parametrize(
    ("difficulty", "alpha", "sampled"),
    [("easy", 0.3, False), ("hard", 0.9, False), ("0.45", 0.45, False), ("sampled", None, True)],
)
def test_difficulty_reaches_the_environment_as_eval_craft_maps_it(difficulty, alpha, sampled):
    config = replace(SMOKE, options=replace(SMOKE.options, difficulty=difficulty))
    params = make_env(config).default_params
    assert bool(params.sample_alpha) == sampled
    if alpha is not None:
        assert float(params.alpha) == pytest.approx(alpha)
    assert config.output_dir.name == f"ippo-craft-2_16_{difficulty}"


@pytest.mark.parametrize(
    ("difficulty", "shown"), [("extreme", "'extreme'"), ("1.5", "1.5"), ("-0.1", "-0.1")]
)
def test_an_invalid_difficulty_fails_naming_the_value_and_the_fix(difficulty, shown):
    with pytest.raises(ConfigError) as refusal:
        TrainConfig(env="craft", options=CRAFT.options(difficulty=difficulty))
    assert str(refusal.value) == (
        f"difficulty={shown} must be one of ('easy', 'medium', 'hard', 'sampled') or an alpha "
        "in [0, 1]"
    )


# One method trains with the coordination layer; the others, whose code differs from it in
# the learner and not in the environment, on the base world (half the compile).
@pytest.mark.parametrize(
    ("method", "coordination"),
    [("ippo", True), ("mappo", False), ("grpo", False), ("srpo", False), ("teamtr", False)],
)
def test_every_method_trains_on_craft_with_finite_losses(method, coordination):
    config = replace(
        SMOKE, algorithm=method, options=replace(SMOKE.options, coordination=coordination)
    )
    env = make_env(config)
    # Craft's resets are pooled (its spec's pooled_resets): one start state per environment.
    assert config.resolved_pool_size == config.num_envs
    algorithm = build_algorithm(config, env)
    runner = jax.jit(algorithm.init)(jax.random.PRNGKey(0))
    start = jax.tree.map(np.asarray, runner.params["actor"])
    update = jax.jit(algorithm.update)
    for _ in range(SMOKE.num_updates):
        runner, metrics = update(runner)
        losses = {name: float(v) for name, v in metrics.items() if name.startswith("loss/")}
        assert {"loss/policy", "loss/entropy"} <= losses.keys()
        assert all(np.isfinite(v) for v in losses.values()), losses
        assert metrics["episode/count"] >= 1
        assert np.isfinite(metrics["episode/return"])
    assert int(runner.update_step) == SMOKE.num_updates
    leaves = zip(jax.tree.leaves(start), jax.tree.leaves(runner.params["actor"]), strict=True)
    assert any(not np.allclose(before, after) for before, after in leaves)


@pytest.fixture(scope="module")
def pretrained():
    return baselines.load("ippo-craft-medium")


def test_shipped_craft_policy_fits_the_environment_and_acts_legally(pretrained):
    assert "ippo-craft-medium" in baselines.pretrained_names()
    env = pretrained.make_env()
    params = env.default_params
    assert pretrained.recorded_settings["difficulty"] == "medium"
    pretrained.check_fits(env)
    assert env.config.map_size == 32
    assert float(params.alpha) == pytest.approx(0.6)
    # The env's current interface: a changed observation or action list fails here.
    assert pretrained.actor.observation_shape == tuple(env.observation_shape)
    assert pretrained.actor.num_actions == env.num_actions

    def first_step(key):
        reset_key, policy_key, env_key = jax.random.split(key, 3)
        observation, state = env.reset(reset_key, params)
        mask = env.action_mask(state, params)
        actions = pretrained(policy_key, observation, mask)
        _, _, reward, _, _ = env.step(env_key, state, actions, params)
        return actions, mask, reward

    actions, mask, reward = jax.jit(jax.vmap(first_step))(
        jax.random.split(jax.random.PRNGKey(7), 16)
    )
    assert actions.shape == (16, env.num_agents) and actions.dtype == jnp.int32
    assert np.all(np.take_along_axis(np.asarray(mask), np.asarray(actions)[..., None], -1))
    assert np.isfinite(np.asarray(reward)).all()
    assert len(np.unique(np.asarray(actions))) > 1  # acts on what it sees, not one fixed action
