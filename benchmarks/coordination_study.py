"""The coordination study on dining: do group-relative methods learn to share forks?

On tables of N = 5, 10 and 15, under the `paper` reward (with its all-WAIT
optimum) and the `shaped` reward, trains IPPO, MAPPO, GRPO, SRPO and TeamTR
(several seeds vmapped per run) and evaluates every run's untrained start, final
and best checkpoints beside the scripted reference policies on the same held-out
test episodes. It reports return, meals, deadlock rate, fairness and the fraction
of zero-meal episodes; Welch's t-test and Hedges' g between each checkpoint and
the untrained start, between best and final, and against resource ordering; and
a curriculum over 5 -> 10 -> 15 against direct training at 15 on an equal budget.

    python -m benchmarks.coordination_study                 # the CPU budget
    python -m benchmarks.coordination_study --scale gpu     # the full-scale budget

Every finished run keeps `study.json` and `episodes.npz` in its run directory
and is reused, so an interrupted study resumes where it stopped (`--no-reuse-runs`
trains everything again). The results go to
`benchmarks/results/coordination_study_SCALE.json`, the plots to
`docs/figures/study_*.png` and the report to `docs/coordination_study.md` (for
`--scale gpu`: `study_gpu_*.png`, `coordination_study_gpu.md`); the report's
`## Conclusions` section is kept when it is rebuilt.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import shutil
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import jax
import numpy as np
import tyro

import alemlite
from alemlite.evaluation import evaluate
from alemlite.stats import hedges_g, mean_ci, summarise, welch_t_test
from baselines.common.checkpoints import RunCheckpoints
from baselines.common.config import TrainConfig
from baselines.common.curriculum import CurriculumConfig
from baselines.common.reporting import MetricsLog, to_json
from baselines.common.trainer import compiled_program, train
from baselines.train import reference_policies
from benchmarks.harness import RESULTS_DIR, machine_info
from benchmarks.marl_dining import FIGURES_DIR

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "docs" / "coordination_study.md"
CONCLUSIONS_HEADING = "## Conclusions"
METHODS = ("ippo", "mappo", "grpo", "srpo", "teamtr")
# The per-episode metrics kept for every policy (the dining env's names, plus the return).
EPISODE_METRICS = ("episode_return", "meals_total", "deadlock", "fairness", "starvation")
# Scripted policies drawn as lines on the curves and set beside the methods in the tables.
ANCHORS = ("resource_ordering", "backoff", "uniform_random", "all_wait")
ALL_WAIT_PAPER_RETURN = 0.75  # the `paper` reward's degenerate optimum (README)


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
    """Results JSON; None: benchmarks/results/coordination_study_SCALE.json."""
    figures_dir: Path = FIGURES_DIR
    """Plots go here as study_*.png (study_SCALE_*.png for scales other than "cpu")."""
    report: Path | None = None
    """Markdown report; None: docs/coordination_study.md (coordination_study_SCALE.md for
    scales other than "cpu")."""
    reuse_runs: bool = True
    """Reuse runs that already finished (their study.json), so the study resumes."""
    report_only: bool = False
    """Rebuild the plots and the report from the results JSON without training."""

    @property
    def budget(self) -> Budget:
        overrides = {
            name: getattr(self, name)
            for name in ("num_seeds", "num_envs", "num_updates", "test_episodes", "eval_episodes")
            if getattr(self, name) is not None
        }
        return dataclasses.replace(SCALES[self.scale], **overrides)

    @property
    def results_path(self) -> Path:
        return self.out or RESULTS_DIR / f"coordination_study_{self.scale}.json"

    @property
    def report_path(self) -> Path:
        if self.report is not None:
            return self.report
        return REPORT if self.scale == "cpu" else REPORT.with_stem(f"{REPORT.stem}_{self.scale}")

    @property
    def figure_prefix(self) -> str:
        return "study_" if self.scale == "cpu" else f"study_{self.scale}_"


# ---- statistics (host side, on per-episode arrays `(seeds, episodes)`) -------------------
def outcome(per_episode: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """Return per seed with a CI across seeds, and every metric pooled over episodes with CIs;
    `zero_meals` (a rate) is the fraction of episodes in which nobody ate."""
    returns = np.asarray(per_episode["episode_return"], float)
    per_seed = returns.mean(axis=1)
    mean, low, high = mean_ci(per_seed)
    pooled = {name: np.asarray(per_episode[name]).reshape(-1) for name in EPISODE_METRICS}
    pooled["deadlock"] = pooled["deadlock"].astype(bool)
    pooled["zero_meals"] = pooled["meals_total"] == 0
    return {
        "return_per_seed": per_seed.tolist(),
        "return_across_seeds": {"mean": mean, "low": low, "high": high, "n": int(per_seed.size)},
        "episodes": summarise(pooled),
    }


def comparison(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    """Returns `a` against `b` `(seeds, episodes)`: Welch's t and Hedges' g over all episodes,
    and Welch's p over the seed means (the seeds are the independent replicates)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    t, p = welch_t_test(a.reshape(-1), b.reshape(-1))
    seed_p = float("nan")
    if a.shape[0] >= 2 and b.shape[0] >= 2:
        seed_p = welch_t_test(a.mean(axis=1), b.mean(axis=1))[1]
    return {
        "difference": float(a.mean() - b.mean()),
        "welch_t": t,
        "welch_p": p,
        "hedges_g": hedges_g(a.reshape(-1), b.reshape(-1)),
        "seed_welch_p": seed_p,
    }


