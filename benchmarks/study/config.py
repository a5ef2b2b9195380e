"""The study's budget presets and its command-line configuration."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import alemlite
from alemlite.core.errors import named_as, require_at_least
from baselines.common.config import CurriculumConfig, PPOConfig, algorithm_label
from benchmarks.harness import RESULTS_DIR
from benchmarks.marl_dining import FIGURES_DIR

# The study is an experiment on the dining table: its rewards, its per-episode metrics and
# its scripted anchors below are the table's, read through its spec.
ENV = "dining"
REPORT = Path(__file__).resolve().parents[2] / "docs" / "coordination_study.md"
METHODS = ("ippo", "mappo", "grpo", "srpo", "teamtr")
# The per-episode metrics kept for every policy (the dining env's names, plus the return).
EPISODE_METRICS = ("episode_return", "meals_total", "deadlock", "fairness", "starvation")
# Scripted policies drawn as lines on the curves and set beside the methods in the tables.
ANCHORS = ("resource_ordering", "backoff", "uniform_random", "all_wait")


def method_label(method: str) -> str:
    """How a method is written in prose: IPPO, MAPPO, GRPO, SRPO, TeamTR."""
    return algorithm_label(method)


@dataclass(frozen=True)
class Budget:
    """Per run: seeds, batch and schedule. TeamTR plays one rollout per seat per update, so it
    gets `num_updates / N` updates: the same environment steps and the same number of policy
    updates (one per seat stage), each on its seat's samples."""

    num_seeds: int
    num_envs: int
    num_updates: int
    num_checkpoints: int
    eval_episodes: int
    test_episodes: int
    num_steps: int = 32
    """Rollout length; 32 >= the 30-step episode, so a group rollout holds whole episodes."""


SCALES = {
    # Two shared CPU cores, about an hour for the whole study.
    "cpu": Budget(
        num_seeds=3,
        num_envs=64,
        num_updates=60,
        num_checkpoints=12,
        eval_episodes=64,
        test_episodes=256,
    ),
    # One accelerator: 16x the tables, 10x the updates, more seeds and test episodes.
    "gpu": Budget(
        num_seeds=8,
        num_envs=1024,
        num_updates=1000,
        num_checkpoints=20,
        eval_episodes=256,
        test_episodes=1024,
    ),
}


@dataclass(frozen=True)
class StudyOutputs:
    results: Path
    report: Path
    figures_dir: Path


@dataclass(frozen=True)
class StudyConfig:
    """Train the five methods on dining under both rewards; write results, plots and report."""

    scale: Literal["cpu", "gpu"] = "cpu"
    """Budget preset (see `SCALES`): "cpu" (the published run) or "gpu" (full scale)."""
    num_agents: tuple[int, ...] = (5, 10, 15)
    """the table sizes"""
    rewards: tuple[str, ...] = ("paper", "shaped")
    methods: tuple[str, ...] = METHODS
    curriculum_methods: tuple[str, ...] = ("mappo", "grpo")
    """Trained with the curriculum below under `curriculum_reward`, and compared with the
    same method trained directly at the largest size on the same budget."""
    curriculum_reward: str = "shaped"
    curriculum: CurriculumConfig = field(
        default_factory=lambda: CurriculumConfig(
            values=(5, 10, 15), patience=1, min_improvement=0.1, mix=0.25
        )
    )
    ppo: PPOConfig = field(default_factory=lambda: PPOConfig(rewards="agent"))
    """IPPO's and MAPPO's settings; in the study each seat learns from its own reward, as in
    the study it reproduces (`--ppo.rewards team` gives every seat the table's mean)."""
    num_seeds: int | None = None
    """Overrides of the preset's budget (None: the preset's)."""
    num_envs: int | None = None
    num_updates: int | None = None
    test_episodes: int | None = None
    eval_episodes: int | None = None
    out: Path = Path("runs/study")
    """The study's folder: its run directories (SCALE/), kept so that a rerun resumes, and,
    unless published, the results coordination_study_SCALE.json, the report
    (coordination_study.md; coordination_study_SCALE.md for scales other than "cpu") and the
    plots in figures/ (study_*.png; study_SCALE_*.png). With --report-only: the folder
    holding the results the report is rebuilt from."""
    publish: bool = False
    """Write the results, figures and report to the published places (benchmarks/results/,
    docs/figures/, docs/), replacing them."""
    reuse_runs: bool = True
    """Reuse runs that already finished (their study.json), so the study resumes."""
    report_only: bool = False
    """Rebuild the plots and the report from the results JSON without training."""
    allow_dirty: bool = False
    """Publish from a tree with uncommitted changes (the results are marked dirty)."""

    def __post_init__(self):
        table = alemlite.spec(ENV)
        for name, sizes in (
            ("num_agents", self.num_agents),
            ("curriculum.values", self.curriculum.values),
        ):
            with named_as(num_agents=name):
                for size in sizes:
                    table.options(num_agents=size)
        with named_as(reward="rewards"):
            for reward in (*self.rewards, self.curriculum_reward):
                table.options(reward=reward)
        require_at_least(1, **self._overrides())

    def _overrides(self) -> dict[str, int]:
        return {
            name: getattr(self, name)
            for name in ("num_seeds", "num_envs", "num_updates", "test_episodes", "eval_episodes")
            if getattr(self, name) is not None
        }

    @property
    def budget(self) -> Budget:
        return dataclasses.replace(SCALES[self.scale], **self._overrides())

    @property
    def runs_dir(self) -> Path:
        """The run directories of this scale."""
        return self.out / self.scale

    def outputs(self) -> StudyOutputs:
        """Where this run writes its results, report and figures."""
        name = f"coordination_study_{self.scale}"
        report = REPORT if self.scale == "cpu" else REPORT.with_stem(name)
        if self.publish:
            return StudyOutputs(RESULTS_DIR / f"{name}.json", report, FIGURES_DIR)
        return StudyOutputs(self.out / f"{name}.json", self.out / report.name, self.out / "figures")

    @property
    def figure_prefix(self) -> str:
        return "study_" if self.scale == "cpu" else f"study_{self.scale}_"
