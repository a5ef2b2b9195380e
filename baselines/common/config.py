"""Typed configuration of a training run; validated at construction.

Static choices (network sizes, batch shapes) are hashed into the compiled update;
a run directory keeps them as `config.json` so that `--resume` can check them.
Data and its validation only (it reads the environments' specs, builds nothing): building
the environment, the compiled program's key and the resume checks are the trainer's
(`trainer.py`, `resume.py`). This module imports nothing from `baselines`, so every
module with behaviour (curriculum, group methods, algorithms, networks) can import it.

The trainer alone reads a whole `TrainConfig`; it hands each consumer its part: the
networks a `NetworkConfig`, the PPO losses a `PPOConfig`, an algorithm its
`AlgorithmConfig`, a curriculum its `CurriculumConfig` and the `EvaluationConfig`, the
process launch a `DistributedConfig`.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import tyro

from alemlite.core.errors import require
from alemlite.core.registry import DEFAULT_ENV, resolve_options, spec
from alemlite.core.spec import EnvOptions

# algorithm name -> "module:Class" implementing `baselines.common.algorithm.Algorithm`
ALGORITHMS = {
    "ippo": "baselines.ippo:IPPO",
    "mappo": "baselines.mappo:MAPPO",
    "grpo": "baselines.grpo:GRPO",
    "srpo": "baselines.srpo:SRPO",
    "teamtr": "baselines.teamtr:TeamTR",
    "dagger": "baselines.dagger:DAgger",
}


def algorithm_label(algorithm: str) -> str:
    """How an algorithm is written in prose and tables: IPPO, MAPPO, GRPO, SRPO, TeamTR,
    DAgger."""
    return {"teamtr": "TeamTR", "dagger": "DAgger"}.get(algorithm, algorithm.upper())


@dataclass(frozen=True)
class NetworkConfig:
    hidden_size: int = 64
    """Width of every dense layer (and of the GRU state)."""
    num_layers: int = 2
    """Dense layers before the heads."""
    recurrent: bool = False
    """Use a GRU (memory across steps) instead of a feed-forward torso."""
    embedding_size: int = 8
    """Width of the embedding of each integer id, for observations whose space holds ids
    (e.g. Craft's symbolic one); the ids of one position (a tile) are summed."""
    observation_parts: tyro.conf.Suppress[tuple[tuple[tuple[int, ...], int], ...]] = ()
    """Not a flag: the observation's parts in order as (shape, ids), ids > 0 for integer
    ids in [0, ids), 0 for real values, read from the environment's `observation_space`
    when the algorithm is built; empty: the observation is real values throughout (as
    every policy exported before observations had parts)."""

    def __post_init__(self):
        # Lists when read back from JSON (policy.json, config.json): tuples, to hash.
        parts = tuple((tuple(shape), int(ids)) for shape, ids in self.observation_parts)
        object.__setattr__(self, "observation_parts", parts)
        require(self.hidden_size >= 1, f"hidden_size={self.hidden_size} must be at least 1")
        require(self.num_layers >= 1, f"num_layers={self.num_layers} must be at least 1")
        require(
            self.embedding_size >= 1, f"embedding_size={self.embedding_size} must be at least 1"
        )


@dataclass(frozen=True)
class PPOConfig:
    learning_rate: float = 2.5e-3
    anneal_learning_rate: bool = False
    """Decay the learning rate linearly to zero over `num_updates` (a resume that extends
    `num_updates` changes the schedule)."""
    gamma: float = 0.99
    gae_lambda: float = 0.95
    clip_eps: float = 0.2
    """Clip range of the probability ratio (and of the value change)."""
    entropy_coef: float = 0.01
    value_coef: float = 0.5
    max_grad_norm: float = 0.5
    num_epochs: int = 4
    num_minibatches: int = 4
    """Minibatches per epoch; environments (whole time sequences) are split between them."""
    rewards: Literal["team", "agent"] = "team"
    """IPPO, MAPPO: what every seat's critic and advantages learn from: the team's reward (the
    mean over seats in play, the return that evaluation reports) or the seat's own reward
    (independent learners: on dining they settle on tables where philosophers starve).
    The group methods choose with `group.returns`."""
    event_metric: str = ""
    """IPPO, MAPPO: training-only reward shaping: an episode metric of the environment (e.g.
    craft's coordination/task_completions) whose every rise on a step pays each seat in play
    `event_bonus`. Validation and test episodes play the environment's own reward, and the
    logged episode returns are the environment's. Empty: no shaping."""
    event_bonus: float = 0.0
    """The reward each seat in play gains per unit rise of `event_metric`."""

    def __post_init__(self):
        require(
            bool(self.event_metric) == (self.event_bonus != 0),
            f"ppo.event_metric={self.event_metric!r} with ppo.event_bonus={self.event_bonus}: "
            "give both (a metric and a nonzero bonus) or neither",
        )
        require(
            math.isfinite(self.event_bonus),
            f"ppo.event_bonus={self.event_bonus} must be a finite number",
        )
        require(
            self.rewards in ("team", "agent"),
            f"ppo.rewards={self.rewards!r}; choose 'team' or 'agent'",
        )
        require(self.learning_rate > 0, f"learning_rate={self.learning_rate} must be positive")
        require(0 <= self.gamma <= 1, f"gamma={self.gamma} must lie in [0, 1]")
        require(0 <= self.gae_lambda <= 1, f"gae_lambda={self.gae_lambda} must lie in [0, 1]")
        require(self.clip_eps > 0, f"clip_eps={self.clip_eps} must be positive")
        require(self.max_grad_norm > 0, f"max_grad_norm={self.max_grad_norm} must be positive")
        for name in ("entropy_coef", "value_coef"):
            value = getattr(self, name)
            require(value >= 0, f"{name}={value} must be at least 0")
        require(self.num_epochs >= 1, f"num_epochs={self.num_epochs} must be at least 1")
        require(
            self.num_minibatches >= 1, f"num_minibatches={self.num_minibatches} must be at least 1"
        )


@dataclass(frozen=True)
class GroupConfig:
    """Settings of the group-relative algorithms (the rest comes from `TrainConfig.ppo`)."""

    group_size: int = 8
    """Rollouts per start state (G); `num_envs` must be a multiple of it."""
    returns: Literal["team", "agent"] = "team"
    """What a group compares: the team's return (mean over seats in play, the same advantage
    for every seat) or each seat's own return against the same seat in the other members.
    SRPO needs "team" (one advantage per set)."""
    kl_coef: float = 0.0
    """Weight of the k3 KL penalty towards the frozen initial policy; 0: no reference kept."""
    kl_budget: float = 0.02
    """TeamTR: the most KL(before || after) one seat's update may take, on that seat's states."""
    backtrack_steps: int = 8
    """TeamTR: halvings of a seat's step tried when its update overshoots the budget."""

    def __post_init__(self):
        require(
            self.group_size >= 2,
            f"group_size={self.group_size} must be at least 2 (a group of one has no spread)",
        )
        require(
            self.returns in ("team", "agent"),
            f"returns={self.returns!r}; choose 'team' or 'agent'",
        )
        require(self.kl_coef >= 0, f"kl_coef={self.kl_coef} must be 0 (off) or positive")
        require(self.kl_budget > 0, f"kl_budget={self.kl_budget} must be positive")
        require(
            self.backtrack_steps >= 1, f"backtrack_steps={self.backtrack_steps} must be at least 1"
        )


@dataclass(frozen=True)
class ImitationConfig:
    """Settings of imitation learning (`dagger`): which scripted policy it learns from and how
    long that teacher plays (the rest comes from `TrainConfig.ppo`: optimiser and epochs)."""

    teacher: str = ""
    """The environment's scripted policy to imitate (as `alemlite eval --team policy:NAME`
    names it; craft: team, dining: resource_ordering)."""
    cloning_updates: int = 0
    """Updates at the start on which the teacher plays every table (behaviour cloning), before
    the mixing updates begin: a clone first learns the teacher's own states, then DAgger has
    the teacher label the states the clone reaches."""
    mixing_updates: int = 20
    """Updates, after the cloning updates, over which the share of tables the teacher plays
    falls linearly from 1 to `final_teacher_share`."""
    final_teacher_share: float = 0.0
    """The teacher's share of tables after the mixing updates: 0 is DAgger (the learner plays
    every step and the teacher only labels its states), 1 is behaviour cloning (the teacher
    plays every step; the learner learns from the teacher's own states)."""
    mix_by: Literal["step", "episode"] = "step"
    """What the teacher's share draws: who plays each table at every step (step), or for a
    whole episode (episode: the learner's tables reach the states its own mistakes lead to,
    such as tiredness the teacher never lets happen, while the teacher's tables keep whole
    demonstrations of what needs every seat's part, such as coordination tasks)."""
    kickstart_coef: float = 0.0
    """IPPO, MAPPO: weight of a cross-entropy towards `teacher`'s action on every state the
    learner plays, added to PPO's loss (kickstarting: the reward improves the policy while
    the teacher holds it to what the reward alone does not teach); 0: none."""

    def __post_init__(self):
        require(
            math.isfinite(self.kickstart_coef) and self.kickstart_coef >= 0,
            f"imitation.kickstart_coef={self.kickstart_coef} must be 0 (off) or positive",
        )
        require(
            self.cloning_updates >= 0,
            f"imitation.cloning_updates={self.cloning_updates} must be 0 (mixing starts at "
            "once) or positive",
        )
        require(
            self.mixing_updates >= 0,
            f"imitation.mixing_updates={self.mixing_updates} must be 0 (the learner plays "
            "from the start) or positive",
        )
        require(
            0.0 <= self.final_teacher_share <= 1.0,
            f"imitation.final_teacher_share={self.final_teacher_share} must lie in [0, 1] "
            "(0: DAgger, 1: behaviour cloning)",
        )


@dataclass(frozen=True)
class CurriculumConfig:
    values: tuple[int, ...] = ()
    """Values of the environment's curriculum option in the order they are trained (dining:
    table sizes, e.g. 5 10 15); empty: no curriculum."""
    patience: int = 2
    """Evaluations without improvement at the current value before the next value starts."""
    min_improvement: float = 0.05
    """Smallest rise of the validation return that counts as an improvement."""
    mix: float = 0.0
    """Fraction of environments that replay earlier values once past the first stage."""

    def __post_init__(self):
        object.__setattr__(self, "values", tuple(self.values))  # a list from config.json
        require(
            all(isinstance(value, int) and not isinstance(value, bool) for value in self.values),
            f"curriculum.values={list(self.values)} must be whole numbers",
        )
        require(
            all(a < b for a, b in zip(self.values, self.values[1:], strict=False)),
            f"curriculum.values={list(self.values)} must increase (smallest first)",
        )
        require(self.patience >= 1, f"curriculum.patience={self.patience} must be at least 1")
        require(
            math.isfinite(self.min_improvement) and self.min_improvement >= 0,
            f"curriculum.min_improvement={self.min_improvement} must be a finite number >= 0",
        )
        require(0 <= self.mix < 1, f"curriculum.mix={self.mix} must lie in [0, 1)")

    @property
    def enabled(self) -> bool:
        return bool(self.values)


@dataclass(frozen=True)
class DistributedConfig:
    """One run over several processes (one per host, or per accelerator): every process runs
    the same command, with its own `process_id`."""

    enabled: bool = False
    """Join the run's processes (`jax.distributed.initialize`) before training."""
    coordinator: str = ""
    """HOST:PORT of process 0, reachable from every process; empty: JAX's own cluster
    detection (Slurm, Open MPI, Kubernetes, Cloud TPU) finds it, and the other two."""
    num_processes: int | None = None
    """Processes in the run; None: detected."""
    process_id: int | None = None
    """This process's rank, 0 .. num_processes - 1 (0 writes the run's files); None: detected."""

    def __post_init__(self):
        given = {
            name: value
            for name, value in (
                ("coordinator", self.coordinator or None),
                ("num_processes", self.num_processes),
                ("process_id", self.process_id),
            )
            if value is not None
        }
        for name, value in given.items():
            require(
                self.enabled,
                f"distributed.{name}={value!r} joins a multi-process run; add "
                "--distributed.enabled, or drop it",
            )
        host, _, port = self.coordinator.rpartition(":")
        require(
            not self.coordinator or (bool(host) and port.isdigit()),
            f"distributed.coordinator={self.coordinator!r} must be HOST:PORT (e.g. "
            "10.0.0.1:1234), or empty for JAX's cluster detection",
        )
        require(
            self.num_processes is None or self.num_processes >= 1,
            f"distributed.num_processes={self.num_processes} must be at least 1",
        )
        require(
            self.process_id is None or self.process_id >= 0,
            f"distributed.process_id={self.process_id} must be at least 0",
        )
        require(
            None in (self.process_id, self.num_processes) or self.process_id < self.num_processes,
            f"distributed.process_id={self.process_id} must be below "
            f"distributed.num_processes={self.num_processes}",
        )


@dataclass(frozen=True)
class AlgorithmConfig:
    """The part of a run that an algorithm reads: its networks, optimisation, group settings
    and batch shape (`TrainConfig.algorithm_config`)."""

    network: NetworkConfig
    ppo: PPOConfig
    group: GroupConfig
    imitation: ImitationConfig
    num_envs: int
    num_steps: int
    num_updates: int
    """the run's length, over which the learning rate may be annealed"""
    pool_size: int
    """pre-generated start states for auto-reset; 0: none"""
    refresh_per_step: int


@dataclass(frozen=True)
class EvaluationConfig:
    """The episodes that choose the best checkpoint (validation) and report a run (test)."""

    eval_episodes: int
    validation_seed: int
    test_episodes: int
    test_seed: int


@dataclass(frozen=True)
class TrainConfig:
    """A whole training run: algorithm, environment, batch shape, schedule and outputs."""

    algorithm: tyro.conf.Positional[
        Literal["ippo", "mappo", "grpo", "srpo", "teamtr", "dagger"]
    ] = "ippo"
    """Which algorithm to train."""
    env: str = DEFAULT_ENV
    """the environment (alemlite.registered_environments())"""
    options: EnvOptions | None = None
    """the environment's options; `--env NAME --help` lists them"""

    network: NetworkConfig = field(default_factory=NetworkConfig)
    ppo: PPOConfig = field(default_factory=PPOConfig)
    group: GroupConfig = field(default_factory=GroupConfig)
    """grpo, srpo, teamtr: group size, compared returns, KL penalty and budget."""
    imitation: ImitationConfig = field(default_factory=ImitationConfig)
    """dagger: the scripted teacher and how long it plays."""
    curriculum: CurriculumConfig = field(default_factory=CurriculumConfig)
    """Train across values of the environment's curriculum option (dining: table sizes,
    `--curriculum.values 5 10 15`); the option itself is set to the largest value."""

    num_envs: int = 64
    """Parallel environments per seed (sharded over devices)."""
    num_steps: int = 32
    """Rollout length T per update."""
    pool_size: int | None = None
    """Pre-generated start states for auto-reset; None: num_envs where the environment's
    resets are expensive (its spec's `pooled_resets`), else none."""
    refresh_per_step: int = 1
    """Pool start states regenerated per step."""
    num_updates: int = 200
    updates_per_chunk: int = 10
    """Updates per compiled chunk; Python logs and checkpoints between chunks."""
    num_seeds: int = 1
    """Independent seeds trained side by side in one vmapped program."""
    seed: int = 0
    init_actor: str = ""
    """A trained policy whose actor starts every seed (a shipped name such as craft-medium, or
    an exported policy directory); it must fit the run's environment, seats and network.
    Empty: a fresh actor. The critic always starts fresh."""

    eval_interval: int = 50
    """Updates between checkpoints; every checkpoint is evaluated on validation seeds."""
    eval_episodes: int = 128
    validation_seed: int = 1_000_000
    """Base seed of the episodes that select the best checkpoint."""
    test_seed: int = 2_000_000
    """Base seed of the held-out episodes that report the final and best checkpoints."""
    test_episodes: int = 512

    out: Path | None = None
    """The run directory; None: runs/ALGORITHM-ENV-LABEL (LABEL: the environment's options,
    or the curriculum's values)."""
    resume: bool = False
    """Continue the run in `out` from its latest checkpoint to `num_updates`, which may be
    raised but not lowered below the updates already done: that is refused (ConfigError), since
    a resume continues a run and cannot rewind it. A damaged latest checkpoint is moved to
    `out/damaged_checkpoints/` and the run resumes from the newest whole one, saying so."""
    progress: bool = True
    """Show a progress bar."""
    distributed: DistributedConfig = field(default_factory=DistributedConfig)
    """Several processes: the coordinator's address, the process count and this process's id
    (`--distributed.enabled` alone: JAX detects them on Slurm, Kubernetes, ...)."""

    def __post_init__(self):
        if isinstance(self.out, str):  # given in code, or read from config.json
            object.__setattr__(self, "out", Path(self.out) if self.out else None)
        object.__setattr__(self, "options", resolve_options(self.env, self.options))
        require(
            self.algorithm in ALGORITHMS,
            f"algorithm={self.algorithm!r}; choose one of {sorted(ALGORITHMS)}",
        )
        for name in ("num_envs", "num_steps", "num_updates", "updates_per_chunk", "num_seeds"):
            value = getattr(self, name)
            require(value >= 1, f"{name}={value} must be at least 1")
        require(
            self.num_updates % self.updates_per_chunk == 0,
            f"num_updates={self.num_updates} must be a multiple of "
            f"updates_per_chunk={self.updates_per_chunk}",
        )
        require(
            self.eval_interval >= self.updates_per_chunk
            and self.eval_interval % self.updates_per_chunk == 0,
            f"eval_interval={self.eval_interval} must be a multiple of "
            f"updates_per_chunk={self.updates_per_chunk}",
        )
        require(
            self.num_envs % self.ppo.num_minibatches == 0,
            f"num_envs={self.num_envs} must be divisible by "
            f"ppo.num_minibatches={self.ppo.num_minibatches}",
        )
        require(
            self.pool_size is None or self.pool_size >= 0,
            f"pool_size={self.pool_size} must be 0 (no pool) or positive",
        )
        require(
            self.refresh_per_step >= 1
            and (self.resolved_pool_size == 0 or self.refresh_per_step <= self.resolved_pool_size),
            f"refresh_per_step={self.refresh_per_step} must be at least 1"
            + (
                f" and at most pool_size={self.resolved_pool_size}"
                if self.resolved_pool_size
                else ""
            ),
        )
        require(self.eval_episodes >= 1, f"eval_episodes={self.eval_episodes} must be at least 1")
        require(self.test_episodes >= 1, f"test_episodes={self.test_episodes} must be at least 1")
        require(
            not self.ppo.event_metric or self.algorithm in ("ippo", "mappo"),
            f"ppo.event_metric={self.ppo.event_metric!r}: ppo.event_metric shapes the reward of "
            f"ippo and mappo, not {self.algorithm}; drop --ppo.event-metric and --ppo.event-bonus",
        )
        if self.curriculum.enabled:
            self._schedule_the_curriculum_option()
        kickstarted = self.imitation.kickstart_coef > 0
        require(
            not kickstarted or self.algorithm in ("ippo", "mappo"),
            f"imitation.kickstart_coef={self.imitation.kickstart_coef}: kickstarting adds a "
            f"teacher's loss to ippo and mappo, not {self.algorithm}; drop it",
        )
        if self.algorithm == "dagger" or kickstarted:
            scripted = sorted(spec(self.env).policies)
            require(
                self.imitation.teacher in scripted,
                f"imitation.teacher={self.imitation.teacher!r}: {self.algorithm} imitates one "
                f"of {self.env}'s scripted policies; give --imitation.teacher, one of "
                f"{', '.join(scripted)}",
            )

    def _schedule_the_curriculum_option(self) -> None:
        """Check the curriculum against the environment; set its option to the largest value
        (the target: the environment's shapes, the best actor's choice, the run's label)."""
        values = list(self.curriculum.values)
        scheduled = spec(self.env).curriculum
        require(
            scheduled is not None,
            f"curriculum.values={values}: env={self.env!r} has no curriculum option; "
            "drop --curriculum.values",
        )
        require(
            min(values) >= scheduled.minimum,
            f"curriculum.values={values} must be at least {scheduled.minimum} (the smallest "
            f"{scheduled.option} of {self.env})",
        )
        largest = {scheduled.option: max(values)}
        object.__setattr__(self, "options", dataclasses.replace(self.options, **largest))

    @property
    def output_dir(self) -> Path:
        """The run directory: `out`, or `runs/ALGORITHM-ENV-LABEL`."""
        if self.out is not None:
            return self.out
        if self.curriculum.enabled:
            label = "-".join(map(str, self.curriculum.values))
        else:
            label = self.options.label()
        return Path("runs") / f"{self.algorithm}-{self.env}-{label}"

    @property
    def resolved_pool_size(self) -> int:
        if self.pool_size is not None:
            return self.pool_size
        return self.num_envs if spec(self.env).pooled_resets else 0

    def algorithm_config(self) -> AlgorithmConfig:
        return AlgorithmConfig(
            network=self.network,
            ppo=self.ppo,
            group=self.group,
            imitation=self.imitation,
            num_envs=self.num_envs,
            num_steps=self.num_steps,
            num_updates=self.num_updates,
            pool_size=self.resolved_pool_size,
            refresh_per_step=self.refresh_per_step,
        )

    def evaluation_config(self) -> EvaluationConfig:
        return EvaluationConfig(
            eval_episodes=self.eval_episodes,
            validation_seed=self.validation_seed,
            test_episodes=self.test_episodes,
            test_seed=self.test_seed,
        )

    # ---- persistence ---------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        values = dataclasses.asdict(self)  # the options as a dict of their fields
        return {**values, "out": None if self.out is None else str(self.out)}

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> TrainConfig:
        """The config `to_dict` gave; fields added since it was written take their defaults."""
        unknown = sorted(set(values) - {field.name for field in dataclasses.fields(cls)})
        require(
            not unknown,
            f"settings {unknown} are not training settings (a config.json written by an older "
            "alemlite?); start the run afresh in a new --out",
        )
        env = values.get("env", DEFAULT_ENV)
        options = values.get("options")
        launch = values.get("distributed", {})
        require(
            isinstance(launch, dict),
            f"distributed={launch!r} is not how this alemlite records a launch (a config.json "
            "written by an older alemlite?); start the run afresh in a new --out",
        )
        return cls(
            **{
                **values,
                "options": None if options is None else options_from_dict(env, options),
                "network": NetworkConfig(**values["network"]),
                "ppo": PPOConfig(**values["ppo"]),
                "group": GroupConfig(**values.get("group", {})),
                "imitation": ImitationConfig(**values.get("imitation", {})),
                "curriculum": CurriculumConfig(**values.get("curriculum", {})),
                "distributed": DistributedConfig(**launch),
            }
        )

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.to_dict(), indent=2) + "\n")

    @classmethod
    def load(cls, path: Path) -> TrainConfig:
        return cls.from_dict(json.loads(path.read_text()))


def options_from_dict(env: str, values: dict[str, Any]) -> EnvOptions:
    """Environment `env`'s options from their fields as JSON keeps them (lists for tuples)."""
    options_type = spec(env).options
    unknown = sorted(set(values) - {field.name for field in dataclasses.fields(options_type)})
    require(
        not unknown,
        f"options {unknown} are not options of env={env!r}; the file was written for another "
        "version of the environment",
    )
    return options_type(
        **{
            name: tuple(value) if isinstance(value, list) else value
            for name, value in values.items()
        }
    )
