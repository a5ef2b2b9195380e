"""A curriculum across dining table sizes in one compiled program.

The environment is built once with `max_philosophers = max(sizes)`; every table
of the training batch carries its own dynamic `num_philosophers` in the
runner's `env_params`, so moving to the next size swaps an array and restarts
the episodes, and the compiled update is reused. At stage `s` most tables seat
`sizes[s]` and a fraction `mix` replays the earlier sizes in turn.

The stage advances on a held-out plateau: each checkpoint's validation return
at the current size is compared with the best so far at that size; after
`patience` evaluations without an improvement of at least `min_improvement`
the next size starts. The plateau tracker is part of the checkpointed state,
so a resumed run advances exactly where the uninterrupted one did.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from baselines.common import rollout as rollouts
from baselines.common.algorithm import Runner
from baselines.common.config import CurriculumConfig


# ---- the plateau rule (host side) ------------------------------------------------------
@struct.dataclass
class StageTracker:
    """Where the curriculum stands; saved with every checkpoint."""

    stage: jax.Array  # () int32, index into `sizes`
    best_return: jax.Array  # () float32, best validation return at this stage (-inf: none yet)
    stale: jax.Array  # () int32, evaluations since the last improvement

    @classmethod
    def start(cls) -> StageTracker:
        return cls(
            stage=jnp.zeros((), jnp.int32),
            best_return=jnp.full((), -jnp.inf, jnp.float32),
            stale=jnp.zeros((), jnp.int32),
        )


def observe(
    tracker: StageTracker, validation_return: float, config: CurriculumConfig
) -> StageTracker:
    """The tracker after one evaluation at the current stage's size (advancing on a plateau)."""
    stage, best, stale = int(tracker.stage), float(tracker.best_return), int(tracker.stale)
    # The same float32 rounding as the saved tracker, so a resumed run decides alike.
    validation_return = float(np.float32(validation_return))
    if validation_return >= best + config.min_improvement:
        best, stale = validation_return, 0
    else:
        stale += 1
    if stale >= config.patience and stage + 1 < len(config.sizes):
        stage, best, stale = stage + 1, -math.inf, 0
    return StageTracker(
        stage=jnp.asarray(stage, jnp.int32),
        best_return=jnp.asarray(best, jnp.float32),
        stale=jnp.asarray(stale, jnp.int32),
    )


# ---- the batch ---------------------------------------------------------------------------
def table_sizes(
    config: CurriculumConfig, stage: int, num_envs: int, group_size: int = 1
) -> np.ndarray:
    """`num_philosophers` of every table at `stage`: `sizes[stage]`, with `mix` replaying
    the earlier sizes on tables spread evenly over the batch (and so over devices).

    Consecutive runs of `group_size` tables (a group of GRPO-like methods) share a size.
    """
    num_groups = num_envs // group_size
    sizes = np.full((num_groups,), config.sizes[stage], np.int32)
    if stage > 0 and config.mix > 0:
        index = np.arange(num_groups)
        replays = np.flatnonzero(np.floor((index + 1) * config.mix) > np.floor(index * config.mix))
        earlier = np.asarray(config.sizes[:stage], np.int32)
        sizes[replays] = earlier[np.arange(len(replays)) % stage]
    return np.repeat(sizes, group_size)


def table_params(env, config: CurriculumConfig, stage: int, num_envs: int, group_size: int = 1):
    """The env params of the training batch at `stage` (per-table `num_philosophers`)."""
    return env.make_params(num_philosophers=table_sizes(config, stage, num_envs, group_size))


def restart_tables(algorithm, runner: Runner, env_params: Any) -> Runner:
    """`runner` (one seed) playing fresh episodes under `env_params`.

    A table that changes size mid-episode would leave forks and seats inconsistent,
    so every table starts again; recurrent state resets at the episode start.
    """
    key, reset_key = jax.random.split(runner.key)
    rollout = rollouts.reset(algorithm.vec_env, env_params, reset_key, runner.rollout.hidden)
    return runner.replace(env_params=env_params, rollout=rollout, key=key)


def stack_seeds(tree: Any, num_seeds: int) -> Any:
    """Give every leaf a leading seed axis (the runner is vmapped over seeds)."""
    return jax.tree.map(lambda leaf: jnp.broadcast_to(leaf, (num_seeds, *jnp.shape(leaf))), tree)
