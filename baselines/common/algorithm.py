"""What every training algorithm provides to the shared training loop.

An algorithm is a small object over one seed: `init` builds a `Runner` (its
parameters, optimiser state, environments and key) and `update` advances it by
one whole update. The loop vmaps both over seeds, scans `update` into compiled
chunks and shards the environments over devices; it needs nothing else except
the `actor` to evaluate and export.
"""

from __future__ import annotations

from typing import Any, Protocol

import jax
from flax import struct

from baselines.common.agents import SharedActor
from baselines.common.rollout import RolloutState


@struct.dataclass
class Runner:
    """The whole state of a training run for one seed; a checkpoint is exactly this."""

    params: Any  # {"actor": ..., and whatever else the algorithm trains}
    opt_state: Any
    rollout: RolloutState
    key: jax.Array
    update_step: jax.Array  # () int32, updates done so far
    # Per-table env params of a curriculum (dynamic, so a new stage reuses the compiled
    # update); None: the algorithm's own `env_params`.
    env_params: Any = None


class Algorithm(Protocol):
    actor: SharedActor
    rollouts_per_update: int  # rollouts of num_steps played per update (TeamTR: one per seat)

    def init(self, key: jax.Array) -> Runner: ...

    def update(self, runner: Runner) -> tuple[Runner, dict[str, jax.Array]]: ...
