"""Collecting `T` steps from a `VecEnv` (with `LogWrapper`) into time-major arrays.

The rollout is agnostic of the algorithm: it calls `act` for actions, log-probs
and values, and `bootstrap` for the value of the observation a cut-off episode
ended on (`info["final_observation"]`, and the global state of
`info["final_state"]`), computed with the recurrent state the episode ended
with, which is why it is computed here rather than after the rollout.

The environment's declared `time_limit` decides what a truncation means for
value targets: at a time limit that is part of the task (`TimeLimit.TASK`)
nothing follows, so the step is `terminal` like a termination; at a cut-off
(`TimeLimit.CUTOFF`) the target bootstraps from the final observation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from alemlite.core.environment import TimeLimit
from alemlite.core.errors import require
from alemlite.core.vec import VecEnv, VecState


@struct.dataclass
class AgentView:
    """What agents and critics can read at one step, with a leading environment axis."""

    observation: jax.Array  # (E, N, *observation_shape)
    action_mask: jax.Array  # (E, N, A) bool
    global_state: jax.Array  # (E, *global_state_shape)
    active: jax.Array  # (E, N) bool: seats in play (inert seats carry no loss)
    episode_start: jax.Array  # (E,) bool: recurrent state starts again here
    # (E, N) int32: a scripted teacher's actions on this step's states, which imitation
    # learns from (`collect(..., teacher=...)`); None otherwise.
    teacher_actions: jax.Array | None = None


def agent_view(vec_env: VecEnv, state: VecState, observation, params, episode_start) -> AgentView:
    return AgentView(
        observation=observation,
        action_mask=vec_env.action_mask(state, params),
        global_state=vec_env.global_state(state, params),
        active=vec_env.agent_active(state, params),
        episode_start=episode_start,
    )


@struct.dataclass
class RolloutState:
    env_state: VecState
    view: AgentView  # the view the next action is chosen from
    hidden: Any  # the algorithm's recurrent state (None when feed-forward)


@struct.dataclass
class Transition:
    """One step of every environment; stacked over time by `collect`."""

    view: AgentView
    actions: jax.Array  # (E, N) int32
    log_prob: jax.Array  # (E, N)
    value: jax.Array  # (E, N)
    reward: jax.Array  # (E, N)
    done: jax.Array  # (E,) terminated | truncated
    terminal: jax.Array  # (E,) nothing follows: terminated, or truncated at a task time limit
    final_value: jax.Array  # (E, N) value of the final observation where cut off, else 0
    episode_return: jax.Array  # (E,) mean over active seats of the episode ending here
    episode_length: jax.Array  # (E,)
    episode_metrics: dict[str, jax.Array]  # scalar metrics of the episode ending here, (E,)


# act(params, hidden, view, key) -> (hidden, actions, log_prob, value)
ActFn = Callable[[Any, Any, AgentView, jax.Array], tuple[Any, jax.Array, jax.Array, jax.Array]]
# bootstrap(params, hidden, final_view) -> value (E, N)
BootstrapFn = Callable[[Any, Any, AgentView], jax.Array]
# teacher(key, env_state, env_params) -> the teacher's actions (E, N)
TeacherFn = Callable[[jax.Array, VecState, Any], jax.Array]


@dataclass(frozen=True)
class EventBonus:
    """Training-only shaping: `bonus` to each seat in play per unit rise of the episode
    metric `metric` on a step (the logged episode returns stay the environment's)."""

    metric: str
    bonus: float


def check_event_bonus(env, event_bonus: EventBonus) -> None:
    """Refuse (one line, before anything is traced) a bonus on a metric `env` does not have."""
    params = env.default_params
    state = jax.eval_shape(lambda: env.reset(jax.random.PRNGKey(0), params)[1])
    names = sorted(jax.eval_shape(env.episode_metrics, state, params))
    require(
        event_bonus.metric in names,
        f"ppo.event_metric={event_bonus.metric!r} is not an episode metric of {env.name}; "
        f"choose one of {', '.join(names)}",
    )


def episode_metric(vec_env: VecEnv, state: VecState, params, name: str) -> jax.Array:
    """The episode metric `name` of every environment's running episode, `(E,)`."""
    metrics = jax.vmap(vec_env.env.episode_metrics, in_axes=(0, vec_env.params_axes(params)))(
        state.env_state, params
    )
    return metrics[name].astype(jnp.float32)


def reset(vec_env: VecEnv, env_params, key: jax.Array, hidden) -> RolloutState:
    observation, env_state = vec_env.reset(key, env_params)
    episode_start = jnp.ones((vec_env.num_envs,), bool)
    view = agent_view(vec_env, env_state, observation, env_params, episode_start)
    return RolloutState(env_state=env_state, view=view, hidden=hidden)


def collect(
    vec_env: VecEnv,
    env_params,
    act: ActFn,
    bootstrap: BootstrapFn,
    params,
    rollout: RolloutState,
    key: jax.Array,
    num_steps: int,
    teacher: TeacherFn | None = None,
    event_bonus: EventBonus | None = None,
) -> tuple[RolloutState, Transition]:
    """Play `num_steps` steps; returns the new rollout state and `(T, E, ...)` transitions.

    With a `teacher`, every step's view carries its actions (`AgentView.teacher_actions`),
    which `act` sees and the transitions keep. With an `event_bonus`, the transitions'
    rewards include it.
    """
    cut_off_at_time_limit = vec_env.env.time_limit is TimeLimit.CUTOFF
    if event_bonus is not None:
        check_event_bonus(vec_env.env, event_bonus)

    def one_step(rollout: RolloutState, step_key):
        act_key, env_key = jax.random.split(step_key)
        view = rollout.view
        if teacher is not None:
            teacher_key = jax.random.fold_in(step_key, 1)
            view = view.replace(teacher_actions=teacher(teacher_key, rollout.env_state, env_params))
        hidden, actions, log_prob, value = act(params, rollout.hidden, view, act_key)
        observation, env_state, reward, done, info = vec_env.step(
            env_key, rollout.env_state, actions, env_params
        )
        next_view = agent_view(vec_env, env_state, observation, env_params, done)
        if event_bonus is not None:
            # the metric after the step is the ending episode's, read before any reset
            before = episode_metric(vec_env, rollout.env_state, env_params, event_bonus.metric)
            rise = info["episode_metrics"][event_bonus.metric].astype(jnp.float32) - before
            reward = reward + event_bonus.bonus * rise[:, None] * view.active
        if cut_off_at_time_limit:
            final_view = next_view.replace(
                observation=info["final_observation"],
                global_state=vec_env.global_state(
                    env_state.replace(env_state=info["final_state"]), env_params
                ),
                episode_start=jnp.zeros_like(done),
            )
            final_value = jnp.where(
                info["truncated"][:, None], bootstrap(params, hidden, final_view), 0.0
            )
            terminal = info["terminated"]
        else:
            final_value = jnp.zeros_like(reward)
            terminal = done
        active = view.active
        transition = Transition(
            view=view,
            actions=actions,
            log_prob=log_prob,
            value=value,
            reward=reward,
            done=done,
            terminal=terminal,
            final_value=final_value,
            episode_return=(info["episode_return"] * active).sum(-1)
            / jnp.maximum(active.sum(-1), 1),
            episode_length=info["episode_length"],
            episode_metrics={
                name: value for name, value in info["episode_metrics"].items() if value.ndim == 1
            },
        )
        return RolloutState(env_state=env_state, view=next_view, hidden=hidden), transition

    return jax.lax.scan(one_step, rollout, jax.random.split(key, num_steps))


def episode_statistics(transitions: Transition) -> dict[str, jax.Array]:
    """Means over the episodes that ended within `transitions` (NaN when none ended), and
    the agent steps played."""
    done = transitions.done
    count = done.sum()

    def mean_at_done(values):
        return jnp.where(count > 0, jnp.sum(jnp.where(done, values, 0)) / count, jnp.nan)

    metrics = {
        f"episode/{name}": mean_at_done(values.astype(jnp.float32))
        for name, values in transitions.episode_metrics.items()
    }
    metrics["episode/return"] = mean_at_done(transitions.episode_return)
    metrics["episode/length"] = mean_at_done(transitions.episode_length.astype(jnp.float32))
    metrics["episode/count"] = count.astype(jnp.float32)
    # Steps of seats in play only: inert seats of a padded table are no agents.
    metrics["agent_steps"] = transitions.view.active.sum(dtype=jnp.int32)
    return metrics
