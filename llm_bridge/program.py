"""The compiled programs of an LLM evaluation: reset, step and metrics of the whole batch of
episodes, with scripted and MARL seats acting inside the step, and the agents' views.

`BatchProgram.warm` runs each program once on a run's first state, so that all of them are
compiled before the run's clock starts (`usage.compile_s` is reported apart): the loop then
compiles nothing, whatever the step (the step number is a traced argument, and every array
keeps its shape from step to step).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from alemlite.core.environment import Environment
from alemlite.evaluation import seat_policies, step_keys
from llm_bridge.agents import Agent, LLMAgent, PolicyAgent

# render_agent_rgb(env, state, params, agent) -> (H, W, 3) uint8, jittable (the env's spec)
AgentRenderer = Callable[[Environment, Any, Any, Any], Any]


class BatchProgram:
    """The compiled reset, step and metrics of the whole batch, with policy seats inside."""

    def __init__(self, env: Environment, params: Any, team: Sequence[Agent]):
        llm_seat = np.array([isinstance(agent, LLMAgent) for agent in team])
        policies = [agent.policy for agent in team if isinstance(agent, PolicyAgent)]
        # LLM seats take any policy's action, which their own replaces.
        policy = (
            seat_policies(
                [agent.policy if isinstance(agent, PolicyAgent) else policies[0] for agent in team]
            )
            if policies
            else None
        )

        def reset(key):
            reset_key, play_key = jax.random.split(key)
            return env.reset(reset_key, params)[1], play_key

        def team_actions(policy_key, state, llm_actions):
            if policy is None:
                return llm_actions
            return jnp.where(llm_seat, llm_actions, policy(policy_key, state, params))

        def step(state, play_key, done, episode_return, length, llm_actions, t):
            policy_key, env_key = step_keys(play_key, t)
            actions = team_actions(policy_key, state, llm_actions).astype(jnp.int32)
            _, next_state, reward, next_done, _ = env.step(env_key, state, actions, params)
            # Finished episodes stay frozen on their final state.
            state = jax.tree.map(lambda new, old: jnp.where(done, old, new), next_state, state)
            episode_return = episode_return + jnp.where(done, 0.0, reward)
            length = length + (~done).astype(jnp.int32)
            return state, done | next_done, episode_return, length, actions

        def metrics(state, episode_return, length):
            active = env.agent_active(state, params)
            return {
                **env.episode_metrics(state, params),
                "episode_return": jnp.sum(episode_return * active) / jnp.maximum(active.sum(), 1),
                "episode_length": length,
            }

        self.reset = jax.jit(jax.vmap(reset))
        self.step = jax.jit(jax.vmap(step, in_axes=(0, 0, 0, 0, 0, 0, None)))
        self.metrics = jax.jit(jax.vmap(metrics))
        self.view = jax.jit(
            jax.vmap(
                lambda state: (env.agent_active(state, params), env.action_mask(state, params))
            )
        )
        self._env, self._params = env, params
        self._frames: dict[AgentRenderer, Callable] = {}

    def warm(self, state, play_key, done, episode_return, length, actions, frames) -> None:
        """Run every program once on the run's first arrays, results dropped (each program is
        pure), so that all are compiled before the run's clock starts."""
        stepped = self.step(state, play_key, done, episode_return, length, actions, 0)
        viewed = self.view(state), frames and frames(state)
        jax.block_until_ready((stepped, viewed, self.metrics(state, episode_return, length)))

    def frames(self, render: AgentRenderer) -> Callable:
        """Every agent's view in every episode of the batch, `(B, P, H, W, 3)` uint8, as
        `render` draws one (compiled once per renderer, for the runs that share the program)."""
        if render not in self._frames:
            env, params, agents = self._env, self._params, jnp.arange(self._env.num_agents)

            def views(state):
                return jax.vmap(lambda agent: render(env, state, params, agent))(agents)

            self._frames[render] = jax.jit(jax.vmap(views))
        return self._frames[render]


# Compiled batch programs, kept for later runs in this process (an ablation sweep, tests):
# one environment, parameter values and set of policy seats always compile the same.
_PROGRAMS: OrderedDict[tuple, tuple[Environment, tuple[Agent, ...], BatchProgram]] = OrderedDict()
_PROGRAMS_KEPT = 4


def batch_program(env: Environment, params: Any, team: Sequence[Agent]) -> BatchProgram:
    leaves, treedef = jax.tree.flatten(jax.device_get(params))
    values = tuple(
        (np.asarray(leaf).dtype.str, np.shape(leaf), np.asarray(leaf).tobytes()) for leaf in leaves
    )
    seats = tuple(id(agent) if isinstance(agent, PolicyAgent) else None for agent in team)
    key = (id(env), str(treedef), values, seats)
    if key not in _PROGRAMS:
        # The entry holds the environment and policy agents, so that their ids stay theirs.
        policies = tuple(agent for agent in team if isinstance(agent, PolicyAgent))
        _PROGRAMS[key] = (env, policies, BatchProgram(env, params, team))
        while len(_PROGRAMS) > _PROGRAMS_KEPT:
            _PROGRAMS.popitem(last=False)
    _PROGRAMS.move_to_end(key)
    return _PROGRAMS[key][2]
