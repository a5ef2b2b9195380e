"""GRPO: group-relative policy optimisation, critic-free, with parameter-shared actors.

Every update starts fresh episodes: `num_envs / G` start states are drawn and
each is tiled `G` times, so a group shares its start state but not its action
or step keys. After `num_steps` steps each member's undiscounted return of that
first episode (cut at `num_steps` if it is still running; choose `num_steps` at
least the episode length for whole episodes) is compared with its group:
advantage = (R - mean) / (std + eps), the same for every step of the episode.
Later auto-reset episodes in the rollout carry no loss. Epochs of the clipped
surrogate follow, with an optional k3 KL penalty towards the frozen initial
policy. SRPO (srpo.py) changes only the ratio; TeamTR (teamtr.py) the order of
the updates.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from alemlite.core.environment import Environment
from alemlite.core.errors import require
from alemlite.core.logging import LogWrapper
from alemlite.core.vec import VecEnv
from baselines.common import rollout as rollouts
from baselines.common.agents import SharedActor
from baselines.common.algorithm import Runner
from baselines.common.config import AlgorithmConfig, GroupConfig
from baselines.common.group import (
    env_major,
    episode_returns,
    first_episode_mask,
    group_advantages,
    k3_kl,
    tile_groups,
)
from baselines.common.networks import masked_categorical
from baselines.common.ppo import (
    adam_optimizer,
    clipped_surrogate,
    minibatch_epochs,
    weighted_mean,
)
from baselines.common.rollout import AgentView, RolloutState


class GRPO:
    def __init__(self, env: Environment, config: AlgorithmConfig, group: GroupConfig | None = None):
        self.config = config
        self.group = group or config.group
        require(
            config.num_envs % self.group.group_size == 0,
            f"num_envs={config.num_envs} must be a multiple of group_size={self.group.group_size}",
        )
        self.env = env
        self.env_params = env.default_params
        self.vec_env = VecEnv(
            LogWrapper(env), config.num_envs, config.pool_size, config.refresh_per_step
        )
        # Draws one start state per group; the rollout batch tiles them.
        self.start_env = VecEnv(LogWrapper(env), config.num_envs // self.group.group_size)
        self.actor = SharedActor(
            config.network, env.num_agents, env.num_actions, tuple(env.observation_shape)
        )
        self.optimizer = adam_optimizer(
            config.ppo, config.num_updates * self.optimizer_steps_per_update
        )

    @property
    def rollouts_per_update(self) -> int:
        """Rollouts of `num_steps` steps played per update (the trainer counts agent steps)."""
        return 1

    @property
    def optimizer_steps_per_update(self) -> int:
        ppo = self.config.ppo
        return self.rollouts_per_update * ppo.num_epochs * ppo.num_minibatches

    # ---- acting (no critic: the rollout's values are zeros) ---------------------------
    def _act(self, actor_params, hidden, view: AgentView, key):
        hidden, actions, log_prob = self.actor.act(
            actor_params, hidden, view.observation, view.action_mask, view.episode_start, key
        )
        return hidden, actions, log_prob, jnp.zeros_like(log_prob)

    @staticmethod
    def _no_bootstrap(actor_params, hidden, final_view: AgentView):
        return jnp.zeros(final_view.active.shape, jnp.float32)

    # ---- the algorithm ------------------------------------------------------------------
    def init(self, key: jax.Array) -> Runner:
        actor_key, env_key, run_key = jax.random.split(key, 3)
        actor_params = self.actor.init(actor_key)
        params = {"actor": actor_params}
        if self.group.kl_coef > 0:
            params["reference"] = actor_params  # frozen: the optimiser sees only the actor
        hidden = self.actor.initial_hidden(self.config.num_envs)
        return Runner(
            params=params,
            opt_state=self.optimizer.init(actor_params),
            rollout=rollouts.reset(self.vec_env, self.env_params, env_key, hidden),
            key=run_key,
            update_step=jnp.zeros((), jnp.int32),
        )

    def update(self, runner: Runner) -> tuple[Runner, dict[str, jax.Array]]:
        ppo = self.config.ppo
        key, rollout_key, epoch_key = jax.random.split(runner.key, 3)
        rollout, batch, statistics = self.group_rollout(
            runner.params["actor"], runner.rollout, rollout_key, runner.env_params
        )
        actor_params, opt_state, diagnostics = minibatch_epochs(
            epoch_key,
            runner.params["actor"],
            runner.opt_state,
            self.optimizer,
            batch,
            lambda params, minibatch: self.loss(params, minibatch, runner.params.get("reference")),
            ppo.num_epochs,
            ppo.num_minibatches,
        )
        runner = Runner(
            params={**runner.params, "actor": actor_params},
            opt_state=opt_state,
            rollout=rollout,
            key=key,
            update_step=runner.update_step + 1,
            env_params=runner.env_params,
        )
        return runner, {**diagnostics, **statistics}

    def group_rollout(
        self, actor_params, rollout: RolloutState, key: jax.Array, env_params: Any = None
    ) -> tuple[RolloutState, dict[str, Any], dict[str, jax.Array]]:
        """Fresh grouped episodes, played for `num_steps`; returns an environment-major batch.

        The batch holds the transitions, group advantages `(E, N)`, loss weights
        `(E, T, N)` (seats in play during the first episode) and the actor's start state.
        Per-table `env_params` (a curriculum's) must agree within each group.
        """
        group_size, num_envs = self.group.group_size, self.config.num_envs
        env_params = self.env_params if env_params is None else env_params
        start_params = jax.tree.map(  # one entry per group for the start states
            lambda leaf, axis: leaf if axis is None else leaf[::group_size],
            env_params,
            self.vec_env.params_axes(env_params),
        )
        start_key, collect_key = jax.random.split(key)
        observation, start = self.start_env.reset(start_key, start_params)
        env_state = rollout.env_state.replace(env_state=tile_groups(start.env_state, group_size))
        view = rollouts.agent_view(
            self.vec_env,
            env_state,
            tile_groups(observation, group_size),
            env_params,
            jnp.ones((num_envs,), bool),
        )
        start_hidden = self.actor.initial_hidden(num_envs)
        rollout, transitions = rollouts.collect(
            self.vec_env,
            env_params,
            self._act,
            self._no_bootstrap,
            actor_params,
            RolloutState(env_state=env_state, view=view, hidden=start_hidden),
            collect_key,
            self.config.num_steps,
        )
        in_episode = first_episode_mask(transitions.done)
        active = transitions.view.active
        returns = episode_returns(
            transitions.reward, in_episode, active[0], self.group.returns == "team"
        )
        advantages = group_advantages(returns, group_size)
        weights = in_episode[..., None] & active
        batch = {
            "transitions": env_major(transitions),
            "advantages": advantages,
            "weights": env_major(weights),
            "start_hidden": start_hidden,
        }
        first_episodes = transitions.replace(done=transitions.done & in_episode)
        group_spread = returns.reshape(-1, group_size, returns.shape[-1]).std(axis=1)
        statistics = {
            **rollouts.episode_statistics(first_episodes),
            # Logged even where no episode ends within `num_steps` (long craft episodes).
            "group/return": weighted_mean(returns, active[0]),
            "group/return_std": weighted_mean(group_spread, active[0][::group_size]),
            "group/no_signal_fraction": (group_spread.max(-1) == 0).mean(),
        }
        return rollout, batch, statistics

    # ---- losses -----------------------------------------------------------------------
    def log_probs(self, actor_params, minibatch) -> tuple[jax.Array, jax.Array]:
        """Log-probabilities of the stored actions and the entropies, both `(T, E, N)`."""
        transitions = env_major(minibatch["transitions"])
        view = transitions.view
        _, logits = self.actor.logits(
            actor_params,
            minibatch["start_hidden"],
            view.observation,
            view.episode_start,
            view.action_mask,
        )
        distribution = masked_categorical(logits, view.action_mask)
        return distribution.log_prob(transitions.actions), distribution.entropy()

    def policy_loss(
        self, log_ratio: jax.Array, advantages: jax.Array, weights: jax.Array
    ) -> tuple[jax.Array, dict[str, jax.Array]]:
        """The clipped surrogate per (step, seat): log_ratio and weights `(T, E, N)`."""
        return clipped_surrogate(log_ratio, advantages[None], self.config.ppo.clip_eps, weights)

    def loss(self, actor_params, minibatch, reference=None):
        log_prob, entropy = self.log_probs(actor_params, minibatch)
        old_log_prob = env_major(minibatch["transitions"].log_prob)
        weights = env_major(minibatch["weights"])
        policy_loss, diagnostics = self.policy_loss(
            log_prob - old_log_prob, minibatch["advantages"], weights
        )
        entropy = weighted_mean(entropy, weights)
        loss = policy_loss - self.config.ppo.entropy_coef * entropy
        terms = {"loss/policy": policy_loss, "loss/entropy": entropy}
        if reference is not None:
            reference_log_prob, _ = self.log_probs(reference, minibatch)
            kl = weighted_mean(k3_kl(reference_log_prob - log_prob), weights)
            loss = loss + self.group.kl_coef * kl
            terms["loss/kl_reference"] = kl
        return loss, {**terms, **{f"loss/{name}": value for name, value in diagnostics.items()}}
