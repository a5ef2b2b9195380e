"""JaxMARL's `MultiAgentEnv` interface over an array environment, for existing JaxMARL code.

JaxMARL keys everything by agent name (`agent_0`, ...), adds `"__all__"` to the
done dict, restarts inside `step` (to `reset_state` when one is given) and
returns infos with one value per agent, which its scripts reshape to one value
per actor. Its scripts send actions of shape `()` or `(1,)` per agent; both are
taken. Parameters are fixed when the adapter is built, as JaxMARL environments
take none per call.

Restarts come from a spare start state that each environment carries, so a
step never generates a world for every environment. Under `jax.vmap` (how
JaxMARL batches environments) the spares that were used are regenerated at most
`refresh_per_step` per step for the whole batch, and not at all on steps where
none was used; an environment that ends again before its spare is regenerated
replays that start, as `VecEnv`'s pool does when it wraps round.
"""

from __future__ import annotations

import math
import sys
from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from alemlite.core import spaces
from alemlite.core.environment import Environment
from alemlite.core.errors import require


@struct.dataclass
class AdapterState:
    env_state: Any
    spare: Any  # a generated start state, taken when the episode ends
    spare_used: jax.Array  # () bool, the spare has been taken and awaits regeneration


def _space_types() -> Any:
    """JaxMARL's space classes once JaxMARL is loaded (its wrappers test `isinstance`), else ours.

    Both take the same constructor arguments; JaxMARL is never imported from here.
    """
    return sys.modules.get("jaxmarl.environments.spaces", spaces)


