"""Data parallelism with JAX sharding: environments split over devices, parameters replicated.

The compiled update is the single-device program; only the layout of its
inputs differs. Every per-environment array (environment state, the current
view, recurrent state) is sharded along the environment axis over a 1-D mesh of
all devices (of every process after `initialise`); parameters, optimiser state
and keys are replicated. XLA then runs each device's share of the rollout
locally and inserts the all-reduce that averages gradients, so the result equals
the single-device run up to float reduction order.

Several processes (one per host, or per accelerator) run the same command; each
steps the environments on its own devices. Every process takes part in each
compiled call and in each checkpoint (orbax writes every shard once, from the
process that holds it); only process 0 writes the run's other files.
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from alemlite.core.errors import require
from baselines.common.algorithm import Runner
from baselines.common.config import DistributedConfig

DATA_AXIS = "data"


def initialise(config: DistributedConfig) -> None:
    """Join the run's processes (`jax.distributed.initialize`) where `config` asks; what it
    leaves empty JAX detects from the cluster (Slurm, Open MPI, Kubernetes, Cloud TPU).

    Must come before anything else touches JAX's devices; a process that has joined
    already (a second run in the same process) stays joined.
    """
    if not config.enabled or jax.distributed.is_initialized():
        return
    jax.distributed.initialize(
        coordinator_address=config.coordinator or None,
        num_processes=config.num_processes,
        process_id=config.process_id,
    )


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


def everywhere() -> NamedSharding:
    """Replicated over every device of every process."""
    return replicated(Mesh(jax.devices(), (DATA_AXIS,)))


def global_arrays(tree: Any) -> Any:
    """`tree` with each value this process alone holds (a NumPy array, or a JAX array on this
    process's devices) made one array replicated over every process's devices.

    A checkpoint of several processes saves only such global arrays; every process must hold
    the same values (they are computed alike from replicated results). One process: `tree`.
    """
    if jax.process_count() == 1:
        return tree
    sharding = everywhere()

    def lift(leaf: Any) -> Any:
        if isinstance(leaf, jax.Array) and not leaf.is_fully_addressable:
            return leaf  # global already
        value = np.asarray(leaf)
        return jax.make_array_from_callback(value.shape, sharding, lambda index: value[index])

    return jax.tree.map(lift, tree)


def global_layout(abstract: Any) -> Any:
    """`abstract` (shapes and dtypes) with every leaf that has no sharding replicated over
    every process's devices: how `global_arrays` lays a checkpoint out, for restoring it.
    One process: `abstract`."""
    if jax.process_count() == 1:
        return abstract
    sharding = everywhere()

    def place(leaf: Any) -> Any:
        if getattr(leaf, "sharding", None) is not None:
            return leaf
        return jax.ShapeDtypeStruct(leaf.shape, leaf.dtype, sharding=sharding)

    return jax.tree.map(place, abstract)
