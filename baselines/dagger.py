"""DAgger: imitation of one of the environment's scripted policies, with parameter sharing.

Every update plays `num_steps` steps of every table and asks the teacher (a scripted
policy of the environment's spec, `imitation.teacher`, which reads the whole state) what
it would do on each state played. At first the teacher plays too: on every table for the
first `imitation.cloning_updates` updates (0 by default), then on a share of the tables
that falls linearly from 1 to `imitation.final_teacher_share` (0 by default) over
`imitation.mixing_updates` updates, each step's actions are the teacher's; on the rest the
learner's own (`imitation.mix_by`: who plays a table is drawn at every step, or once an
episode, so that whole episodes are the teacher's or the learner's). The learner is
trained on every visited state towards the teacher's action (cross-entropy, epochs of
minibatches as in PPO), so it learns to recover from the states its own mistakes lead to
rather than only the teacher's (Ross, Gordon and Bagnell, 2011). A final share of 1 is
behaviour cloning from a stream of fresh teacher episodes: no state is trained on twice
across updates, so a wide network can take many updates without overfitting a fixed data
set. The learner reads only its own observation: what the teacher knows beyond it, the
learner must infer.

A teacher action the mask forbids is relabelled as the environment's no-op, or carries no
loss where it declares none (`baselines.common.teacher`; `imitation/forbidden_labels`, the
share of such labels).
The actor exports and evaluates like any other; there is no critic.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from alemlite.core.environment import Environment
from alemlite.core.logging import LogWrapper
from alemlite.core.vec import VecEnv
from baselines.common import rollout as rollouts
from baselines.common.agents import SharedActor
from baselines.common.algorithm import Runner
from baselines.common.config import AlgorithmConfig
from baselines.common.group import env_major
from baselines.common.networks import masked_categorical
from baselines.common.ppo import adam_optimizer, minibatch_epochs, weighted_mean
from baselines.common.rollout import AgentView
from baselines.common.teacher import imitation_loss, teacher_actions


class DAgger:
    def __init__(self, env: Environment, config: AlgorithmConfig):
        self.config = config
        self.env = env
        self.vec_env = VecEnv(
            LogWrapper(env), config.num_envs, config.pool_size, config.refresh_per_step
        )
        self.env_params = env.default_params
        self._teacher_actions = teacher_actions(env, self.vec_env, config.imitation.teacher)
        self.actor = SharedActor(
            config.network, env.num_agents, env.num_actions, tuple(env.observation_shape)
        )
        ppo = config.ppo
        self.optimizer = adam_optimizer(
            ppo, config.num_updates * ppo.num_epochs * ppo.num_minibatches
        )

    @property
    def rollouts_per_update(self) -> int:
        return 1

    def teacher_share(self, update_step: jax.Array) -> jax.Array:
        """The share of tables the teacher plays at update `update_step` (0-based)."""
        imitation = self.config.imitation
        final = jnp.float32(imitation.final_teacher_share)
        mixing_step = update_step - imitation.cloning_updates
        if imitation.mixing_updates == 0:
            return jnp.where(mixing_step < 0, jnp.float32(1.0), final)
        falling = jnp.clip(1.0 - mixing_step / imitation.mixing_updates, 0.0, 1.0)
        return final + (1.0 - final) * falling

    def _act(self, teacher_share, params, hidden, view: AgentView, key):
        learner_key, share_key = jax.random.split(key)
        actor_hidden, learned, _ = self.actor.act(
            params["actor"],
            hidden["actor"],
            view.observation,
            view.action_mask,
            view.episode_start,
            learner_key,
        )
        taught = jax.random.uniform(share_key, (self.vec_env.num_envs,)) < teacher_share
        new_hidden = {"actor": actor_hidden}
        if self.config.imitation.mix_by == "episode":
            # Who plays a table is drawn when its episode starts and kept until it ends.
            taught = jnp.where(view.episode_start, taught, hidden["taught"])
            new_hidden["taught"] = taught
        actions = jnp.where(taught[:, None], view.teacher_actions, learned)
        zeros = jnp.zeros(actions.shape, jnp.float32)
        return new_hidden, actions, zeros, zeros

    def _initial_hidden(self):
        hidden = {"actor": self.actor.initial_hidden(self.config.num_envs)}
        if self.config.imitation.mix_by == "episode":
            hidden["taught"] = jnp.ones((self.config.num_envs,), bool)
        return hidden

    def init(self, key: jax.Array) -> Runner:
        actor_key, env_key, run_key = jax.random.split(key, 3)
        params = {"actor": self.actor.init(actor_key)}
        hidden = self._initial_hidden()
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
        share = self.teacher_share(runner.update_step)
        rollout, transitions = rollouts.collect(
            self.vec_env,
            env_params,
            functools.partial(self._act, share),
            lambda params, hidden, view: jnp.zeros(view.active.shape, jnp.float32),
            runner.params,
            runner.rollout,
            rollout_key,
            self.config.num_steps,
            teacher=self._teacher_actions,
        )
        batch = {"view": env_major(transitions.view), "start_hidden": start_hidden}
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
        view = transitions.view
        agreement = weighted_mean((transitions.actions == view.teacher_actions), view.active)
        runner = Runner(
            params=params,
            opt_state=opt_state,
            rollout=rollout,
            key=key,
            update_step=runner.update_step + 1,
            env_params=runner.env_params,
        )
        return runner, {
            **diagnostics,
            "imitation/teacher_share": share,
            # Where the teacher played, agreement is 1 by construction.
            "imitation/agreement": agreement,
            **rollouts.episode_statistics(transitions),
        }

    def _loss(self, params, minibatch):
        view = env_major(minibatch["view"])
        _, logits = self.actor.logits(
            params["actor"],
            minibatch["start_hidden"]["actor"],
            view.observation,
            view.episode_start,
            view.action_mask,
        )
        distribution = masked_categorical(logits, view.action_mask)
        loss, forbidden = imitation_loss(distribution, view)
        return loss, {
            "loss/imitation": loss,
            "loss/entropy": weighted_mean(distribution.entropy(), view.active),
            "imitation/forbidden_labels": forbidden,
        }
