"""The study's figures: learning curves, final returns with CIs, curriculum against direct."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.study.config import ANCHORS


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
