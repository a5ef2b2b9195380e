"""The whole study: the grid of runs and the curriculum pairs, then results, plots and report."""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Any

import jax

from alemlite.core.errors import require
from baselines.common.reporting import to_json
from benchmarks.provenance import begin_run
from benchmarks.study.config import StudyConfig, StudyOutputs
from benchmarks.study.plots import plot_study
from benchmarks.study.report import kept_conclusions, markdown_report
from benchmarks.study.runs import (
    curriculum_comparisons,
    reference_episodes,
    run_directory,
    study_run,
    train_config,
)
from benchmarks.study.statistics import outcome


def run(config: StudyConfig) -> dict[str, Any]:
    """Run (or reuse) every run of the study and write its results; with `report_only`,
    rebuild the plots and the report from the results JSON alone."""
    outputs = config.outputs()
    provenance = begin_run(
        [outputs.results, outputs.report, outputs.figures_dir], config.allow_dirty, config.publish
    )
    if config.report_only:
        require(
            outputs.results.is_file(),
            f"report_only=True: {outputs.results} holds no results to rebuild from; run the "
            "study into --out first, or pass --publish to rebuild the published report",
        )
        results = json.loads(outputs.results.read_text())
        write_outputs(config, outputs, results)
        return results
    budget = config.budget
    runs_dir = config.runs_dir
    # Compiled programs persist across restarts, so a resumed study does not compile again.
    jax.config.update("jax_compilation_cache_dir", str((runs_dir / "jax_cache").absolute()))
    results: dict[str, Any] = {
        "config": dataclasses.asdict(config),
        "budget": dataclasses.asdict(budget),
        "settings": {},
        "curriculum": {},
    }
    start = time.perf_counter()
    for reward in config.rewards:
        for size in config.num_agents:
            references = reference_episodes(size, reward, budget, runs_dir)
            setting = {
                "reward": reward,
                "num_philosophers": size,
                "references": {name: outcome(values) for name, values in references.items()},
                "methods": {},
            }
            for method in config.methods:
                run_dir = run_directory(runs_dir, method, reward, size)
                print(f"[{time.strftime('%H:%M:%S')}] {run_dir.name}", flush=True)
                setting["methods"][method] = study_run(
                    train_config(budget, method, size, reward, run_dir, config.ppo),
                    references,
                    config.reuse_runs,
                )
            results["settings"][f"{reward}-{size}"] = setting
    largest = max(config.curriculum.values, default=0)
    for method in config.curriculum_methods:
        reward = config.curriculum_reward
        references = reference_episodes(largest, reward, budget, runs_dir)
        # The direct run is the grid's run at the largest size when the grid has it.
        grid = results["settings"].get(f"{reward}-{largest}", {}).get("methods", {})
        pair = {}
        for name, curriculum in (("direct", None), ("curriculum", config.curriculum)):
            suffix = largest if curriculum is None else "curriculum"
            run_dir = run_directory(runs_dir, method, reward, suffix)
            if curriculum is None and method in grid:
                pair[name] = grid[method]
                continue
            print(f"[{time.strftime('%H:%M:%S')}] {run_dir.name}", flush=True)
            pair[name] = study_run(
                train_config(budget, method, largest, reward, run_dir, config.ppo, curriculum),
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
    results["machine"] = provenance.describe()
    outputs.results.parent.mkdir(parents=True, exist_ok=True)
    outputs.results.write_text(to_json(results))
    write_outputs(config, outputs, results)
    print(f"wrote {outputs.results}, {outputs.report} and the figures in {outputs.figures_dir}")
    return results


def write_outputs(config: StudyConfig, outputs: StudyOutputs, results: dict[str, Any]) -> None:
    """The plots and the report, keeping the earlier report's conclusions."""
    outputs.figures_dir.mkdir(parents=True, exist_ok=True)
    figures = plot_study(results, outputs.figures_dir, config.figure_prefix)
    report = outputs.report
    previous = report.read_text() if report.exists() else ""
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(markdown_report(results, figures, report.parent, kept_conclusions(previous)))
