"""The study's budget presets and its command-line configuration."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from alemlite.core.errors import named_as, require, require_at_least
from alemlite.envs.dining.config import DiningConfig
from baselines.common.config import CurriculumConfig
from benchmarks.harness import RESULTS_DIR, output_path
from benchmarks.marl_dining import FIGURES_DIR

REPORT = Path(__file__).resolve().parents[2] / "docs" / "coordination_study.md"
METHODS = ("ippo", "mappo", "grpo", "srpo", "teamtr")
# The per-episode metrics kept for every policy (the dining env's names, plus the return).
EPISODE_METRICS = ("episode_return", "meals_total", "deadlock", "fairness", "starvation")
# Scripted policies drawn as lines on the curves and set beside the methods in the tables.
ANCHORS = ("resource_ordering", "backoff", "uniform_random", "all_wait")


def method_label(method: str) -> str:
    """How a method is written in prose: IPPO, MAPPO, GRPO, SRPO, TeamTR."""
    return "TeamTR" if method == "teamtr" else method.upper()


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
    sizes: tuple[int, ...] = (5, 10, 15)
    rewards: tuple[str, ...] = ("paper", "shaped")
    methods: tuple[str, ...] = METHODS
    curriculum_methods: tuple[str, ...] = ("mappo", "grpo")
    """Trained with the curriculum below under `curriculum_reward`, and compared with the
    same method trained directly at the largest size on the same budget."""
    curriculum_reward: str = "shaped"
    curriculum: CurriculumConfig = field(
        default_factory=lambda: CurriculumConfig(
            sizes=(5, 10, 15), patience=1, min_improvement=0.1, mix=0.25
        )
    )
    num_seeds: int | None = None
    """Overrides of the preset's budget (None: the preset's)."""
    num_envs: int | None = None
    num_updates: int | None = None
    test_episodes: int | None = None
    eval_episodes: int | None = None
    runs_dir: Path = Path("runs/study")
    """Run directories go to RUNS_DIR/SCALE/."""
    out: Path | None = None
    """Results JSON; default: coordination_study_SCALE.json in a fresh folder under
    runs/bench/study/ (in benchmarks/results/ with --publish). With --report-only: the results
    JSON the report is rebuilt from."""
    figures_dir: Path | None = None
    """Plots, as study_*.png (study_SCALE_*.png for scales other than "cpu"); default:
    figures/ beside the results JSON (docs/figures/ with --publish)."""
    report: Path | None = None
    """Markdown report; default: coordination_study.md beside the results JSON (with --publish:
    docs/coordination_study.md, or coordination_study_SCALE.md for other scales)."""
    publish: bool = False
    """Write the published results, figures and report, replacing them."""
    reuse_runs: bool = True
    """Reuse runs that already finished (their study.json), so the study resumes."""
    report_only: bool = False
    """Rebuild the plots and the report from the results JSON without training."""
    allow_dirty: bool = False
    """Publish from a tree with uncommitted changes (the results are marked dirty)."""

    def __post_init__(self):
        require(
            not self.report_only or self.publish or self.out is not None,
            "report_only=True needs the results to rebuild from: --out RESULTS_JSON (an earlier "
            "run's), or --publish for the published study",
        )
        with named_as(num_philosophers="sizes"):
            for size in self.sizes:
                DiningConfig(num_philosophers=size)
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

    def outputs(self) -> StudyOutputs:
        """Where this run writes; a run that publishes nothing gets a fresh folder."""
        name = f"coordination_study_{self.scale}"
        results = output_path(self.out, self.publish, RESULTS_DIR / f"{name}.json", "study")
        if self.publish:
            report = REPORT if self.scale == "cpu" else REPORT.with_stem(f"{name}")
            figures_dir = FIGURES_DIR
        else:
            report = results.parent / REPORT.name
            figures_dir = results.parent / "figures"
        return StudyOutputs(results, self.report or report, self.figures_dir or figures_dir)

    @property
    def figure_prefix(self) -> str:
        return "study_" if self.scale == "cpu" else f"study_{self.scale}_"
