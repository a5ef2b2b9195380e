"""The report's figures: each reference team's scores per stratum, and the gaps with their
intervals."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from llm_bridge.gap.report import ROLE_TITLES, comparison_label
from llm_bridge.gap.scores import ROLES

SHOWN_KINDS = ("llm", "marl", "scripted", "mixed")


def plot_gap(results: Mapping[str, Any], figures_dir: Path) -> dict[str, Path]:
    """`scores.png` (one panel per score: the model and each reference team, per stratum)
    and `gaps.png` (each headline gap per score, with its interval)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figures_dir.mkdir(parents=True, exist_ok=True)
    roles = [role for role in ROLES if role in results["roles"]]
    strata = results["strata"]
    figure, axes = plt.subplots(1, len(roles), figsize=(4.2 * len(roles), 3.6), squeeze=False)
    width = 0.8 / len(SHOWN_KINDS)
    for axis, role in zip(axes[0], roles, strict=True):
        for index, kind in enumerate(SHOWN_KINDS):
            means, errors, where, names = [], [], [], {}
            for position, stratum in enumerate(strata):
                label = "llm" if kind == "llm" else stratum["references"].get(kind)
                score = stratum["teams"].get(label, {}).get("scores", {}).get(role)
                if score is not None:
                    names[label] = None
                    where.append(position + (index - 1.5) * width)
                    means.append(score["mean"])
                    errors.append([score["mean"] - score["low"], score["high"] - score["mean"]])
            if means:
                # The legend names the reference (checkpoint, policy), not only its kind.
                legend = ", ".join(names)
                axis.bar(where, means, width, yerr=np.transpose(errors), capsize=2, label=legend)
        axis.set_xticks(range(len(strata)), [stratum["key"] for stratum in strata], fontsize=8)
        axis.set_title(f"{ROLE_TITLES[role]} ({results['roles'][role]})", fontsize=9)
    axes[0][0].legend(fontsize=7)
    figure.suptitle(f"{results['config']['env']}: {results['config']['model']} and references")
    figure.tight_layout()
    figures = {"scores": figures_dir / "scores.png"}
    figure.savefig(figures["scores"], dpi=110)
    plt.close(figure)

    rows = [
        (f"{comparison_label(comparison, entry)}: {ROLE_TITLES[role]}", entry[role])
        for comparison, entry in results["gaps"].items()
        for role in roles
        if role in entry
    ]
    if rows:
        figure, axis = plt.subplots(figsize=(6.4, 0.35 * len(rows) + 1.2))
        for y, (_, gap) in enumerate(rows):
            axis.errorbar(
                gap["gap"], y, xerr=[[gap["gap"] - gap["low"]], [gap["high"] - gap["gap"]]],
                fmt="o", capsize=3, color="C0",
            )  # fmt: skip
        axis.axvline(0.0, color="grey", lw=1, ls="--")
        axis.set_yticks(range(len(rows)), [name for name, _ in rows], fontsize=8)
        axis.invert_yaxis()
        axis.set_xlabel("gap (mean over strata), 95% stratified bootstrap interval")
        figure.tight_layout()
        figures["gaps"] = figures_dir / "gaps.png"
        figure.savefig(figures["gaps"], dpi=110)
        plt.close(figure)
    return figures
