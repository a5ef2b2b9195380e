"""Host-side statistics of the study, on per-episode arrays `(seeds, episodes)`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from alemlite.stats import hedges_g, mean_ci, summarise, welch_t_test
from benchmarks.study.config import EPISODE_METRICS


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
