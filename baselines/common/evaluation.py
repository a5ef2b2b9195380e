"""Evaluating trained actors on the fixed seed protocol of `alemlite.evaluation`.

Episodes use exactly the protocol's keys (`episode_keys`, `step_keys`), so a
trained agent meets the same start states and environment randomness as the
scripted policies and language models evaluated elsewhere. The loop here also
carries the actor's recurrent state, which `alemlite.evaluation.play_episode`
(a memoryless `policy(key, state, params)`) cannot, and it is vmapped over
seeds so that one compiled call evaluates every seed of a run.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from alemlite.core.environment import Environment
from alemlite.evaluation import episode_keys, step_keys
from baselines.common.agents import SharedActor


def play_episode(
    env: Environment, actor: SharedActor, actor_params: Any, env_params: Any, key: jax.Array
) -> dict[str, jax.Array]:
    """One episode on the protocol: the env's metrics plus `episode_return` and `episode_length`.

    `episode_return` is the mean over seats in play, as in `alemlite.evaluation`.
    """
    reset_key, play_key = jax.random.split(key)
    observation, state = env.reset(reset_key, env_params)

    def one_step(carry):
        observation, state, hidden, episode_return, _, step = carry
        policy_key, env_key = step_keys(play_key, step)
        hidden, actions, _ = actor.act(
            actor_params,
            hidden,
            observation[None],
            env.action_mask(state, env_params)[None],
            (step == 0)[None],
            policy_key,
        )
        observation, state, reward, done, _ = env.step(env_key, state, actions[0], env_params)
        return observation, state, hidden, episode_return + reward, done, step + 1

    initial = (
        observation,
        state,
        actor.initial_hidden(1),
        jnp.zeros((env.num_agents,), jnp.float32),
        jnp.array(False),
        jnp.int32(0),
    )
    _, state, _, episode_return, _, length = jax.lax.while_loop(
        lambda carry: ~carry[4], one_step, initial
    )
    active = env.agent_active(state, env_params)
    return {
        **env.episode_metrics(state, env_params),
        "episode_return": jnp.sum(episode_return * active) / jnp.maximum(active.sum(), 1),
        "episode_length": length,
    }


class SeedEvaluator:
    """Evaluates the actors of every seed of a run; compiled once, for `batch_size` episodes.

    Any number of episodes runs as consecutive batches (the last one padded), so
    validation and test evaluations share one compiled program.
    """

    def __init__(
        self,
        env: Environment,
        actor: SharedActor,
        env_params: Any | None = None,
        batch_size: int = 128,
    ):
        env_params = env.default_params if env_params is None else env_params
        self.batch_size = batch_size

        def evaluate_seeds(actor_params, keys):
            def evaluate_one(params):
                return jax.vmap(lambda key: play_episode(env, actor, params, env_params, key))(keys)

            return jax.vmap(evaluate_one)(actor_params)

        self._evaluate = jax.jit(evaluate_seeds)

    def __call__(
        self, actor_params: Any, num_episodes: int, base_seed: int
    ) -> dict[str, np.ndarray]:
        """Per-seed, per-episode metrics `(num_seeds, num_episodes)` for stacked `actor_params`."""
        keys = episode_keys(base_seed, num_episodes)
        num_batches = -(-num_episodes // self.batch_size)
        padding = num_batches * self.batch_size - num_episodes
        keys = jnp.concatenate([keys, jnp.repeat(keys[-1:], padding, axis=0)])
        batches = [
            jax.device_get(self._evaluate(actor_params, batch))
            for batch in keys.reshape(num_batches, self.batch_size, *keys.shape[1:])
        ]
        return {
            name: np.concatenate([batch[name] for batch in batches], axis=1)[:, :num_episodes]
            for name in batches[0]
        }