def run_result(
    episodes: Mapping[str, Mapping[str, np.ndarray]],
    references: Mapping[str, Mapping[str, np.ndarray]],
    info: Mapping[str, Any],
) -> dict[str, Any]:
    """One run's outcomes (`initial`, `final`, `best`) and its comparisons."""
    returns = {name: np.asarray(values["episode_return"]) for name, values in episodes.items()}
    comparisons = {
        "final_vs_initial": comparison(returns["final"], returns["initial"]),
        "best_vs_initial": comparison(returns["best"], returns["initial"]),
        "best_vs_final": comparison(returns["best"], returns["final"]),
    }
    if "resource_ordering" in references:
        ordering = np.asarray(references["resource_ordering"]["episode_return"])
        comparisons["final_vs_resource_ordering"] = comparison(returns["final"], ordering)
        comparisons["best_vs_resource_ordering"] = comparison(returns["best"], ordering)
    return {
        **info,
        **{name: outcome(values) for name, values in episodes.items()},
        "comparisons": comparisons,
    }


# ---- one run -------------------------------------------------------------------------------
def train_config(
    budget: Budget, method: str, size: int, reward: str, run_dir: Path, curriculum=None
) -> TrainConfig:
    """The run's `TrainConfig`; TeamTR's updates are divided by N (one rollout per seat)."""
    rollouts = size if method == "teamtr" else 1
    num_updates = max(1, round(budget.num_updates / rollouts))
    interval = max(1, num_updates // budget.num_checkpoints)
    chunk = math.gcd(num_updates, interval)  # divides both, as the trainer requires
    return TrainConfig(
        algorithm=method,
        env="dining",
        philosophers=size,
        reward=reward,
        curriculum=curriculum or CurriculumConfig(),
        num_envs=budget.num_envs,
        num_steps=budget.num_steps,
        num_updates=num_updates,
        updates_per_chunk=chunk,
        eval_interval=interval,
        num_seeds=budget.num_seeds,
        eval_episodes=budget.eval_episodes,
        test_episodes=budget.test_episodes,
        progress=False,
        run_dir=str(run_dir),
    )


def _kept(per_episode: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {name: np.asarray(per_episode[name]) for name in EPISODE_METRICS}


def train_and_evaluate(config: TrainConfig) -> tuple[dict, dict[str, dict[str, np.ndarray]]]:
    """Train one run, then evaluate its untrained start, final and best actors per episode.

    The untrained actors are the trainer's own initial parameters (same seed keys); the
    final and best ones come from the last checkpoint, and must reproduce the trainer's
    own test returns.
    """
    env = alemlite.make("dining", **config.env_kwargs())
    start = time.perf_counter()
    summary = train(config, env=env)
    wall_s = time.perf_counter() - start
    program = compiled_program(config, env)  # the trainer's, from the cache
    seed_keys = jax.random.split(jax.random.PRNGKey(config.seed), config.num_seeds)
    initial = program.init(seed_keys).params["actor"]
    checkpoints = RunCheckpoints(config.output_dir / "checkpoints")
    state, _ = checkpoints.restore(checkpoints.latest_update(), None)
    checkpoints.close()
    actors = {
        "initial": initial,
        "final": state["runner"]["params"]["actor"],
        "best": state["best"]["actor_params"],
    }
    episodes = {
        name: _kept(program.evaluator(params, config.test_episodes, config.test_seed))
        for name, params in actors.items()
    }
    for name in ("final", "best"):
        np.testing.assert_allclose(
            episodes[name]["episode_return"].mean(axis=1),
            summary[name]["return_per_seed"],
            rtol=1e-5,
            atol=1e-5,
        )
    initial_validation = program.evaluator(initial, config.eval_episodes, config.validation_seed)
    evals = [
        r for r in MetricsLog(config.output_dir / "metrics.jsonl").read() if r["kind"] == "eval"
    ]
    curve = [(0, initial_validation["episode_return"].mean(axis=1).tolist())] + [
        (record["agent_steps"], record["validation_return"]) for record in evals
    ]
    info = {
        "algorithm": config.algorithm,
        "reward": config.reward,
        "num_philosophers": config.philosophers,
        "num_seeds": config.num_seeds,
        "num_envs": config.num_envs,
        "num_updates": config.num_updates,
        "env_steps_per_seed": summary["agent_steps_per_seed"] // env.num_agents,
        "agent_steps_per_seed": summary["agent_steps_per_seed"],
        "wall_s": wall_s,
        "best_update_per_seed": summary["best"]["update_per_seed"],
        "validation_curve": curve,
    }
    if "curriculum" in summary:
        info["curriculum"] = {
            key: summary["curriculum"][key] for key in ("sizes", "final_stage", "final_size")
        }
        info["curriculum"]["stage_per_checkpoint"] = [
            (record["agent_steps"], record["curriculum/size"]) for record in evals
        ]
    return info, episodes


def study_run(
    config: TrainConfig, references: Mapping[str, Mapping[str, np.ndarray]], reuse: bool
) -> dict[str, Any]:
    """One run's result, from its finished run directory when `reuse` allows."""
    run_dir = config.output_dir
    done = run_dir / "study.json"
    if reuse and done.exists():
        saved = json.loads(done.read_text())
        if TrainConfig.from_dict(saved["config"]) == config:  # fields added since: defaults
            return saved["result"]
    shutil.rmtree(run_dir, ignore_errors=True)
    info, episodes = train_and_evaluate(config)
    np.savez_compressed(
        run_dir / "episodes.npz",
        **{
            f"{which}/{name}": values
            for which, kept in episodes.items()
            for name, values in kept.items()
        },
    )
    result = run_result(episodes, references, info)
    done.write_text(to_json({"config": config.to_dict(), "result": result}))
    return result


def reference_episodes(
    size: int, reward: str, budget: Budget, cache: Path
) -> dict[str, dict[str, np.ndarray]]:
    """The scripted policies on the study's test episodes, per episode `(1, episodes)`."""
    path = cache / f"references-{reward}-{size}-{budget.test_episodes}.npz"
    if path.exists():
        stored = np.load(path)
        names = {key.split("/")[0] for key in stored.files}
        return {n: {m: stored[f"{n}/{m}"] for m in EPISODE_METRICS} for n in names}
    env = alemlite.make("dining", num_philosophers=size, reward=reward)
    test_seed = TrainConfig().test_seed
    episodes = {
        name: {
            metric: np.asarray(values)[None]
            for metric, values in evaluate(
                env, policy, env.default_params, budget.test_episodes, test_seed
            ).items()
            if metric in EPISODE_METRICS
        }
        for name, policy in reference_policies("dining").items()
    }
    cache.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        path, **{f"{n}/{m}": values for n, kept in episodes.items() for m, values in kept.items()}
    )
    return episodes


# ---- the study -------------------------------------------------------------------------
def run(config: StudyConfig) -> dict[str, Any]:
    if config.report_only:
        results = json.loads(config.results_path.read_text())
        write_outputs(config, results)
        return results
    budget = config.budget
    runs_dir = config.runs_dir / config.scale
    # Compiled programs persist across restarts, so a resumed study does not compile again.
    jax.config.update("jax_compilation_cache_dir", str((runs_dir / "jax_cache").absolute()))
    results: dict[str, Any] = {
        "machine": machine_info(),
        "config": dataclasses.asdict(config),
        "budget": dataclasses.asdict(budget),
        "settings": {},
        "curriculum": {},
    }
    start = time.perf_counter()
    for reward in config.rewards:
        for size in config.sizes:
            references = reference_episodes(size, reward, budget, runs_dir)
            setting = {
                "reward": reward,
                "num_philosophers": size,
                "references": {name: outcome(values) for name, values in references.items()},
                "methods": {},
            }
            for method in config.methods:
                run_dir = runs_dir / f"{method}-{reward}-{size}"
                print(f"[{time.strftime('%H:%M:%S')}] {run_dir.name}", flush=True)
                setting["methods"][method] = study_run(
                    train_config(budget, method, size, reward, run_dir),
                    references,
                    config.reuse_runs,
                )
            results["settings"][f"{reward}-{size}"] = setting
    largest = max(config.curriculum.sizes, default=0)
    for method in config.curriculum_methods:
        reward = config.curriculum_reward
        references = reference_episodes(largest, reward, budget, runs_dir)
        # The direct run is the grid's run at the largest size when the grid has it.
        grid = results["settings"].get(f"{reward}-{largest}", {}).get("methods", {})
        pair = {}
        for name, curriculum in (("direct", None), ("curriculum", config.curriculum)):
            suffix = largest if curriculum is None else "curriculum"
            run_dir = runs_dir / f"{method}-{reward}-{suffix}"
            if curriculum is None and method in grid:
                pair[name] = grid[method]
                continue
            print(f"[{time.strftime('%H:%M:%S')}] {run_dir.name}", flush=True)
            pair[name] = study_run(
                train_config(budget, method, largest, reward, run_dir, curriculum),
                references,
                config.reuse_runs,
            )
        pair["comparisons"] = curriculum_comparisons(runs_dir, method, reward, largest)
        results["curriculum"][method] = pair
    results["wall_s"] = time.perf_counter() - start
    results["train_wall_s"] = sum(
        run["wall_s"]
        for setting in results["settings"].values()
        for run in setting["methods"].values()
    ) + sum(pair["curriculum"]["wall_s"] for pair in results["curriculum"].values())
    config.results_path.parent.mkdir(parents=True, exist_ok=True)
    config.results_path.write_text(to_json(results))
    write_outputs(config, results)
    print(f"wrote {config.results_path}, {config.report_path} and the figures")
    return results


def curriculum_comparisons(runs_dir: Path, method: str, reward: str, size: int) -> dict:
    """Curriculum against direct training, final and best, on the test episodes at `size`."""
    returns = {
        name: np.load(path / "episodes.npz")
        for name, path in (
            ("direct", runs_dir / f"{method}-{reward}-{size}"),
            ("curriculum", runs_dir / f"{method}-{reward}-curriculum"),
        )
    }
    return {
        f"{which}_curriculum_vs_direct": comparison(
            returns["curriculum"][f"{which}/episode_return"],
            returns["direct"][f"{which}/episode_return"],
        )
        for which in ("final", "best")
    }


def write_outputs(config: StudyConfig, results: dict[str, Any]) -> None:
    config.figures_dir.mkdir(parents=True, exist_ok=True)
    figures = plot_study(results, config.figures_dir, config.figure_prefix)
    report = config.report_path
    previous = report.read_text() if report.exists() else ""
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(markdown_report(results, figures, report.parent, kept_conclusions(previous)))


# ---- plots ---------------------------------------------------------------------------------
def _curve(run: dict) -> tuple[np.ndarray, np.ndarray]:
    steps = np.array([point[0] for point in run["validation_curve"]], float)
    returns = np.array([np.mean(point[1]) for point in run["validation_curve"]], float)
    return steps, returns


def plot_study(
    results: dict[str, Any], figures_dir: Path, prefix: str = "study_"
) -> dict[str, Path]:
    """Learning curves per reward (one panel per N), final returns with CIs, the curriculum."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    settings = results["settings"]
    rewards = list(dict.fromkeys(s["reward"] for s in settings.values()))
    sizes = sorted({s["num_philosophers"] for s in settings.values()})
    figures: dict[str, Path] = {}
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for reward in rewards:
        figure, axes = plt.subplots(1, len(sizes), figsize=(4.4 * len(sizes), 3.8), squeeze=False)
        for axis, size in zip(axes[0], sizes, strict=True):
            setting = settings[f"{reward}-{size}"]
            for index, (method, run) in enumerate(setting["methods"].items()):
                steps, returns = _curve(run)
                axis.plot(steps, returns, "o-", ms=3, color=colours[index], label=method.upper())
            for index, name in enumerate(ANCHORS):
                value = setting["references"][name]["return_across_seeds"]["mean"]
                axis.axhline(value, ls="--", lw=1, color=colours[5 + index], label=name)
            axis.set_title(f"{reward} reward, N = {size}")
            axis.set_xlabel("agent steps per seed")
            axis.ticklabel_format(axis="x", style="sci", scilimits=(0, 0))
        axes[0][0].set_ylabel("validation return (seed mean)")
        axes[0][-1].legend(fontsize=7, loc="best")
        figure.tight_layout()
        figures[f"curves_{reward}"] = figures_dir / f"{prefix}curves_{reward}.png"
        figure.savefig(figures[f"curves_{reward}"], dpi=110)
        plt.close(figure)

    figure, axes = plt.subplots(
        len(rewards), len(sizes), figsize=(4.4 * len(sizes), 3.6 * len(rewards)), squeeze=False
    )
    for row, reward in enumerate(rewards):
        for axis, size in zip(axes[row], sizes, strict=True):
            setting = settings[f"{reward}-{size}"]
            methods = list(setting["methods"])
            for offset, (which, marker) in enumerate(
                (("initial", "x"), ("final", "o"), ("best", "s"))
            ):
                for index, method in enumerate(methods):
                    ci = setting["methods"][method][which]["return_across_seeds"]
                    axis.errorbar(
                        index + (offset - 1) * 0.22,
                        ci["mean"],
                        yerr=[[ci["mean"] - ci["low"]], [ci["high"] - ci["mean"]]],
                        fmt=marker,
                        color=colours[offset],
                        ms=4,
                        capsize=2,
                        label=which if index == 0 else None,
                    )
            for index, name in enumerate(ANCHORS):
                value = setting["references"][name]["return_across_seeds"]["mean"]
                axis.axhline(value, ls="--", lw=1, color=colours[5 + index], label=name)
            axis.set_xticks(range(len(methods)), [m.upper() for m in methods], fontsize=8)
            axis.set_title(f"{reward} reward, N = {size}")
        axes[row][0].set_ylabel("test return, 95% CI across seeds")
    axes[0][-1].legend(fontsize=7, loc="best")
    figure.tight_layout()
    figures["final_returns"] = figures_dir / f"{prefix}final_returns.png"
    figure.savefig(figures["final_returns"], dpi=110)
    plt.close(figure)

    if results["curriculum"]:
        figure, axis = plt.subplots(figsize=(6.5, 4))
        for index, (method, pair) in enumerate(results["curriculum"].items()):
            for name, style in (("direct", "o-"), ("curriculum", "s--")):
                steps, returns = _curve(pair[name])
                axis.plot(
                    steps,
                    returns,
                    style,
                    ms=3,
                    color=colours[index],
                    label=f"{method.upper()}, {name}",
                )
            for steps, size in pair["curriculum"]["curriculum"]["stage_per_checkpoint"]:
                axis.annotate(
                    f"{size}",
                    (steps, 0.02 + 0.05 * index),
                    xycoords=("data", "axes fraction"),
                    fontsize=7,
                    color=colours[index],
                    ha="center",
                )
        axis.set_xlabel("agent steps per seed (every seat of the largest table)")
        axis.set_ylabel("validation return at the largest size")
        axis.set_title("curriculum vs direct training (numbers: table size trained)")
        axis.legend(fontsize=7)
        figure.tight_layout()
        figures["curriculum"] = figures_dir / f"{prefix}curriculum.png"
        figure.savefig(figures["curriculum"], dpi=110)
        plt.close(figure)
    return figures


# ---- the report ----------------------------------------------------------------------------
def _ci(summary: Mapping[str, float], digits: int = 2) -> str:
    if summary["low"] == summary["high"]:
        return f"{summary['mean']:.{digits}f}"
    mean, low, high = (f"{summary[key]:.{digits}f}" for key in ("mean", "low", "high"))
    return f"{mean} [{low}, {high}]"


def _p(value: float | None) -> str:
    if value is None or not np.isfinite(value):
        return "n/a"
    if value == 0:  # below the smallest float64
        return "< 1e-300"
    return f"{value:.1e}" if value < 1e-3 else f"{value:.3f}"


def _g(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.2f}"


def _test(comparison: Mapping[str, float]) -> str:
    """Hedges' g with Welch's p over episodes and over seed means."""
    return (
        f"{_g(comparison['hedges_g'])} (p {_p(comparison['welch_p'])}; "
        f"seeds {_p(comparison['seed_welch_p'])})"
    )


def _episodes(result: Mapping[str, Any], metric: str, digits: int = 2) -> str:
    return _ci(result["episodes"][metric], digits)


def returns_table(setting_list: list[dict]) -> list[str]:
    lines = [
        "| method | N | untrained | final | best | final vs untrained: g (p) "
        "| best vs untrained: g (p) | best vs final: g (p) | best at update |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for setting in setting_list:
        for method, run in setting["methods"].items():
            c = run["comparisons"]
            lines.append(
                f"| {method.upper()} | {setting['num_philosophers']} "
                f"| {_ci(run['initial']['return_across_seeds'])} "
                f"| {_ci(run['final']['return_across_seeds'])} "
                f"| {_ci(run['best']['return_across_seeds'])} "
                f"| {_test(c['final_vs_initial'])} | {_test(c['best_vs_initial'])} "
                f"| {_test(c['best_vs_final'])} "
                f"| {', '.join(map(str, run['best_update_per_seed']))} of {run['num_updates']} |"
            )
    return lines


def outcomes_table(setting_list: list[dict]) -> list[str]:
    lines = [
        "| policy | N | return | meals per episode | deadlock rate | fairness "
        "| zero-meal episodes | vs resource ordering: g (p) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for setting in setting_list:
        size = setting["num_philosophers"]
        for method, run in setting["methods"].items():
            for which in ("final", "best"):
                result = run[which]
                versus = run["comparisons"].get(f"{which}_vs_resource_ordering")
                versus_cell = (
                    f"{_g(versus['hedges_g'])} (p {_p(versus['welch_p'])})" if versus else ""
                )
                lines.append(
                    f"| {method.upper()}, {which} | {size} "
                    f"| {_episodes(result, 'episode_return')} "
                    f"| {_episodes(result, 'meals_total', 1)} | {_episodes(result, 'deadlock')} "
                    f"| {_episodes(result, 'fairness')} | {_episodes(result, 'zero_meals')} "
                    f"| {versus_cell} |"
                )
        for name in ANCHORS:
            result = setting["references"][name]
            lines.append(
                f"| {name} | {size} | {_episodes(result, 'episode_return')} "
                f"| {_episodes(result, 'meals_total', 1)} | {_episodes(result, 'deadlock')} "
                f"| {_episodes(result, 'fairness')} | {_episodes(result, 'zero_meals')} | |"
            )
    return lines


def paper_optimum_table(settings: Mapping[str, dict]) -> list[str]:
    """Under `paper`: how far each method went towards the all-WAIT optimum."""
    lines = [
        "| method | N | final return | final meals | final zero-meal episodes "
        "| best return | best meals | best zero-meal episodes |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for setting in settings.values():
        if setting["reward"] != "paper":
            continue
        for method, run in setting["methods"].items():
            cells = [
                f"{_episodes(run[w], 'episode_return', 3)} | {_episodes(run[w], 'meals_total', 1)} "
                f"| {_episodes(run[w], 'zero_meals')}"
                for w in ("final", "best")
            ]
            lines.append(
                f"| {method.upper()} | {setting['num_philosophers']} | {cells[0]} | {cells[1]} |"
            )
    return lines


def curriculum_table(curriculum: Mapping[str, dict]) -> list[str]:
    lines = [
        "| method | training | final | best | final zero-meal episodes | last size trained "
        "| curriculum vs direct, final: g (p) | curriculum vs direct, best: g (p) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for method, pair in curriculum.items():
        for name in ("direct", "curriculum"):
            run = pair[name]
            last = run.get("curriculum", {}).get("final_size", run["num_philosophers"])
            tests = (
                f"{_test(pair['comparisons']['final_curriculum_vs_direct'])} "
                f"| {_test(pair['comparisons']['best_curriculum_vs_direct'])}"
                if name == "curriculum"
                else " | "
            )
            lines.append(
                f"| {method.upper()} | {name} | {_ci(run['final']['return_across_seeds'])} "
                f"| {_ci(run['best']['return_across_seeds'])} "
                f"| {_episodes(run['final'], 'zero_meals')} | {last} | {tests} |"
            )
    return lines


def budget_lines(results: Mapping[str, Any]) -> list[str]:
    budget = results["budget"]
    lines = [
        "| method | N | seeds | tables | updates | table steps per seed | agent steps per seed "
        "| training wall time (s) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    runs = [run for s in results["settings"].values() for run in s["methods"].values()]
    runs += [pair["curriculum"] for pair in results["curriculum"].values()]
    seen = set()
    for run in runs:
        key = (run["algorithm"], run["num_philosophers"], "curriculum" in run)
        if key in seen:
            continue
        seen.add(key)
        name = run["algorithm"].upper() + (", curriculum" if "curriculum" in run else "")
        same = [
            r["wall_s"]
            for r in runs
            if (r["algorithm"], r["num_philosophers"], "curriculum" in r) == key
        ]
        lines.append(
            f"| {name} | {run['num_philosophers']} | {run['num_seeds']} | {run['num_envs']} "
            f"| {run['num_updates']} | {run['env_steps_per_seed']:,} "
            f"| {run['agent_steps_per_seed']:,} | {' / '.join(f'{s:.0f}' for s in same)} |"
        )
    lines += [
        "",
        f"Rollouts of {budget['num_steps']} steps (episodes are 30 steps), "
        f"{budget['num_checkpoints']} checkpoints per run evaluated on "
        f"{budget['eval_episodes']} validation episodes, {budget['test_episodes']} test episodes "
        "per seed (base seed 2,000,000) for the untrained, final and best actors and the "
        "scripted policies. Wall times are per reward (listed in the order of the rewards).",
    ]
    return lines


def kept_conclusions(previous_report: str) -> str:
    """The hand-written `## Conclusions` section of an earlier report, if any."""
    index = previous_report.find(CONCLUSIONS_HEADING)
    return previous_report[index:].strip() + "\n" if index >= 0 else ""


def markdown_report(
    results: Mapping[str, Any],
    figures: Mapping[str, Path],
    report_dir: Path,
    conclusions: str = "",
) -> str:
    """The study's report, generated from the results; `conclusions` is appended verbatim."""
    config, machine = results["config"], results["machine"]
    settings = results["settings"]
    by_reward: dict[str, list[dict]] = {}
    for setting in settings.values():
        by_reward.setdefault(setting["reward"], []).append(setting)

    def figure(name: str, alt: str) -> list[str]:
        if name not in figures:
            return []
        return [f"![{alt}]({os.path.relpath(figures[name], report_dir)})", ""]

    command = "python -m benchmarks.coordination_study" + (
        "" if config["scale"] == "cpu" else f" --scale {config['scale']}"
    )
    lines = [
        "# Coordination study: group-relative training on dining",
        "",
        "Can critic-free, group-relative training (GRPO, SRPO, TeamTR) teach parameter-shared "
        "philosophers to share forks, as well as IPPO and MAPPO do and as well as the scripted "
        "resource-ordering policy? Each method is trained on dining tables of "
        f"N = {', '.join(str(s['num_philosophers']) for s in by_reward[next(iter(by_reward))])} "
        "under the `paper` reward (the four-term episode score whose all-WAIT optimum scores "
        f"{ALL_WAIT_PAPER_RETURN} with zero meals) and under the `shaped` reward, "
        f"{results['budget']['num_seeds']} seeds vmapped per run.",
        "",
        "Every run's untrained start (its initial parameters), final checkpoint and best "
        "checkpoint (highest validation return per seed) are evaluated on the same held-out "
        "test episodes as the scripted policies. Intervals are 95%: across seed means for the "
        "returns in the first table, over all episodes (Student-t; Wilson for rates) elsewhere. "
        "Comparisons give Hedges' g over all test episodes with Welch's p over episodes and, "
        "in brackets, over the seed means (the seeds are the independent replicates, so that "
        "p is the honest one; with few seeds it is weak).",
        "",
        "## How it was run",
        "",
        "```bash",
        command,
        f"{command} --report-only   # rebuild plots and this report from the JSON",
        "```",
        "",
        f"Machine: {machine['cpu_count']} x {machine['processor']} "
        f"({machine['platform']}, {machine['device_kind']}), JAX {machine['jax_version']}, "
        f"Python {machine['python']}, commit {machine['commit']}, {machine['date']}. "
        f"Training wall time {results['train_wall_s'] / 60:.0f} min summed over the runs; the "
        f"invocation that wrote these results took {results['wall_s'] / 60:.0f} min (runs "
        "finished earlier are reused, not retrained). Results: "
        f"`benchmarks/results/coordination_study_{config['scale']}.json`.",
        "",
        f"Budget of this run (`--scale {config['scale']}`) below; the presets: "
        + "; ".join(
            f"`{name}`: {b.num_seeds} seeds, {b.num_envs:,} tables, {b.num_updates:,} updates, "
            f"{b.num_checkpoints} checkpoints, {b.test_episodes:,} test episodes"
            for name, b in SCALES.items()
        )
        + ". TeamTR plays one rollout per seat per "
        "update, so it gets 1/N of the updates: the same table steps and the same number of "
        "policy-update stages (one per seat) as the other methods. Default hyperparameters "
        "(2 x 64 tanh MLPs, Adam 2.5e-3, clip 0.2, entropy 0.01, 4 epochs x 4 minibatches; "
        "group size 8, team returns, no KL penalty, TeamTR KL budget 0.02).",
        "",
        *budget_lines(results),
        "",
    ]
    for reward, setting_list in by_reward.items():
        lines += [
            f"## Returns under the `{reward}` reward",
            "",
            *returns_table(setting_list),
            "",
            f"### Outcomes under the `{reward}` reward (test episodes, pooled over seeds)",
            "",
            *outcomes_table(setting_list),
            "",
            *figure(f"curves_{reward}", f"learning curves, {reward} reward"),
        ]
    if "paper" in by_reward:
        lines += [
            "## Does the `paper` reward lead to its zero-meal optimum?",
            "",
            f"All-WAIT scores {ALL_WAIT_PAPER_RETURN} with no meals and no deadlock; a method "
            "that converged to it would show 0 meals and a zero-meal fraction of 1.",
            "",
            *paper_optimum_table(settings),
            "",
        ]
    lines += [*figure("final_returns", "final returns with 95% CIs"), ""]
    if results["curriculum"]:
        curriculum = config["curriculum"]
        lines += [
            "## Curriculum against direct training at the largest size",
            "",
            f"`--curriculum.sizes {' '.join(map(str, curriculum['sizes']))} "
            f"--curriculum.patience {curriculum['patience']} --curriculum.min-improvement "
            f"{curriculum['min_improvement']} --curriculum.mix {curriculum['mix']}`, "
            f"`{config['curriculum_reward']}` reward, on the same budget (updates, tables, "
            "seeds) as the direct run, both evaluated at the largest size.",
            "",
            *curriculum_table(results["curriculum"]),
            "",
            *figure("curriculum", "curriculum against direct training"),
        ]
    lines.append(conclusions or f"{CONCLUSIONS_HEADING}\n\nNot yet written for these numbers.\n")
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    run(tyro.cli(StudyConfig))
