"""Host-side statistics for evaluation reports and comparisons between runs.

Everything here takes plain arrays of per-episode (or per-run) values and returns floats,
so MARL evaluations, LLM evaluations and benchmark scripts aggregate the same way.

The aggregates follow rliable (Agarwal et al. 2021, "Deep RL at the edge of the
statistical precipice"): interquartile mean, optimality gap, probability of improvement
and performance profiles, over a set of tasks with one array of runs (seeds) per task.
Their intervals come from the stratified bootstrap: `scipy.stats.bootstrap` with one
sample per task and `paired=False`, so each task's runs are resampled with replacement
within that task, never mixed across tasks. Intervals are percentile intervals, as
rliable's are: BCa's acceleration is a jackknife estimate that, with a handful of seeds
and statistics that are flat almost everywhere (a trimmed mean, a rank statistic), is
unstable, and scipy gives NaN where the resamples are degenerate. The generator is
seeded, so a report built twice from the same numbers prints the same intervals.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats as scipy_stats

from alemlite.core.errors import require

RESAMPLES = 10_000
"""Bootstrap resamples per interval."""
IQM_CUT = 0.25
"""Fraction trimmed from each end for the interquartile mean."""


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
    interval = scipy_stats.binomtest(successes, trials).proportion_ci(confidence, method="wilson")
    return successes / trials, float(interval.low), float(interval.high)


def bootstrap_ci(
    values: np.ndarray, confidence: float = 0.95, resamples: int = RESAMPLES, seed: int = 0
) -> tuple[float, float, float]:
    """Mean with a percentile bootstrap interval (seeded, so reports are reproducible)."""
    return _floats(stratified_bootstrap([values], _mean, confidence, resamples, seed))


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


def stratified_bootstrap(
    samples: Sequence[ArrayLike],
    statistic: Callable[..., np.ndarray],
    confidence: float = 0.95,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`statistic(*samples)` with its percentile interval from the stratified bootstrap.

    Each sample (one task's runs) is resampled with replacement on its own. `statistic`
    must be vectorised: it takes arrays `(..., runs)`, reduces `axis` (the last), and may
    return a vector, whose components then come first. A sample of one run always
    resamples to itself, so it is held fixed (scipy needs two observations to resample).
    """
    samples = [np.asarray(sample, dtype=np.float64).ravel() for sample in samples]
    empty = [index for index, sample in enumerate(samples) if sample.size == 0]
    require(not empty, f"samples {empty} hold no values; give every task at least one run")
    point = np.asarray(statistic(*samples, axis=-1), dtype=np.float64)
    varied = [index for index, sample in enumerate(samples) if sample.size > 1]
    if not varied:
        return point, point, point

    def with_fixed_singletons(*drawn: np.ndarray, axis: int = -1) -> np.ndarray:
        batch = drawn[0].shape[:-1]
        resampled = dict(zip(varied, drawn, strict=True))
        full = [
            resampled[index] if index in resampled else np.broadcast_to(sample, (*batch, 1))
            for index, sample in enumerate(samples)
        ]
        return statistic(*full, axis=axis)

    result = scipy_stats.bootstrap(
        [samples[index] for index in varied],
        with_fixed_singletons,
        n_resamples=resamples,
        confidence_level=confidence,
        method="percentile",
        paired=False,
        vectorized=True,
        rng=np.random.default_rng(seed),
    )
    interval = result.confidence_interval
    return point, np.asarray(interval.low, np.float64), np.asarray(interval.high, np.float64)


def _floats(estimate: tuple[np.ndarray, np.ndarray, np.ndarray]) -> tuple[float, float, float]:
    point, low, high = estimate
    return float(point), float(low), float(high)


def _mean(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(np.concatenate(samples, axis=axis), axis=axis)


def _interquartile_mean(*tasks: np.ndarray, axis: int = -1) -> np.ndarray:
    return scipy_stats.trim_mean(np.concatenate(tasks, axis=axis), IQM_CUT, axis=axis)


def iqm_ci(
    scores_per_task: Sequence[ArrayLike],
    confidence: float = 0.95,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Interquartile mean of all runs of all tasks, with a stratified bootstrap interval.

    `scipy.stats.trim_mean(scores, 0.25)` on the pooled scores, as rliable computes it: it
    cuts `floor(n / 4)` scores from each end, so when 4 does not divide n slightly more
    than the middle half is kept (10 of 18, all of 3).
    """
    return _floats(
        stratified_bootstrap(scores_per_task, _interquartile_mean, confidence, resamples, seed)
    )


def optimality_gap_ci(
    scores_per_task: Sequence[ArrayLike],
    gamma: float = 1.0,
    confidence: float = 0.95,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> tuple[float, float, float]:
    """Mean over all runs of all tasks of max(0, gamma - score): how far runs fall short of
    `gamma`, with no credit for exceeding it; stratified bootstrap interval."""

    def gap(*tasks: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.mean(np.maximum(0.0, gamma - np.concatenate(tasks, axis=axis)), axis=axis)

    return _floats(stratified_bootstrap(scores_per_task, gap, confidence, resamples, seed))


def probability_of_improvement_ci(
    x_per_task: Sequence[ArrayLike],
    y_per_task: Sequence[ArrayLike],
    confidence: float = 0.95,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> tuple[float, float, float]:
    """P(X > Y), ties counting one half, averaged over tasks, with a stratified bootstrap
    interval (each method's runs resampled within each task).

    Per task it is the Mann-Whitney U statistic of X divided by n_x * n_y. The cost is one
    ranking per resample and task, so thousands of runs a side want fewer resamples.
    """
    tasks = len(x_per_task)
    require(
        tasks == len(y_per_task) and tasks > 0,
        f"X has {tasks} tasks and Y {len(y_per_task)}; give both the same tasks, in order",
    )

    def improvement(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
        per_task = [
            # Only U is used, so the cheap asymptotic p-value is computed, never the exact one.
            scipy_stats.mannwhitneyu(x, y, axis=axis, method="asymptotic").statistic
            / (x.shape[axis] * y.shape[axis])
            for x, y in zip(samples[:tasks], samples[tasks:], strict=True)
        ]
        return np.mean(per_task, axis=0)

    samples = [*x_per_task, *y_per_task]
    return _floats(stratified_bootstrap(samples, improvement, confidence, resamples, seed))


def performance_profile_ci(
    scores_per_task: Sequence[ArrayLike],
    thresholds: ArrayLike,
    confidence: float = 0.95,
    resamples: int = RESAMPLES,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per threshold tau, the fraction of runs (pooled over tasks) scoring above tau, with
    pointwise stratified bootstrap bands: `(profile, low, high)`, one value per tau."""
    thresholds = np.asarray(thresholds, dtype=np.float64).ravel()

    def fraction_above(*tasks: np.ndarray, axis: int = -1) -> np.ndarray:
        scores = np.concatenate(tasks, axis=axis)
        taus = thresholds.reshape(-1, *(1,) * scores.ndim)  # the thresholds' axis comes first
        return np.mean(scores[None] > taus, axis=axis)

    return stratified_bootstrap(scores_per_task, fraction_above, confidence, resamples, seed)
