"""Two result files, metric by metric: Welch's t, Hedges' g, bootstrap CIs, Mann-Whitney U,
and rliable's interquartile mean and probability of improvement with bootstrap intervals
(the episodes are the runs; each file is one task).

Any two reports with per-episode values compare: two models, a model before and after
training, an LLM against a MARL agent (`alemlite eval` and `alemlite eval-llm` write
the same `episodes` section).
"""

from __future__ import annotations

import json
import math
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import tyro

from alemlite.core.errors import require
from alemlite.report import read_episodes
from alemlite.stats import bootstrap_ci, compare, iqm_ci, probability_of_improvement_ci

IMPROVEMENT_RESAMPLES = 2_000
"""Bootstrap resamples for P(A > B): each ranks both sides again, so 10,000 would take
seconds per metric on a thousand episodes (rliable's examples use 2,000 for it too)."""


@dataclass(frozen=True)
class CompareConfig:
    """Compare the per-episode metrics of two result files."""

    a: tyro.conf.Positional[Path]
    """first result file (summary.json of eval-llm, or a report of alemlite eval)"""
    b: tyro.conf.Positional[Path]
    """second result file"""
    metrics: tuple[str, ...] = ()
    """metrics to compare; default: every metric both files have"""
    out: Path | None = None
    """also write the comparison as JSON here"""


def compare_results(a: Path, b: Path, metrics: tuple[str, ...] = ()) -> dict[str, dict[str, float]]:
    """Per metric: means, bootstrap CIs of each mean, Welch t and p, Hedges' g, U and p,
    the IQM of each side and P(A > B) (ties half), each with a bootstrap interval."""
    episodes_a, episodes_b = read_episodes(a), read_episodes(b)
    common = [name for name in episodes_a if name in episodes_b and np.ndim(episodes_a[name]) == 1]
    chosen = list(metrics) or common
    missing = [name for name in chosen if name not in common]
    require(
        not missing, f"metrics {missing} are not in both files; choose from: {', '.join(common)}"
    )
    results = {}
    for name in chosen:
        values_a, values_b = episodes_a[name].astype(float), episodes_b[name].astype(float)
        _, low_a, high_a = bootstrap_ci(values_a)
        _, low_b, high_b = bootstrap_ci(values_b)
        iqm_a, *iqm_interval_a = iqm_ci([values_a])
        iqm_b, *iqm_interval_b = iqm_ci([values_b])
        improvement, *improvement_interval = probability_of_improvement_ci(
            [values_a], [values_b], resamples=IMPROVEMENT_RESAMPLES
        )
        # Tests need two values a side, and some spread on at least one side.
        enough = values_a.size >= 2 and values_b.size >= 2
        spread = np.ptp(values_a) > 0 or np.ptp(values_b) > 0
        tests = {}
        if enough and spread:
            with warnings.catch_warnings():  # one constant side: scipy warns, the numbers stand
                warnings.simplefilter("ignore", RuntimeWarning)
                tests = compare(values_a, values_b)
        results[name] = {
            "n_a": int(values_a.size),
            "n_b": int(values_b.size),
            "mean_a": float(values_a.mean()),
            "mean_b": float(values_b.mean()),
            "ci_a": [low_a, high_a],
            "ci_b": [low_b, high_b],
            "iqm_a": iqm_a,
            "iqm_b": iqm_b,
            "iqm_ci_a": iqm_interval_a,
            "iqm_ci_b": iqm_interval_b,
            "probability_of_improvement": improvement,
            "probability_of_improvement_ci": improvement_interval,
            **{key: value for key, value in tests.items() if key not in ("mean_a", "mean_b")},
        }
    return results


def format_comparison(results: dict[str, dict[str, float]], label_a: str, label_b: str) -> str:
    """The per-metric tests, then the robust aggregates: IQM of each side and P(A > B)."""
    tests = [("metric", f"A: {label_a}", f"B: {label_b}", "Welch p", "Hedges g", "MWU p")]
    robust = [("metric", "IQM of A", "IQM of B", "P(A > B)")]
    for name, entry in results.items():
        tests.append(
            (
                name,
                _interval(entry["mean_a"], entry["ci_a"]),
                _interval(entry["mean_b"], entry["ci_b"]),
                _number(entry.get("welch_p")),
                _number(entry.get("hedges_g")),
                _number(entry.get("mann_whitney_p")),
            )
        )
        robust.append(
            (
                name,
                _interval(entry["iqm_a"], entry["iqm_ci_a"]),
                _interval(entry["iqm_b"], entry["iqm_ci_b"]),
                _interval(
                    entry["probability_of_improvement"], entry["probability_of_improvement_ci"]
                ),
            )
        )
    return (
        _table(tests)
        + "\n\nmeans with 95% bootstrap intervals; g > 0 when A is higher\n\n"
        + _table(robust)
        + "\n\ninterquartile means (rliable) and P(A > B), the chance that an episode of A "
        "scores above one of B (ties half), with 95% percentile bootstrap intervals over "
        "episodes; P > 0.5 is an improvement only where higher is better"
    )


def _table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def _interval(value: float, interval: list[float]) -> str:
    return f"{value:.3f} [{interval[0]:.3f}, {interval[1]:.3f}]"


def _number(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.3g}"


def compare_command(config: CompareConfig) -> dict[str, dict[str, float]]:
    """Compare two result files: Welch's t-test, Hedges' g, bootstrap CIs, Mann-Whitney U,
    IQM and probability of improvement."""
    results = compare_results(config.a, config.b, config.metrics)
    print(format_comparison(results, str(config.a), str(config.b)))
    if config.out is not None:
        config.out.parent.mkdir(parents=True, exist_ok=True)
        config.out.write_text(json.dumps(results, indent=2) + "\n")
    return results
