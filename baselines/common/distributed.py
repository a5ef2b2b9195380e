"""Data parallelism with JAX sharding: environments split over devices, parameters replicated.

The compiled update is the single-device program; only the layout of its
inputs differs. Every per-environment array (environment state, the current
view, recurrent state) is sharded along the environment axis over a 1-D mesh of
all devices (on every host after `jax.distributed.initialize()`); parameters,
optimiser state and keys are replicated. XLA then runs each device's share of
the rollout locally and inserts the all-reduce that averages gradients, so the
result equals the single-device run up to float reduction order.
"""

from __future__ import annotations

from typing import Any

import jax
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from alemlite.core.errors import require
from baselines.common.algorithm import Runner

DATA_AXIS = "data"


def initialise(multi_host: bool) -> None:
    """Join the multi-host runtime (coordinator and process ids come from the environment)."""
    if multi_host:
        jax.distributed.initialize()


def data_mesh(num_envs: int) -> Mesh:
    """A 1-D mesh over every device; `num_envs` must split evenly over it."""
    devices = jax.devices()
    require(
        num_envs % len(devices) == 0,
        f"num_envs={num_envs} must be divisible by the {len(devices)} devices; "
        f"choose a multiple of {len(devices)}",
    )
    return Mesh(devices, (DATA_AXIS,))


def replicated(mesh: Mesh) -> NamedSharding:
    return NamedSharding(mesh, PartitionSpec())


def runner_shardings(mesh: Mesh, runner: Runner) -> Runner:
    """Shardings for a seed-vmapped `runner` (leaves lead with the seed axis, then environments)."""
    by_env = NamedSharding(mesh, PartitionSpec(None, DATA_AXIS))
    everywhere = replicated(mesh)

    def shard(tree: Any, sharding: NamedSharding) -> Any:
        return jax.tree.map(lambda _: sharding, tree)

    rollout = runner.rollout
    return Runner(
        params=shard(runner.params, everywhere),
        opt_state=shard(runner.opt_state, everywhere),
        rollout=rollout.replace(
            env_state=rollout.env_state.replace(
                env_state=shard(rollout.env_state.env_state, by_env),
                pool=shard(rollout.env_state.pool, everywhere),
                pool_cursor=everywhere,
            ),
            view=shard(rollout.view, by_env),
            hidden=shard(rollout.hidden, by_env),
        ),
        key=everywhere,
        update_step=everywhere,
        # Per-table leaves `(S, E)` follow their environments; shared ones are replicated.
        env_params=jax.tree.map(
            lambda leaf: by_env if len(leaf.shape) >= 2 else everywhere, runner.env_params
        ),
    )
