"""How the training environments change over a run: a `Schedule` the trainer always calls.

`FixedSetting` trains on the environment as configured and does nothing. `StagedCurriculum`
raises the option an environment's spec schedules (`EnvSpec.curriculum`; dining: the table
size) stage by stage, inside one compiled program.

The environment is built once for the largest value (`trainer.make_env`); every
environment of the training batch carries its own value in its dynamic params (the
runner's `env_params`), so moving to the next value swaps an array and restarts the
episodes, and the compiled update is reused. At stage `s` most environments play
`values[s]` and a fraction `mix` replays the earlier values in turn.

The stage advances on a held-out plateau: each checkpoint's validation return at the
current value is compared with the best so far at that value; after `patience`
evaluations without an improvement of at least `min_improvement` the next value starts.
The plateau tracker is part of the checkpointed state, so a resumed run advances exactly
where the uninterrupted one did.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

import alemlite
from alemlite.core.environment import Environment
from alemlite.core.spec import Curriculum
from baselines.common import rollout as rollouts
from baselines.common.algorithm import Algorithm, Runner
from baselines.common.config import CurriculumConfig, EvaluationConfig
from baselines.common.evaluation import SeedEvaluator
from baselines.common.reporting import held_out_summary


class Schedule(Protocol):
    """What the trainer asks of a run's environment schedule, at the same points every run.

    Stateless (it belongs to the compiled program, shared by runs); a run threads the
    schedule's `progress` (a pytree, saved with every checkpoint) through these calls.
    """

    value_name: str
    """What the stages change (an option's name), for the learning curve."""

    def first_batch(self, runner: Runner) -> Runner:
        """One seed's new runner set up for the first stage (traced inside `init`)."""
        ...

    def compile(self, shardings: Runner, evaluator: SeedEvaluator) -> Schedule:
        """This schedule with its compiled parts, once the runner's layout is known;
        `evaluator` is the run's, at the environment's default params."""
        ...

    def start(self) -> Any:
        """The progress of a new run."""
        ...

    def checkpoint_entries(self, progress: Any) -> dict[str, Any]:
        """The entries `progress` adds to a checkpoint's state."""
        ...

    def from_checkpoint(self, state: Mapping[str, Any]) -> Any:
        """The progress a restored checkpoint's state holds."""
        ...

    def label(self, progress: Any, records: list[dict[str, Any]]) -> None:
        """Mark the train records of a chunk with the stage they trained at."""
        ...

    def at_checkpoint(
        self,
        evaluation: EvaluationConfig,
        progress: Any,
        runner: Runner,
        validation_return: np.ndarray,
    ) -> tuple[Any, Runner, dict[str, Any]]:
        """After a checkpoint's validation: the new progress, the runner (on fresh
        episodes where the stage changed) and the fields it adds to the eval record."""
        ...

    def summary(
        self,
        evaluation: EvaluationConfig,
        progress: Any,
        runner: Runner,
        best_params: Any,
        summary: dict,
    ) -> dict[str, Any]:
        """The entries it adds to the run's summary."""
        ...


class FixedSetting:
    """Every environment plays the configured setting for the whole run."""

    value_name = ""

    def first_batch(self, runner: Runner) -> Runner:
        return runner

    def compile(self, shardings: Runner, evaluator: SeedEvaluator) -> FixedSetting:
        return self

    def start(self) -> None:
        return None

    def checkpoint_entries(self, progress: None) -> dict[str, Any]:
        return {}

    def from_checkpoint(self, state: Mapping[str, Any]) -> None:
        return None

    def label(self, progress: None, records: list[dict[str, Any]]) -> None:
        pass

    def at_checkpoint(self, evaluation, progress, runner, validation_return):
        return progress, runner, {}

    def summary(self, evaluation, progress, runner, best_params, summary) -> dict[str, Any]:
        return {}


def make_schedule(
    curriculum: CurriculumConfig,
    env_name: str,
    env: Environment,
    algorithm: Algorithm,
    num_envs: int,
    num_seeds: int,
) -> Schedule:
    """The run's schedule: a staged curriculum where `curriculum` names values."""
    if not curriculum.enabled:
        return FixedSetting()
    return StagedCurriculum(
        curriculum, alemlite.spec(env_name).curriculum, env, algorithm, num_envs, num_seeds
    )


# ---- the plateau rule (host side) ------------------------------------------------------
@struct.dataclass
class StageTracker:
    """Where the curriculum stands; saved with every checkpoint."""

    stage: jax.Array  # () int32, index into `values`
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
    """The tracker after one evaluation at the current stage's value (advancing on a plateau)."""
    stage, best, stale = int(tracker.stage), float(tracker.best_return), int(tracker.stale)
    # The same float32 rounding as the saved tracker, so a resumed run decides alike.
    validation_return = float(np.float32(validation_return))
    if validation_return >= best + config.min_improvement:
        best, stale = validation_return, 0
    else:
        stale += 1
    if stale >= config.patience and stage + 1 < len(config.values):
        stage, best, stale = stage + 1, -math.inf, 0
    return StageTracker(
        stage=jnp.asarray(stage, jnp.int32),
        best_return=jnp.asarray(best, jnp.float32),
        stale=jnp.asarray(stale, jnp.int32),
    )


# ---- the batch ---------------------------------------------------------------------------
def stage_values(
    config: CurriculumConfig, stage: int, num_envs: int, group_size: int = 1
) -> np.ndarray:
    """The value of every environment at `stage`: `values[stage]`, with `mix` replaying the
    earlier values on environments spread evenly over the batch (and so over devices).

    Consecutive runs of `group_size` environments (a group of GRPO-like methods) share one.
    """
    num_groups = num_envs // group_size
    values = np.full((num_groups,), config.values[stage], np.int32)
    if stage > 0 and config.mix > 0:
        index = np.arange(num_groups)
        replays = np.flatnonzero(np.floor((index + 1) * config.mix) > np.floor(index * config.mix))
        earlier = np.asarray(config.values[:stage], np.int32)
        values[replays] = earlier[np.arange(len(replays)) % stage]
    return np.repeat(values, group_size)


def restart(algorithm: Algorithm, runner: Runner, env_params: Any) -> Runner:
    """`runner` (one seed) playing fresh episodes under `env_params`.

    An environment whose setting changes mid-episode (a table that changes size) would be
    left inconsistent, so every episode starts again; recurrent state resets at the start.
    """
    key, reset_key = jax.random.split(runner.key)
    rollout = rollouts.reset(algorithm.vec_env, env_params, reset_key, runner.rollout.hidden)
    return runner.replace(env_params=env_params, rollout=rollout, key=key)


def stack_seeds(tree: Any, num_seeds: int) -> Any:
    """Give every leaf a leading seed axis (the runner is vmapped over seeds)."""
    return jax.tree.map(lambda leaf: jnp.broadcast_to(leaf, (num_seeds, *jnp.shape(leaf))), tree)


@dataclass(frozen=True)
class StagedCurriculum:
    """A curriculum over the values of `scheduled.option`, advancing on validation plateaus."""

    config: CurriculumConfig
    scheduled: Curriculum  # the environment spec's: which option, and its params
    env: Environment  # built for the largest value, whose params are its defaults
    algorithm: Algorithm
    num_envs: int  # per seed
    num_seeds: int
    # Compiled (`compile`): (runner, per-seed env params) -> runner on fresh episodes, and
    # an evaluator per value (the largest value's is the run's own).
    restart: Any = None
    evaluators: Mapping[int, SeedEvaluator] | None = None

    @property
    def value_name(self) -> str:
        return self.scheduled.option

    @property
    def largest(self) -> int:
        return max(self.config.values)

    def batch_values(self, stage: int) -> np.ndarray:
        """One seed's value per environment at `stage` (groups share a value)."""
        group = getattr(self.algorithm, "group", None)
        group_size = group.group_size if group is not None else 1
        return stage_values(self.config, stage, self.num_envs, group_size)

    def batch_params(self, stage: int) -> Any:
        """One seed's per-environment env params at `stage`."""
        return self.scheduled.params(self.env, self.batch_values(stage))

    def first_batch(self, runner: Runner) -> Runner:
        return restart(self.algorithm, runner, self.batch_params(0))

    def compile(self, shardings: Runner, evaluator: SeedEvaluator) -> StagedCurriculum:
        def evaluator_at(value: int) -> SeedEvaluator:
            if value == self.largest:
                return evaluator
            params = self.scheduled.params(self.env, np.asarray(value, np.int32))
            return SeedEvaluator(self.env, self.algorithm.actor, params, evaluator.batch_size)

        return dataclasses.replace(
            self,
            restart=jax.jit(
                jax.vmap(functools.partial(restart, self.algorithm)),
                in_shardings=(shardings, shardings.env_params),
                out_shardings=shardings,
                donate_argnums=0,
            ),
            evaluators={value: evaluator_at(value) for value in self.config.values},
        )

    def start(self) -> StageTracker:
        return StageTracker.start()

    def checkpoint_entries(self, progress: StageTracker) -> dict[str, Any]:
        return {"curriculum": progress}

    def from_checkpoint(self, state: Mapping[str, Any]) -> StageTracker:
        return state["curriculum"]

    def label(self, progress: StageTracker, records: list[dict[str, Any]]) -> None:
        stage = int(progress.stage)
        for record in records:
            record.update(
                {"curriculum/stage": stage, "curriculum/value": self.config.values[stage]}
            )

    def at_checkpoint(self, evaluation, progress, runner, validation_return):
        """Validation at the current stage's value, the plateau rule, fresh episodes on an
        advance. `validation_return` (per seed) is at the largest value (it picks the best
        actor); the checkpoint holds the next stage's environments."""
        stage = int(progress.stage)
        value = self.config.values[stage]
        stage_return = validation_return
        if value != self.largest:
            stage_return = self.evaluators[value](
                runner.params["actor"], evaluation.eval_episodes, evaluation.validation_seed
            )["episode_return"].mean(axis=1)
        progress = observe(progress, float(np.mean(stage_return)), self.config)
        advanced = int(progress.stage) != stage
        if advanced:
            params = self.batch_params(int(progress.stage))
            runner = self.restart(runner, stack_seeds(params, self.num_seeds))
        record = {
            "curriculum/stage": stage,
            "curriculum/value": value,
            "stage_validation_return": stage_return,
            "curriculum/advanced": advanced,
        }
        return progress, runner, record

    def summary(self, evaluation, progress, runner, best_params, summary) -> dict[str, Any]:
        """The final and the best actors on the test episodes at every value."""
        per_value = {}
        for value, evaluator in self.evaluators.items():
            if value == self.largest:  # already in the summary
                per_value[value] = {"final": summary["final"], "best": summary["best"]}
                continue
            per_value[value] = {
                name: held_out_summary(
                    evaluator(params, evaluation.test_episodes, evaluation.test_seed)
                )
                for name, params in (("final", runner.params["actor"]), ("best", best_params))
            }
        stage = int(progress.stage)
        return {
            "curriculum": {
                "option": self.scheduled.option,
                "values": list(self.config.values),
                "final_stage": stage,
                "final_value": self.config.values[stage],
                "per_value": per_value,
            }
        }
