"""One hand-built coordination world shared by the coordination tests (compiled once).

16x16, three agents (warrior, forager, miner) at alpha 0.9, no spawning, no tasks,
no elites and no construction sites unless a test lays them.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from alemlite.envs.craft import make_craft
from tests.craft_helpers import blank_state, quiet_params

ENV = make_craft(map_size=16, num_agents=3, difficulty="hard")
PARAMS = quiet_params(ENV)
STEP = jax.jit(ENV.step)
RESET = jax.jit(ENV.reset)
MASK = jax.jit(ENV.action_mask)
OBSERVE = jax.jit(ENV.observe)
# One state, many step keys: for success rates of random draws.
MANY_STEPS = jax.jit(jax.vmap(ENV.step, in_axes=(0, None, None, None)))


def quiet_scene(positions, facing, alpha: float = 0.9):
    """`blank_state` with no task tiles, no elites and the given alpha."""
    state = blank_state(ENV, positions, facing=facing)
    coordination = state.coordination.replace(
        tile_task=jnp.zeros_like(state.coordination.tile_task),
        mob_elite=jnp.zeros_like(state.coordination.mob_elite),
        alpha=jnp.float32(alpha),
        sites=state.coordination.sites.replace(task=jnp.zeros_like(state.coordination.sites.task)),
    )
    return state.replace(coordination=coordination)
