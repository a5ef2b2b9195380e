"""Host-side statistics for evaluation reports and comparisons between runs.

Everything here takes plain arrays of per-episode values and returns floats, so
MARL evaluations, LLM evaluations and benchmark scripts aggregate the same way.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
from scipy import stats as scipy_stats


def mean_ci(values: np.ndarray, confidence: float = 0.95) -> tuple[float, float, float]:
    """Mean with a Student-t confidence interval; the interval collapses for n < 2."""
    values = np.asarray(values, dtype=np.float64).ravel()
    mean = float(values.mean())
    if values.size < 2 or np.all(values == values[0]):
        return mean, mean, mean
    half = float(scipy_stats.sem(values) * scipy_stats.t.ppf((1 + confidence) / 2, values.size - 1))
    return mean, mean - half, mean + half


def wilson_ci(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float, float]:
    """Rate with Wilson's score interval, sound near 0 and 1 where the normal one is not."""
    if trials <= 0:
        return float("nan"), float("nan"), float("nan")
    z = float(scipy_stats.norm.ppf((1 + confidence) / 2))
    rate = successes / trials
    denominator = 1 + z * z / trials
    centre = (rate + z * z / (2 * trials)) / denominator
    half = z * math.sqrt(rate * (1 - rate) / trials + z * z / (4 * trials * trials)) / denominator
    return rate, max(0.0, centre - half), min(1.0, centre + half)


def bootstrap_ci(
    values: np.ndarray, confidence: float = 0.95, resamples: int = 10_000, seed: int = 0
) -> tuple[float, float, float]:
    """Mean with a percentile bootstrap interval (seeded, so reports are reproducible)."""
    values = np.asarray(values, dtype=np.float64).ravel()
    rng = np.random.default_rng(seed)
    means = rng.choice(values, size=(resamples, values.size), replace=True).mean(axis=1)
    tail = (1 - confidence) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return float(values.mean()), float(low), float(high)


def welch_t_test(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Welch's unequal-variance t-test: (t, two-sided p)."""
    result = scipy_stats.ttest_ind(np.asarray(a, float), np.asarray(b, float), equal_var=False)
    return float(result.statistic), float(result.pvalue)


def hedges_g(a: np.ndarray, b: np.ndarray) -> float:
    """Standardised mean difference (a - b) with Hedges' small-sample correction."""
    a, b = np.asarray(a, float).ravel(), np.asarray(b, float).ravel()
    n_a, n_b = a.size, b.size
    pooled_var = ((n_a - 1) * a.var(ddof=1) + (n_b - 1) * b.var(ddof=1)) / (n_a + n_b - 2)
    if pooled_var == 0:
        return 0.0 if a.mean() == b.mean() else math.copysign(math.inf, a.mean() - b.mean())
    correction = 1 - 3 / (4 * (n_a + n_b) - 9)
    return float((a.mean() - b.mean()) / math.sqrt(pooled_var) * correction)


def mann_whitney_u(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Mann-Whitney U test (two-sided): (U of a, p)."""
    result = scipy_stats.mannwhitneyu(np.asarray(a, float), np.asarray(b, float))
    return float(result.statistic), float(result.pvalue)


def is_rate(values: np.ndarray) -> bool:
    """Boolean per-episode outcomes, summarised as a rate with a Wilson interval.

    Only the dtype decides: a count that happens to be 0 or 1 in every episode
    is still a count.
    """
    return np.asarray(values).dtype == bool


def summarise(metrics: Mapping[str, np.ndarray], confidence: float = 0.95) -> dict[str, dict]:
    """Per metric: mean and interval (Wilson for 0/1 outcomes, Student-t otherwise), n."""
    summary = {}
    for name, values in metrics.items():
        values = np.asarray(values)
        if values.ndim != 1:
            continue  # per-seat vectors are kept in the raw results, not summarised
        if is_rate(values):
            mean, low, high = wilson_ci(int(values.sum()), values.size, confidence)
            method = "wilson"
        else:
            mean, low, high = mean_ci(values, confidence)
            method = "t"
        summary[name] = {
            "mean": mean,
            "low": low,
            "high": high,
            "n": int(values.size),
            "ci": method,
        }
    return summary


def compare(a: np.ndarray, b: np.ndarray) -> dict[str, float]:
    """Every two-sample statistic between per-episode values `a` and `b`."""
    t, p = welch_t_test(a, b)
    u, p_u = mann_whitney_u(a, b)
    return {
        "mean_a": float(np.mean(a)),
        "mean_b": float(np.mean(b)),
        "welch_t": t,
        "welch_p": p,
        "hedges_g": hedges_g(a, b),
        "mann_whitney_u": u,
        "mann_whitney_p": p_u,
    }
