"""Whether `--resume` may continue a run: the settings saved in its `config.json` against the
command's, and the checkpoints it left."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from alemlite.core.errors import require
from baselines.common.checkpoints import RunCheckpoints
from baselines.common.config import DistributedConfig, TrainConfig

# Settings a resume may change: the target, the outputs, and how the processes are
# launched (not what they train).
MAY_CHANGE = frozenset(
    {
        "num_updates",
        "resume",
        "progress",
        "out",
        "test_episodes",
        *(f"distributed.{f.name}" for f in dataclasses.fields(DistributedConfig)),
    }
)
_MISSING = object()


def differences_that_break_resume(config: TrainConfig, saved: TrainConfig) -> list[str]:
    """Settings of `config` that differ from `saved` other than those a resume may change, by
    the names of their flags (`ppo.gamma`; an environment's options without a prefix)."""
    mine, theirs = _settings(config.to_dict()), _settings(saved.to_dict())
    names = list(mine) + [name for name in theirs if name not in mine]
    return [
        name
        for name in names
        if name not in MAY_CHANGE and mine.get(name, _MISSING) != theirs.get(name, _MISSING)
    ]


def _settings(values: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested settings flattened under their flags' names (`ppo.gamma`; options unprefixed)."""
    flat = {}
    for name, value in values.items():
        if isinstance(value, dict):
            flat.update(_settings(value, "" if name == "options" else f"{prefix}{name}."))
        else:
            flat[f"{prefix}{name}"] = value
    return flat


def check_resumable(config: TrainConfig, run_dir: Path, checkpoints: RunCheckpoints) -> int:
    """The update the run resumes from; refuses settings or a target that do not continue it."""
    config_path = run_dir / "config.json"
    require(config_path.exists(), f"--resume needs {config_path}; start the run without --resume")
    differences = differences_that_break_resume(config, TrainConfig.load(config_path))
    require(
        not differences,
        f"--resume with changed settings {differences}; only num_updates may change",
    )
    done = checkpoints.newest_whole()
    require(
        done is not None,
        f"--resume found no checkpoint in {checkpoints.directory}: the run stopped before its "
        f"first one (update {min(config.eval_interval, config.num_updates)}); start it again "
        "without --resume",
    )
    require(
        config.num_updates >= done,
        f"num_updates={config.num_updates} is below the {done} updates this run has already "
        f"done; pass --num-updates {done} or more (a resume continues a run, it cannot rewind it)",
    )
    return done