class JaxMARLAdapter:
    """`env` with JaxMARL's `MultiAgentEnv` interface.

    `world_state=True` adds `obs["world_state"]` (the environment's global state,
    `state_size` floats), as JaxMARL's SMAX does for centralised critics;
    `get_world_state(state)` gives it either way.
    """

    def __init__(
        self,
        env: Environment,
        params: Any = None,
        refresh_per_step: int = 1,
        world_state: bool = False,
    ):
        require(refresh_per_step >= 1, f"refresh_per_step={refresh_per_step} must be at least 1")
        self.env = env
        self.params = env.default_params if params is None else params
        self.refresh_per_step = refresh_per_step
        self.world_state = world_state
        self.num_agents = env.num_agents
        self.agents = [f"agent_{index}" for index in range(env.num_agents)]
        self.state_size = math.prod(env.global_state_shape)
        self._refresh = self._make_refresh()

    @property
    def name(self) -> str:
        return self.env.name

    # ---- spaces ------------------------------------------------------------------------
    def observation_space(self, agent: str) -> Any:
        return _space_types().Box(-jnp.inf, jnp.inf, self.env.observation_shape)

    def action_space(self, agent: str) -> Any:
        return _space_types().Discrete(self.env.num_actions)

    @property
    def observation_spaces(self) -> dict[str, Any]:
        return {agent: self.observation_space(agent) for agent in self.agents}

    @property
    def action_spaces(self) -> dict[str, Any]:
        return {agent: self.action_space(agent) for agent in self.agents}

    # ---- dynamics ----------------------------------------------------------------------
    def reset(self, key: jax.Array) -> tuple[dict[str, jax.Array], AdapterState]:
        episode_key, spare_key = jax.random.split(key)
        obs, env_state = self.env.reset(episode_key, self.params)
        state = AdapterState(
            env_state=env_state,
            spare=self.env.generate(spare_key, self.params),
            spare_used=jnp.zeros((), bool),
        )
        return self._obs_dict(obs, state), state

    def step(
        self,
        key: jax.Array,
        state: AdapterState,
        actions: dict[str, jax.Array],
        reset_state: AdapterState | None = None,
    ) -> tuple[dict[str, jax.Array], AdapterState, dict, dict, dict]:
        step_key, reset_key, refresh_key = jax.random.split(key, 3)
        # `()` or `(1,)` per agent (JaxMARL's `unbatchify` gives the latter).
        action_array = jnp.stack(
            [jnp.reshape(jnp.asarray(actions[agent]), ()) for agent in self.agents]
        ).astype(jnp.int32)
        obs, env_state, reward, done, info = self.env.step(
            step_key, state.env_state, action_array, self.params
        )
        if reset_state is None:
            restart_obs, restart_state = self.env.reset_from(reset_key, state.spare, self.params)
            spare_used = state.spare_used | done
        else:
            restart_state = reset_state.env_state
            restart_obs = self.env.observe(restart_state, self.params)
            spare_used = state.spare_used
        env_state = jax.tree.map(partial(jnp.where, done), restart_state, env_state)
        obs = jnp.where(done, restart_obs, obs)
        spare, spare_used = self._refresh(refresh_key, state.spare, spare_used, self.params)
        state = AdapterState(env_state=env_state, spare=spare, spare_used=spare_used)
        dones = {agent: done for agent in self.agents} | {"__all__": done}
        # One value per agent: JaxMARL's scripts reshape every info leaf to (num_actors,).
        infos = jax.tree.map(lambda leaf: jnp.broadcast_to(leaf, (self.num_agents,)), info)
        return self._obs_dict(obs, state), state, self._to_dict(reward), dones, infos

    def _make_refresh(self):
        """Regenerate used spares: per environment alone, at most R per step for a vmapped batch."""
        generate = self.env.generate

        @jax.custom_batching.custom_vmap
        def refresh(key, spare, used, params):
            # Unbatched, `cond` really skips the generation on steps that need none.
            return jax.lax.cond(
                used, lambda: (generate(key, params), jnp.zeros((), bool)), lambda: (spare, used)
            )

        @refresh.def_vmap
        def refresh_batch(axis_size, in_batched, keys, spare, used, params):
            def batch(leaf, batched):
                return leaf if batched else jnp.broadcast_to(leaf, (axis_size, *jnp.shape(leaf)))

            keys, spare, used = (
                jax.tree.map(batch, value, batched)
                for value, batched in zip((keys, spare, used), in_batched[:3], strict=True)
            )
            # Start states come from the first environment's params, as VecEnv's pool does.
            params = jax.tree.map(
                lambda leaf, batched: leaf[0] if batched else leaf, params, in_batched[3]
            )
            count = min(self.refresh_per_step, axis_size)

            def regenerate(spare, used):
                # The first `count` used spares; the fill index lies past the batch and is dropped.
                slots = jnp.nonzero(used, size=count, fill_value=axis_size)[0]
                fresh_keys = keys[jnp.minimum(slots, axis_size - 1)]
                fresh = jax.vmap(generate, in_axes=(0, None))(fresh_keys, params)
                spare = jax.tree.map(
                    lambda pooled, new: pooled.at[slots].set(new, mode="drop"), spare, fresh
                )
                return spare, used.at[slots].set(False, mode="drop")

            def keep(spare, used):
                return spare, used

            out = jax.lax.cond(used.any(), regenerate, keep, spare, used)
            return out, jax.tree.map(lambda _: True, out)

        return refresh

    # ---- views of the state -------------------------------------------------------------
    def get_obs(self, state: AdapterState) -> dict[str, jax.Array]:
        return self._obs_dict(self.env.observe(state.env_state, self.params), state)

    def get_avail_actions(self, state: AdapterState) -> dict[str, jax.Array]:
        return self._to_dict(self.env.action_mask(state.env_state, self.params))

    def get_world_state(self, state: AdapterState) -> jax.Array:
        """The global state for centralised critics, flat: `(state_size,)` float32."""
        return self.env.global_state(state.env_state, self.params).reshape(-1)

    def _obs_dict(self, obs: jax.Array, state: AdapterState) -> dict[str, jax.Array]:
        obs_dict = self._to_dict(obs)
        if self.world_state:
            obs_dict["world_state"] = self.get_world_state(state)
        return obs_dict

    def _to_dict(self, array: jax.Array) -> dict[str, jax.Array]:
        return {agent: array[index] for index, agent in enumerate(self.agents)}
