"""A batch of environments in one compiled program, with auto-reset from a pool.

`VecEnv` vmaps an `Environment` over `num_envs` copies. When an episode ends,
the environment is restarted in the same step from a *generated* start state
and `info["final_observation"]` keeps the observation the episode ended on, so
that value bootstrapping at truncation stays correct; `info["final_state"]` keeps the
states themselves (`vec.global_state(state.replace(env_state=info["final_state"]),
params)` is the global state they ended in).

Two reset sources:
- `pool_size=0`: every finished environment generates a fresh start state.
  Under vmap a masked reset runs for every environment on every step, so use
  this only where `generate` is cheap (dining).
- `pool_size=M`: a ring of M pre-generated start states (optimistic reset, as in
  Craftax), filled at reset with the first M environments' own start worlds (and
  fresh ones beyond `num_envs`). Finished environments take consecutive slots from
  a cursor, and on each step where any environment finished, the `refresh_per_step`
  slots just handed out are regenerated from fresh keys (a step where none finished
  regenerates nothing: the pool is as good as it was). If more
  environments finish in one step than are refreshed, the older of the slots
  they took are only refreshed later, so a start state can be reused once the
  cursor has gone round the ring; every environment still restarts, from a
  valid generated state, with its own key.

Params may be shared (`env.default_params`) or batched with a leading
`num_envs` axis on any leaf, which is how one batch mixes table sizes or
difficulties. Pool states are generated with the first environment's params;
per-environment parts of a reset belong in `Environment.reset_from`.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
from flax import struct

from alemlite.core import threefry
from alemlite.core.environment import Environment
from alemlite.core.errors import require
from alemlite.core.packing import Packing

# Start states generated at once on CPU (see `VecEnv._generate`).
CPU_GENERATE_CHUNK = 4


@struct.dataclass
class VecState:
    env_state: Any  # leaves with a leading (num_envs,) axis
    # The pool's start states packed one array per dtype (see `VecEnv.pooled_states`),
    # each with a leading (pool_size,) axis; None without a pool.
    pool: dict[str, jax.Array] | None
    pool_cursor: jax.Array  # () int32, next slot to hand out


class VecEnv:
    """`num_envs` copies of `env`, stepped together, restarted when done."""

    def __init__(
        self, env: Environment, num_envs: int, pool_size: int = 0, refresh_per_step: int = 1
    ):
        require(num_envs >= 1, f"num_envs={num_envs} must be at least 1")
        require(pool_size >= 0, f"pool_size={pool_size} must be 0 (no pool) or positive")
        require(
            pool_size == 0 or 1 <= refresh_per_step <= pool_size,
            f"refresh_per_step={refresh_per_step} must lie in 1..pool_size={pool_size}",
        )
        self.env = env
        self.num_envs = num_envs
        self.pool_size = pool_size
        self.refresh_per_step = refresh_per_step

    # ---- params ---------------------------------------------------------------
    def params_axes(self, params: Any) -> Any:
        """vmap axes for `params`: 0 on leaves that carry a leading batch axis."""
        return jax.tree.map(
            lambda leaf, default: 0 if jnp.ndim(leaf) == jnp.ndim(default) + 1 else None,
            params,
            self.env.default_params,
        )

    def batch_params(self, params: Any) -> Any:
        """Give every leaf of single-environment `params` a leading batch axis."""
        return jax.tree.map(
            lambda leaf: jnp.broadcast_to(leaf, (self.num_envs, *jnp.shape(leaf))), params
        )

    def _shared(self, params: Any) -> bool:
        """Whether no leaf of `params` carries a batch axis."""
        axes = jax.tree.leaves(self.params_axes(params), is_leaf=lambda axis: axis is None)
        return all(axis is None for axis in axes)

    def _first_params(self, params: Any) -> Any:
        return jax.tree.map(
            lambda leaf, axis: leaf if axis is None else leaf[0], params, self.params_axes(params)
        )

    def _vmap(self, function, in_axes_before_params: tuple, params: Any):
        return jax.vmap(
            function,
            in_axes=(*in_axes_before_params, self.params_axes(params)),
            axis_size=self.num_envs,
        )

    # ---- the batch --------------------------------------------------------------
    def reset(self, key: jax.Array, params: Any) -> tuple[jax.Array, VecState]:
        """Fresh episodes in every environment (and a filled pool)."""
        env_key, pool_key = threefry.split(key)
        keys = threefry.split(env_key, self.num_envs)
        cursor = jnp.zeros((), jnp.int32)
        if not self.pool_size:
            obs, env_state = self._vmap(self.env.reset, (0,), params)(keys, params)
            return obs, VecState(env_state=env_state, pool=None, pool_cursor=cursor)
        # `Environment.reset` as one generation of the environments' worlds (the same keys,
        # so the same states), which also fill the pool: the first `pool_size` environments'
        # start worlds are its first slots, each handed out once more and then regenerated,
        # so a reset generates max(num_envs, pool_size) worlds, not their sum.
        generate_keys, finish_keys = jnp.moveaxis(jax.vmap(threefry.split)(keys), 1, 0)
        extra_keys = threefry.split(pool_key, max(self.pool_size - self.num_envs, 0))
        worlds, packing = self._generate(jnp.concatenate([generate_keys, extra_keys]), params)
        started = packing.unpack(jax.tree.map(lambda packed: packed[: self.num_envs], worlds))
        pool = jax.tree.map(lambda packed: packed[: self.pool_size], worlds)
        obs, env_state = self._vmap(self.env.reset_from, (0, 0), params)(
            finish_keys, started, params
        )
        return obs, VecState(env_state=env_state, pool=pool, pool_cursor=cursor)

    def step(
        self, key: jax.Array, state: VecState, actions: jax.Array, params: Any
    ) -> tuple[jax.Array, VecState, jax.Array, jax.Array, dict[str, Any]]:
        """Step every environment with `actions` `(num_envs, num_agents)`; restart finished ones."""
        step_key, reset_key, refresh_key = threefry.split(key, 3)
        step_keys, step_key_axis = self._keys_for(step_key, self.env.needs_step_key)
        obs, env_state, reward, done, info = self._vmap(
            self.env.step, (step_key_axis, 0, 0), params
        )(step_keys, state.env_state, actions, params)
        # The states episodes ended in, before the restart below; what a learner reads off
        # them (a centralised critic's global state) it computes itself, so a program that
        # reads nothing traces nothing more.
        info = {**info, "final_observation": obs, "final_state": env_state}
        # Restarting costs the same whether one environment finished or none did (under vmap
        # every branch runs for every environment), so it runs only on steps where one did:
        # at a small batch most steps have none. Under an outer vmap `cond` runs both sides.
        # The pool stays outside the `cond`: passed through it, XLA copies every pool array on
        # every step. The `cond` yields the rows for the slots just behind the cursor (fresh
        # worlds, or the rows already there) and one small scatter writes them back.
        obs, env_state, refreshed, cursor = jax.lax.cond(
            done.any(),
            lambda: self._restart(reset_key, refresh_key, state, obs, env_state, done, params),
            lambda: (
                obs,
                env_state,
                self._rows_to_refresh(state.pool, state.pool_cursor),
                state.pool_cursor,
            ),
        )
        pool = self._write_rows(state.pool, refreshed, cursor)
        return obs, VecState(env_state=env_state, pool=pool, pool_cursor=cursor), reward, done, info

    def _refresh_slots(self, cursor: jax.Array) -> jax.Array:
        """The `refresh_per_step` slots handed out most recently, just behind `cursor`."""
        return (cursor - self.refresh_per_step + jnp.arange(self.refresh_per_step)) % self.pool_size

    def _rows_to_refresh(self, pool: dict[str, jax.Array] | None, cursor: jax.Array):
        if pool is None:
            return None
        slots = self._refresh_slots(cursor)
        return jax.tree.map(lambda pooled: pooled[slots], pool)

    def _write_rows(self, pool: dict[str, jax.Array] | None, rows, cursor: jax.Array):
        if pool is None:
            return None
        slots = self._refresh_slots(cursor)
        return jax.tree.map(lambda pooled, row: pooled.at[slots].set(row), pool, rows)

    def _restart(self, reset_key, refresh_key, state: VecState, obs, env_state, done, params):
        """Finished environments from a start state (the pool's, or freshly generated)."""
        reset_keys, reset_key_axis = self._keys_for(reset_key, self.env.needs_reset_key)
        if self.pool_size:
            restart_obs, restart_state, refreshed, cursor = self._draw_from_pool(
                reset_keys, reset_key_axis, refresh_key, state, done, params
            )
        elif reset_key_axis is None and self._shared(params):
            # The same start for every environment: build it once, let `where` broadcast it.
            restart_obs, restart_state = self.env.reset(reset_keys, params)
            refreshed, cursor = None, state.pool_cursor
        else:
            restart_obs, restart_state = self._vmap(self.env.reset, (reset_key_axis,), params)(
                reset_keys, params
            )
            refreshed, cursor = None, state.pool_cursor

        def where_done(restarted, continued):
            mask = done.reshape(done.shape + (1,) * (continued.ndim - 1))
            return jnp.where(mask, restarted, continued)

        obs = where_done(restart_obs, obs)
        env_state = jax.tree.map(where_done, restart_state, env_state)
        return obs, env_state, refreshed, cursor

    def _generate(self, keys: jax.Array, params: Any) -> tuple[dict[str, jax.Array], Packing]:
        """Start states for `keys`, generated with the first environment's params, packed
        (one array per dtype: a pool refresh is then a few scatters, not one per leaf).

        On CPU, CPU_GENERATE_CHUNK at a time: a generation's intermediates (noise fields)
        for a few states stay in cache, for a whole batch they do not, so chunks are faster
        (the same states). Accelerators generate all at once.
        """
        first_params = self._first_params(params)
        packings = []  # the static layout, read off the state while it is traced

        def generate(key: jax.Array) -> dict[str, jax.Array]:
            state = self.env.generate(key, params=first_params)
            packings.append(Packing.of(state))
            return packings[-1].pack(state)

        if jax.default_backend() == "cpu":
            packed = jax.lax.map(generate, keys, batch_size=CPU_GENERATE_CHUNK)
        else:
            packed = jax.vmap(generate)(keys)
        return packed, packings[0]

    def pooled_states(self, state: VecState, params: Any) -> Any:
        """The pool's start states as a pytree with a leading (pool_size,) axis."""
        require(self.pool_size > 0, "pooled_states needs a VecEnv with pool_size > 0")
        world = jax.eval_shape(
            partial(self.env.generate, params=self._first_params(params)),
            jax.ShapeDtypeStruct((2,), jnp.uint32),
        )
        return Packing.of(world).unpack(state.pool)

    def _keys_for(self, key: jax.Array, needed: bool) -> tuple[jax.Array, int | None]:
        """One key per environment, or one shared key where none is ever drawn from.

        Splitting a key per environment per step can cost more than a cheap step.
        """
        if needed:
            return threefry.split(key, self.num_envs), 0
        return key, None

    def _draw_from_pool(self, reset_keys, key_axis, refresh_key, state: VecState, done, params):
        refresh_keys = threefry.split(refresh_key, self.refresh_per_step)
        fresh, packing = self._generate(refresh_keys, params)
        rank = jnp.cumsum(done.astype(jnp.int32)) - 1
        slots = (state.pool_cursor + rank) % self.pool_size
        drawn = packing.unpack(jax.tree.map(lambda pooled: pooled[slots], state.pool))
        restart_obs, restart_state = self._vmap(self.env.reset_from, (key_axis, 0), params)(
            reset_keys, drawn, params
        )
        cursor = (state.pool_cursor + done.sum(dtype=jnp.int32)) % self.pool_size
        # `fresh` regenerates the slots just behind the new cursor (`step` writes them).
        return restart_obs, restart_state, fresh, cursor

    def observe(self, state: VecState, params: Any) -> jax.Array:
        return self._vmap(self.env.observe, (0,), params)(state.env_state, params)

    def action_mask(self, state: VecState, params: Any) -> jax.Array:
        return self._vmap(self.env.action_mask, (0,), params)(state.env_state, params)

    def global_state(self, state: VecState, params: Any) -> jax.Array:
        return self._vmap(self.env.global_state, (0,), params)(state.env_state, params)

    def agent_active(self, state: VecState, params: Any) -> jax.Array:
        return self._vmap(self.env.agent_active, (0,), params)(state.env_state, params)
