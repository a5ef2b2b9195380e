"""Host-side statistics of the study: per run, on per-episode arrays `(seeds, episodes)`;
across settings, rliable's aggregates of per-seed returns normalised per setting."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from alemlite.core.errors import require
from alemlite.stats import (
    hedges_g,
    iqm_ci,
    mean_ci,
    optimality_gap_ci,
    performance_profile_ci,
    probability_of_improvement_ci,
    summarise,
    welch_t_test,
)
from benchmarks.study.config import EPISODE_METRICS

CHECKPOINTS = ("final", "best")
"""The checkpoints aggregated over settings."""
RANDOM_POLICY = "uniform_random"
"""Scores 0 once returns are normalised; the best of the other scripted policies scores 1."""
# P(X > Y) is reported for every method X against each baseline Y, and for the extra pairs.
IMPROVEMENT_BASELINES = ("ippo", "mappo")
IMPROVEMENT_EXTRA_PAIRS = (("grpo", "srpo"),)


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


def normalisation(setting: Mapping[str, Any]) -> dict[str, Any]:
    """The setting's score scale: 0 = uniform random play, 1 = the best scripted policy, both
    on the study's test episodes."""
    returns = {
        name: reference["return_across_seeds"]["mean"]
        for name, reference in setting["references"].items()
    }
    require(
        RANDOM_POLICY in returns,
        f"setting {setting['reward']}-{setting['num_philosophers']} has no {RANDOM_POLICY} "
        "reference; rerun the study to record it",
    )
    random = returns.pop(RANDOM_POLICY)
    best = max(returns, key=returns.get, default=None)
    require(
        best is not None and returns[best] > random,
        f"setting {setting['reward']}-{setting['num_philosophers']}: no scripted policy beats "
        f"{RANDOM_POLICY} ({random:.3f}), so its returns cannot be normalised; drop the setting",
    )
    return {"random": random, "best_scripted": returns[best], "best_policy": best}


def normalised_returns(results: Mapping[str, Any], which: str) -> dict[str, list[np.ndarray]]:
    """Per method, one array per setting (task) of the `which` checkpoint's normalised
    per-seed test returns (the runs)."""
    scores: dict[str, list[np.ndarray]] = {}
    for setting in results["settings"].values():
        scale = normalisation(setting)
        for method, run in setting["methods"].items():
            returns = np.asarray(run[which]["return_per_seed"], float)
            normalised = (returns - scale["random"]) / (scale["best_scripted"] - scale["random"])
            scores.setdefault(method, []).append(normalised)
    tasks = len(results["settings"])
    partial = [method for method, per_task in scores.items() if len(per_task) != tasks]
    require(not partial, f"methods {partial} miss settings; aggregate complete results only")
    return scores


def improvement_pairs(methods: Sequence[str]) -> list[tuple[str, str]]:
    """(X, Y) pairs for P(X > Y): every method against each baseline, then the extra pairs;
    a pair whose reverse is already listed is left out."""
    pairs: list[tuple[str, str]] = []
    candidates = [(m, b) for b in IMPROVEMENT_BASELINES for m in methods if m != b]
    for x, y in [*candidates, *IMPROVEMENT_EXTRA_PAIRS]:
        if x in methods and y in methods and (y, x) not in pairs and (x, y) not in pairs:
            pairs.append((x, y))
    return pairs


def aggregates(results: Mapping[str, Any]) -> dict[str, Any]:
    """IQM and optimality gap per method, P(X > Y) per pair, of normalised final and best
    returns, each `{mean, low, high}` with a stratified bootstrap 95% interval."""
    scores = {which: normalised_returns(results, which) for which in CHECKPOINTS}

    def estimate(values: tuple[float, float, float]) -> dict[str, float]:
        return dict(zip(("mean", "low", "high"), values, strict=True))

    methods = list(scores["final"])
    return {
        "methods": {
            method: {
                which: {
                    "iqm": estimate(iqm_ci(scores[which][method])),
                    "optimality_gap": estimate(optimality_gap_ci(scores[which][method])),
                }
                for which in CHECKPOINTS
            }
            for method in methods
        },
        "improvement": {
            (x, y): {
                which: estimate(probability_of_improvement_ci(scores[which][x], scores[which][y]))
                for which in CHECKPOINTS
            }
            for x, y in improvement_pairs(methods)
        },
    }


def performance_profiles(
    results: Mapping[str, Any], which: str, thresholds: np.ndarray
) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per method: the fraction of runs with normalised return above each threshold, and
    its stratified bootstrap 95% band."""
    return {
        method: performance_profile_ci(per_task, thresholds)
        for method, per_task in normalised_returns(results, which).items()
    }
