"""Independent PPO with parameter sharing: every seat runs the same actor and critic.

Actor and critic both read the agent's local observation and one-hot id; the
action mask removes illegal actions from the policy. One `update` collects a
rollout through the auto-reset `VecEnv`, computes advantages with truncation
bootstrapping, and runs epochs of clipped PPO over minibatches of environments.
Every seat learns from the team's reward by default (`ppo.rewards`): with its own
reward a seat gains by holding forks its neighbours need.
`MAPPO` (mappo.py) changes only what the critic reads.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from alemlite.core.environment import Environment
from alemlite.core.logging import LogWrapper
from alemlite.core.vec import VecEnv
from baselines.common import rollout as rollouts
from baselines.common.agents import SharedActor, SharedCritic
from baselines.common.algorithm import Runner
from baselines.common.config import AlgorithmConfig
from baselines.common.gae import generalised_advantages
from baselines.common.networks import masked_categorical
from baselines.common.ppo import (
    adam_optimizer,
    clipped_surrogate,
    clipped_value_loss,
    minibatch_epochs,
    normalise,
    weighted_mean,
)
from baselines.common.rollout import AgentView
from baselines.common.teacher import imitation_loss, teacher_actions


def team_rewards(reward: jax.Array, active: jax.Array) -> jax.Array:
    """Every seat in play gets the mean reward of the seats in play; inert seats get 0.

    reward, active: `(..., N)`.
    """
    mean = (reward * active).sum(-1, keepdims=True) / jnp.maximum(active.sum(-1, keepdims=True), 1)
    return jnp.where(active, mean, 0.0)


def _env_major(tree):
    """Swap the leading time and environment axes, `(T, E, ...)` <-> `(E, T, ...)`."""
    return jax.tree.map(lambda leaf: jnp.swapaxes(leaf, 0, 1), tree)


class IPPO:
    def __init__(self, env: Environment, config: AlgorithmConfig):
        self.config = config
        self.env = env
        self.vec_env = VecEnv(
            LogWrapper(env), config.num_envs, config.pool_size, config.refresh_per_step
        )
        self.env_params = env.default_params
        self.actor = SharedActor(
            config.network, env.num_agents, env.num_actions, tuple(env.observation_shape)
        )
        self.critic = SharedCritic(config.network, env.num_agents, self.critic_input_shape)
        ppo = config.ppo
        self.event_bonus = (
            rollouts.EventBonus(ppo.event_metric, ppo.event_bonus) if ppo.event_metric else None
        )
        if self.event_bonus is not None:
            rollouts.check_event_bonus(env, self.event_bonus)
        imitation = config.imitation
        self.teacher = (
            teacher_actions(env, self.vec_env, imitation.teacher)
            if imitation.kickstart_coef > 0
            else None
        )
        self.optimizer = adam_optimizer(
            ppo, config.num_updates * ppo.num_epochs * ppo.num_minibatches
        )

    @property
    def rollouts_per_update(self) -> int:
        return 1

    # ---- what the critic reads -----------------------------------------------------
    @property
    def critic_input_shape(self) -> tuple[int, ...]:
        return tuple(self.env.observation_shape)

    def critic_inputs(self, view: AgentView) -> jax.Array:
        """Per-agent critic inputs `(..., E, N, *critic_input_shape)`."""
        return view.observation

    # ---- acting ----------------------------------------------------------------------
    def _values(self, critic_params, critic_hidden, view: AgentView):
        """Values for a one-step view `(E, N)`."""
        hidden, values = self.critic.values(
            critic_params, critic_hidden, self.critic_inputs(view)[None], view.episode_start[None]
        )
        return hidden, values[0]

    def _act(self, params, hidden, view: AgentView, key):
        actor_hidden, actions, log_prob = self.actor.act(
            params["actor"],
            hidden["actor"],
            view.observation,
            view.action_mask,
            view.episode_start,
            key,
        )
        critic_hidden, value = self._values(params["critic"], hidden["critic"], view)
        return {"actor": actor_hidden, "critic": critic_hidden}, actions, log_prob, value

    def _bootstrap(self, params, hidden, final_view: AgentView):
        return self._values(params["critic"], hidden["critic"], final_view)[1]

    # ---- the algorithm ------------------------------------------------------------------
    def init(self, key: jax.Array) -> Runner:
        actor_key, critic_key, env_key, run_key = jax.random.split(key, 4)
        params = {"actor": self.actor.init(actor_key), "critic": self.critic.init(critic_key)}
        num_envs = self.config.num_envs
        hidden = {
            "actor": self.actor.initial_hidden(num_envs),
            "critic": self.critic.initial_hidden(num_envs),
        }
        return Runner(
            params=params,
            opt_state=self.optimizer.init(params),
            rollout=rollouts.reset(self.vec_env, self.env_params, env_key, hidden),
            key=run_key,
            update_step=jnp.zeros((), jnp.int32),
        )

    def update(self, runner: Runner) -> tuple[Runner, dict[str, jax.Array]]:
        ppo = self.config.ppo
        key, rollout_key, epoch_key = jax.random.split(runner.key, 3)
        start_hidden = runner.rollout.hidden
        env_params = self.env_params if runner.env_params is None else runner.env_params
        rollout, transitions = rollouts.collect(
            self.vec_env,
            env_params,
            self._act,
            self._bootstrap,
            runner.params,
            runner.rollout,
            rollout_key,
            self.config.num_steps,
            teacher=self.teacher,
            event_bonus=self.event_bonus,
        )
        _, last_value = self._values(
            runner.params["critic"], rollout.hidden["critic"], rollout.view
        )
        reward = transitions.reward
        if ppo.rewards == "team":
            reward = team_rewards(reward, transitions.view.active)
        advantages, targets = generalised_advantages(
            reward,
            transitions.value,
            transitions.done[..., None],
            transitions.terminal[..., None],
            transitions.final_value,
            last_value,
            ppo.gamma,
            ppo.gae_lambda,
        )
        batch = {
            "transitions": _env_major(transitions),
            "advantages": _env_major(advantages),
            "targets": _env_major(targets),
            "start_hidden": start_hidden,
        }
        params, opt_state, diagnostics = minibatch_epochs(
            epoch_key,
            runner.params,
            runner.opt_state,
            self.optimizer,
            batch,
            self._loss,
            ppo.num_epochs,
            ppo.num_minibatches,
        )
        runner = Runner(
            params=params,
            opt_state=opt_state,
            rollout=rollout,
            key=key,
            update_step=runner.update_step + 1,
            env_params=runner.env_params,
        )
        return runner, {**diagnostics, **rollouts.episode_statistics(transitions)}

    def _loss(self, params, minibatch):
        ppo = self.config.ppo
        transitions = _env_major(minibatch["transitions"])
        view = transitions.view
        _, logits = self.actor.logits(
            params["actor"],
            minibatch["start_hidden"]["actor"],
            view.observation,
            view.episode_start,
            view.action_mask,
        )
        distribution = masked_categorical(logits, view.action_mask)
        _, values = self.critic.values(
            params["critic"],
            minibatch["start_hidden"]["critic"],
            self.critic_inputs(view),
            view.episode_start,
        )
        weights = view.active
        advantages = normalise(_env_major(minibatch["advantages"]), weights)
        log_ratio = distribution.log_prob(transitions.actions) - transitions.log_prob
        policy_loss, diagnostics = clipped_surrogate(log_ratio, advantages, ppo.clip_eps, weights)
        value_loss = clipped_value_loss(
            values, transitions.value, _env_major(minibatch["targets"]), ppo.clip_eps, weights
        )
        entropy = weighted_mean(distribution.entropy(), weights)
        loss = policy_loss + ppo.value_coef * value_loss - ppo.entropy_coef * entropy
        terms = {}
        if self.teacher is not None:  # kickstarting: held to the teacher on the learner's states
            imitation, _ = imitation_loss(distribution, view)
            loss = loss + self.config.imitation.kickstart_coef * imitation
            terms["loss/kickstart"] = imitation
        return loss, {
            "loss/policy": policy_loss,
            "loss/value": value_loss,
            "loss/entropy": entropy,
            **terms,
            **{f"loss/{name}": value for name, value in diagnostics.items()},
        }
