"""The study's figures: learning curves, final returns with CIs, performance profiles of the
normalised returns, curriculum against direct."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.study.config import ANCHORS, method_label
from benchmarks.study.statistics import CHECKPOINTS, normalised_returns, performance_profiles

PROFILE_THRESHOLDS = 201
"""Points of the threshold grid of the performance profiles."""


def _curve(run: dict) -> tuple[np.ndarray, np.ndarray]:
    steps = np.array([point[0] for point in run["validation_curve"]], float)
    returns = np.array([np.mean(point[1]) for point in run["validation_curve"]], float)
    return steps, returns


def plot_study(
    results: dict[str, Any], figures_dir: Path, prefix: str = "study_"
) -> dict[str, Path]:
    """Learning curves per reward (one panel per N), final returns with CIs, performance
    profiles, the curriculum."""
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
                axis.plot(
                    steps, returns, "o-", ms=3, color=colours[index], label=method_label(method)
                )
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
            axis.set_xticks(range(len(methods)), [method_label(m) for m in methods], fontsize=8)
            axis.set_title(f"{reward} reward, N = {size}")
        axes[row][0].set_ylabel("test return, 95% CI across seeds")
    axes[0][-1].legend(fontsize=7, loc="best")
    figure.tight_layout()
    figures["final_returns"] = figures_dir / f"{prefix}final_returns.png"
    figure.savefig(figures["final_returns"], dpi=110)
    plt.close(figure)

    figures["performance_profiles"] = figures_dir / f"{prefix}performance_profiles.png"
    _plot_performance_profiles(results, figures["performance_profiles"], colours)

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
                    label=f"{method_label(method)}, {name}",
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
        axis.set_xlabel("agent steps per seed (seats in play)")
        axis.set_ylabel("validation return at the largest size")
        axis.set_title("curriculum vs direct training (numbers: table size trained)")
        axis.legend(fontsize=7)
        figure.tight_layout()
        figures["curriculum"] = figures_dir / f"{prefix}curriculum.png"
        figure.savefig(figures["curriculum"], dpi=110)
        plt.close(figure)
    return figures


def _plot_performance_profiles(results: dict[str, Any], path: Path, colours: list[str]) -> None:
    """Fraction of runs above each normalised score, final and best, with 95% bands."""
    import matplotlib.pyplot as plt

    scores = np.concatenate(
        [
            np.concatenate(per_task)
            for which in CHECKPOINTS
            for per_task in normalised_returns(results, which).values()
        ]
    )
    # From uniform random play (0) or below, past the best scripted policy (1) and every run.
    thresholds = np.linspace(min(0.0, scores.min()), max(1.0, scores.max()), PROFILE_THRESHOLDS)
    figure, axes = plt.subplots(
        1, len(CHECKPOINTS), figsize=(5.2 * len(CHECKPOINTS), 3.8), sharey=True
    )
    for axis, which in zip(axes, CHECKPOINTS, strict=True):
        profiles = performance_profiles(results, which, thresholds)
        for index, (method, (profile, low, high)) in enumerate(profiles.items()):
            axis.plot(thresholds, profile, color=colours[index], label=method_label(method))
            axis.fill_between(thresholds, low, high, color=colours[index], alpha=0.2, lw=0)
        for tau, name in ((0.0, "uniform random"), (1.0, "best scripted")):
            axis.axvline(tau, ls="--", lw=1, color="grey")
            axis.annotate(
                name, (tau, 1.02), xycoords=("data", "axes fraction"), fontsize=7, ha="center"
            )
        axis.set_xlabel("normalised return tau")
        axis.set_title(f"{which} checkpoint", pad=14)
    axes[0].set_ylabel("fraction of runs with score > tau")
    axes[-1].legend(fontsize=7, loc="best")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
