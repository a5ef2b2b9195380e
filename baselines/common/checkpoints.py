"""Orbax checkpoints of whole runs (for `--resume`) and exported policies (for loading by name).

A run checkpoint holds the vmapped `Runner` of every seed and the best-so-far
tracker, so restoring it and running the same compiled updates reproduces the
uninterrupted run. An exported policy holds one seed's actor parameters and the
few facts needed to rebuild the actor, small enough to ship with the package.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jax
import orbax.checkpoint as ocp

from baselines.common.agents import SharedActor
from baselines.common.config import NetworkConfig


class RunCheckpoints:
    """The latest `max_to_keep` checkpoints of a run, keyed by update number."""

    def __init__(self, directory: Path, max_to_keep: int = 2):
        self._manager = ocp.CheckpointManager(
            Path(directory).absolute(),
            options=ocp.CheckpointManagerOptions(max_to_keep=max_to_keep, create=True),
        )

    def save(self, update: int, state: Any, meta: dict[str, Any]) -> None:
        self._manager.save(
            update,
            args=ocp.args.Composite(
                state=ocp.args.StandardSave(state), meta=ocp.args.JsonSave(meta)
            ),
        )
        self._manager.wait_until_finished()

    def latest_update(self) -> int | None:
        return self._manager.latest_step()

    def restore(self, update: int, abstract_state: Any) -> tuple[Any, dict[str, Any]]:
        """The state saved at `update`, laid out (and sharded) like `abstract_state`."""
        restored = self._manager.restore(
            update,
            args=ocp.args.Composite(
                state=ocp.args.StandardRestore(abstract_state), meta=ocp.args.JsonRestore()
            ),
        )
        return restored.state, restored.meta

    def close(self) -> None:
        self._manager.close()


POLICY_FILE = "policy.json"
PARAMS_DIR = "actor_params"


def export_policy(directory: Path, actor: SharedActor, actor_params: Any, info: dict) -> None:
    """Write one actor (parameters and shape facts) to `directory`, replacing what is there."""
    directory = Path(directory).absolute()
    directory.mkdir(parents=True, exist_ok=True)
    description = {
        "network": vars(actor.network),
        "num_agents": actor.num_agents,
        "num_actions": actor.num_actions,
        "observation_shape": list(actor.observation_shape),
        **info,
    }
    (directory / POLICY_FILE).write_text(json.dumps(description, indent=2) + "\n")
    checkpointer = ocp.StandardCheckpointer()
    checkpointer.save(directory / PARAMS_DIR, jax.device_get(actor_params), force=True)
    checkpointer.wait_until_finished()


def import_policy(directory: Path) -> tuple[SharedActor, Any, dict]:
    """The actor, its parameters and the description written by `export_policy`."""
    directory = Path(directory).absolute()
    description = json.loads((directory / POLICY_FILE).read_text())
    actor = SharedActor(
        network=NetworkConfig(**description["network"]),
        num_agents=description["num_agents"],
        num_actions=description["num_actions"],
        observation_shape=tuple(description["observation_shape"]),
    )
    abstract = jax.eval_shape(actor.init, jax.random.PRNGKey(0))
    params = ocp.StandardCheckpointer().restore(directory / PARAMS_DIR, abstract)
    return actor, params, description
