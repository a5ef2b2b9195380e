"""A scripted teacher's actions on every table of a batch, and the cross-entropy towards
them (DAgger's whole loss, kickstarting's extra term).

A teacher action the mask forbids does what the environment's no-op does (its spec's
`noop_action`: a failed grab at dining is a wait), so it is relabelled as the no-op, the
action the learner can take to the same effect; where an environment declares no no-op,
it carries no loss.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

import alemlite
from alemlite.core.environment import Environment
from alemlite.core.vec import VecEnv, VecState
from baselines.common.ppo import weighted_mean
from baselines.common.rollout import AgentView, TeacherFn


def teacher_actions(env: Environment, vec_env: VecEnv, teacher: str) -> TeacherFn:
    """`(key, state, env_params) -> (E, N)` actions of `env`'s scripted policy `teacher`."""
    env_spec = alemlite.spec(env.name)
    policy = env_spec.policy(teacher, env)
    noop_action = env_spec.noop_action

    def act(key: jax.Array, state: VecState, env_params) -> jax.Array:
        keys = jax.random.split(key, vec_env.num_envs)
        in_axes = (0, 0, vec_env.params_axes(env_params))
        # VecState holds LogWrapper states; the teacher reads the environment's own.
        actions = jax.vmap(policy, in_axes=in_axes)(keys, state.env_state.env_state, env_params)
        if noop_action is None:
            return actions
        mask = vec_env.action_mask(state, env_params)
        return jnp.where(allowed(mask, actions), actions, noop_action)

    return act


def allowed(mask: jax.Array, actions: jax.Array) -> jax.Array:
    """Whether the mask `(..., N, A)` allows each action `(..., N)`."""
    return jnp.take_along_axis(mask, actions[..., None], -1)[..., 0]


def imitation_loss(distribution, view: AgentView) -> tuple[jax.Array, jax.Array]:
    """The mean cross-entropy of `distribution` towards the view's teacher actions over the
    seats in play, and the share of labels the mask forbids (they carry no loss)."""
    labels = view.teacher_actions
    legal = allowed(view.action_mask, labels)
    loss = -weighted_mean(distribution.log_prob(labels), view.active & legal)
    return loss, weighted_mean(~legal, view.active)
