"""Base-task and coordination scores, and the gaps between teams with stratified bootstrap
intervals.

The Alem benchmark reports a team's Base% and Coord.%: the reward it earned from the base
task (Crafter's survival and crafting) and from the coordination layer, each as a percentage
of the most reward there is in that category, side by side with Total%. Each environment
here exposes its own episode metrics; this table says which of them plays which part, by
metric name (the first of an environment's headline metrics found under a role is its
score there). Higher is better for every one of them.

- Craft: base = `team_achievement_percent` (the base world's achievements any agent
  unlocked, in %), coordination = `coordination_achievement_percent` (the coordination
  achievements in play unlocked, in %). These are Alem's achievement-count view
  (`achievement_pct`), not its reward-normalised leaderboard columns, which Craft does not
  expose per category; `normalised_return` (the achievement reward of both, in % of its
  most) stands in for Total%.
- Dining: base = `throughput` (meals per step played: the table's eating while it lasts),
  coordination = `meal_efficiency` (meals eaten over the whole horizon as a share of the most
  the table can eat in `max_steps`, `max_meals`: every meal needs both neighbours to let go
  of a fork, so deadlock, idling and fork fights all cost it). Seeds 0-15, 30 steps, N=3 / 5
  (tests/test_gap.py checks the order): resource ordering 0.80 / 0.76, backoff 0.19 / 0.38,
  uniform random 0.14 / 0.27, all-wait and greedy-left 0. Not `fed_share` (the share of
  philosophers who ate at least once), which random play all but ties (0.77 at N=5 against
  resource ordering's 0.80, above IPPO's 0.62): a few meals before a deadlock feed most
  seats once;
  nor `fairness`, which is 1 at a table where nobody eats.
- Matrix games: base = `mean_payoff` (payoff per player and round), coordination =
  `optimal_joint_action_rate` (rounds on the best joint action).

Every environment also has `episode_return` (the reward per agent), reported as `return`.

Team intervals: a 95% percentile bootstrap of the mean over episodes
(`alemlite.stats.bootstrap_ci`), which never leaves the range the episodes span (a share
stays in [0, 1], where a t-interval would not).

Gap intervals: the gap of team A over team B is the mean over strata (difficulty x team
size) of A's mean minus B's, with a 95% percentile interval from the stratified bootstrap
(`alemlite.stats.stratified_bootstrap`: `scipy.stats.bootstrap` with one sample per team and
stratum, each resampled within itself), so episodes never move between strata.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence

import numpy as np

import alemlite
from alemlite.core.spec import EnvSpec
from alemlite.stats import bootstrap_ci, stratified_bootstrap

ROLE_METRICS: dict[str, tuple[str, ...]] = {
    "base": ("team_achievement_percent", "throughput", "mean_payoff"),
    "coordination": (
        "coordination_achievement_percent",
        "meal_efficiency",
        "optimal_joint_action_rate",
    ),
    "total": ("normalised_return",),
}
"""Metric names that can play each role, in order of preference."""
RETURN = "episode_return"
ROLES = ("base", "coordination", "total", "return")
DERIVED = {"dining": ("meal_efficiency",)}
"""Scores computed here from an environment's episode metrics (so that runs written before
a score existed are scored alike)."""

COMPARISONS: dict[str, tuple[str, str]] = {
    "LLM - MARL": ("llm", "marl"),
    "LLM - scripted": ("llm", "scripted"),
    "mixed - MARL": ("mixed", "marl"),
}
"""Each headline gap: the team of the first kind against the stratum's reference of the
second (`plan.StratumPlan.references`)."""


def role_metrics(env_spec: EnvSpec) -> dict[str, str]:
    """Role -> the environment's metric that plays it (roles it has no metric for are left
    out; `return` is always there)."""
    roles = {}
    available = (*env_spec.metrics, *DERIVED.get(env_spec.name, ()))
    for role, candidates in ROLE_METRICS.items():
        chosen = [name for name in available if name in candidates]
        if chosen:
            roles[role] = chosen[0]
    roles["return"] = RETURN
    return roles


def with_derived(
    env: str, options: Mapping[str, object], episodes: Mapping[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """`episodes` with the scores `DERIVED` names for `env` added (dining: `meal_efficiency`,
    meals_total over the table's `max_meals` for its size and `max_steps`)."""
    episodes = {name: np.asarray(values) for name, values in episodes.items()}
    if env == "dining" and "meals_total" in episodes:
        env_spec = alemlite.spec(env)
        table = env_spec.build(env_spec.options(**options))
        most = int(table.max_meals(table.default_params))
        # In float64: a float32 count from a compiled run and a JSON one must score alike.
        meals = episodes["meals_total"].astype(np.float64)
        episodes["meal_efficiency"] = meals / max(most, 1)
    return episodes


def team_scores(
    episodes: Mapping[str, np.ndarray], roles: Mapping[str, str]
) -> dict[str, dict[str, float]]:
    """Per role: mean, 95% percentile bootstrap interval and n of the team's episodes (roles
    whose metric the run did not measure, e.g. coordination with the layer off, are left
    out)."""
    scores = {}
    for role, metric in roles.items():
        if metric in episodes:
            values = np.asarray(episodes[metric], dtype=np.float64)
            mean, low, high = bootstrap_ci(values)
            scores[role] = {
                "mean": mean,
                "low": low,
                "high": high,
                "n": int(values.size),
                # Episodes that scored nothing (dining's base task: no meal at all, the
                # degenerate optimum a reward can drive a team to).
                "zero_share": float(np.mean(values == 0)),
                "ci": "bootstrap",
            }
    return scores


def gap_interval(
    a_by_stratum: Sequence[np.ndarray], b_by_stratum: Sequence[np.ndarray]
) -> dict[str, float]:
    """Mean over strata of mean(A) - mean(B), with its stratified bootstrap interval."""
    strata = len(a_by_stratum)

    def gap(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
        differences = [
            np.mean(a, axis=axis) - np.mean(b, axis=axis)
            for a, b in zip(samples[:strata], samples[strata:], strict=True)
        ]
        return np.mean(differences, axis=0)

    with warnings.catch_warnings():  # a constant sample (a team that never eats) is no error
        warnings.simplefilter("ignore")
        point, low, high = stratified_bootstrap([*a_by_stratum, *b_by_stratum], gap)
    return {"gap": float(point), "low": float(low), "high": float(high)}
