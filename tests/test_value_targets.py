"""Value targets honour the environment's declared time limit.

A fixed, observed horizon that pays at its end (as dining does) is terminal: the
last target is the reward itself and the critic learns the true values. Treating
the same horizon as a cut-off bootstraps from the value of an observation no
update ever trains, and the targets inflate.
"""

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import struct

from alemlite.core import Environment, LogWrapper, TimeLimit, VecEnv
from baselines.common import rollout as rollouts
from baselines.common.config import NetworkConfig, PPOConfig, TrainConfig
from baselines.common.gae import generalised_advantages
from baselines.common.trainer import build_algorithm, run_updates

HORIZON = 5
GAMMA = 0.99


@struct.dataclass
class CountdownState:
    step: jax.Array  # () int32


@dataclass(frozen=True)
class Countdown(Environment):
    """Two agents, a fixed horizon they observe, and a reward of 1 each at its last step."""

    declared: TimeLimit = TimeLimit.TASK
    name: str = "countdown"

    @property
    def num_agents(self) -> int:
        return 2

    @property
    def action_names(self) -> tuple[str, ...]:
        return ("LEFT", "RIGHT")

    @property
    def observation_shape(self) -> tuple[int, ...]:
        return (2,)

    @property
    def global_state_shape(self) -> tuple[int, ...]:
        return (2,)

    @property
    def time_limit(self) -> TimeLimit:
        return self.declared

    @property
    def default_params(self) -> None:
        return None

    def generate(self, key, params):
        return CountdownState(step=jnp.int32(0))

    def step(self, key, state, actions, params):
        state = CountdownState(step=state.step + 1)
        truncated = state.step >= HORIZON
        reward = jnp.full((2,), truncated, jnp.float32)
        info = {"terminated": jnp.bool_(False), "truncated": truncated}
        return self.observe(state, params), state, reward, truncated, info

    def observe(self, state, params):
        steps_left = (HORIZON - state.step) / HORIZON
        return jnp.broadcast_to(jnp.stack([steps_left, 1.0]), (2, 2)).astype(jnp.float32)

    def action_mask(self, state, params):
        return jnp.ones((2, 2), bool)

    def global_state(self, state, params):
        return self.observe(state, params)[0]

    def episode_metrics(self, state, params):
        return {}


def true_values() -> np.ndarray:
    """V at steps 0..H-1: the reward of 1 arrives H - 1 - t steps later."""
    return GAMMA ** (HORIZON - 1 - np.arange(HORIZON))


def observations() -> jax.Array:
    """The observation at each step 0..H-1, shaped `(H, 1 env, 2 agents, 2)`."""
    steps_left = (HORIZON - np.arange(HORIZON)) / HORIZON
    single = np.stack([steps_left, np.ones(HORIZON)], axis=-1)
    return jnp.asarray(np.broadcast_to(single[:, None, None], (HORIZON, 1, 2, 2)), jnp.float32)


@pytest.mark.parametrize(
    ("declared", "last_target"),
    [(TimeLimit.TASK, 1.0), (TimeLimit.CUTOFF, 1.0 + GAMMA * 12.0)],
)
def test_last_target_is_the_reward_at_a_task_horizon(declared, last_target):
    env = Countdown(declared)
    vec_env = VecEnv(LogWrapper(env), num_envs=3)

    def act(params, hidden, view, key):
        shape = view.action_mask.shape[:2]
        return hidden, jnp.zeros(shape, jnp.int32), jnp.zeros(shape), jnp.zeros(shape)

    def bootstrap(params, hidden, final_view):
        return jnp.full(final_view.active.shape, 12.0)  # a value nothing ever trained

    start = rollouts.reset(vec_env, None, jax.random.PRNGKey(0), None)
    _, transitions = rollouts.collect(
        vec_env, None, act, bootstrap, None, start, jax.random.PRNGKey(1), HORIZON
    )
    _, targets = generalised_advantages(
        transitions.reward,
        transitions.value,
        transitions.done[..., None],
        transitions.terminal[..., None],
        transitions.final_value,
        jnp.zeros((3, 2)),
        GAMMA,
        0.95,
    )
    assert bool(transitions.done[-1].all()) and not bool(transitions.done[:-1].any())
    np.testing.assert_allclose(targets[-1], last_target, rtol=1e-6)


def learned_values(declared: TimeLimit) -> np.ndarray:
    """Train IPPO's critic on Countdown; its values at steps 0..H-1, mean over seats."""
    config = TrainConfig(
        algorithm="ippo",
        num_envs=8,
        num_steps=HORIZON,
        num_updates=150,
        num_seeds=1,
        progress=False,
        network=NetworkConfig(hidden_size=16, num_layers=2),
        ppo=PPOConfig(gamma=GAMMA, num_epochs=4, num_minibatches=1, learning_rate=3e-3),
    )
    algorithm = build_algorithm(config, Countdown(declared))
    runner = jax.vmap(algorithm.init)(jax.random.split(jax.random.PRNGKey(0), 1))
    runner, _ = jax.jit(run_updates, static_argnums=(0, 1))(algorithm, config.num_updates, runner)
    critic = jax.tree.map(lambda leaf: leaf[0], runner.params["critic"])
    _, values = algorithm.critic.values(
        critic,
        algorithm.critic.initial_hidden(1),
        observations(),
        jnp.zeros((HORIZON, 1), bool),
    )
    return np.asarray(values)[:, 0].mean(axis=-1)


def test_critic_learns_the_true_values_only_when_the_horizon_is_terminal():
    errors = {
        declared: np.abs(learned_values(declared) - true_values()).max()
        for declared in (TimeLimit.TASK, TimeLimit.CUTOFF)
    }
    assert errors[TimeLimit.TASK] < 0.05, errors
    # Bootstrapping from the untrained final observation inflates every target.
    assert errors[TimeLimit.CUTOFF] > 0.5, errors
