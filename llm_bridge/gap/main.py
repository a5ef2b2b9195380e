"""`alemlite gap`: plan every stratum, play every team, score, and write gap.json, gap.md and
the figures into --out."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import alemlite
from llm_bridge.clients.base import without_userinfo
from llm_bridge.gap.config import GapConfig
from llm_bridge.gap.plan import plan_stratum
from llm_bridge.gap.play import TeamResult, play_team
from llm_bridge.gap.plots import plot_gap
from llm_bridge.gap.report import markdown_report
from llm_bridge.gap.scores import (
    COMPARISONS,
    gap_interval,
    role_metrics,
    team_scores,
    with_derived,
)

USAGE_KEYS = (
    "requests", "failed_requests", "parse_rate", "cut_off", "empty_answers", "mode",
    "prompt_tokens", "completion_tokens", "cost", "wall_s",
)  # fmt: skip
"""What the report keeps of each model run's usage (keys a run lacks are left out)."""
EPISODE_TOKENS = ("prompt_tokens", "completion_tokens")
"""The per-episode usage a model run records (its summary's episodes), kept per team."""
GAP_FORMAT = 2
"""gap.json's layout: 2 adds per-episode values per team, bootstrap team intervals, dining's
meal_efficiency (model teams: per-episode tokens and cost in `episode_usage`, where written);
reports without `format` were written before."""


def run_gap(
    config: GapConfig, provenance: Callable[[], dict[str, Any]] | None = None
) -> dict[str, Any]:
    """Play every team of every stratum and write the report; `provenance()` (commit,
    command, machine), when given, is recorded in gap.json."""
    started = time.perf_counter()
    env_spec = alemlite.spec(config.env)
    roles = role_metrics(env_spec)
    out = config.out_dir
    strata, values = [], {}
    for stratum in config.strata():
        plan = plan_stratum(env_spec, stratum, config)
        teams = {}
        for team in plan.teams:
            print(f"[{time.strftime('%H:%M:%S')}] {stratum.key}: {team.label}", flush=True)
            result = play_team(env_spec, stratum, team, config, out / "runs" / stratum.key)
            options = dataclasses.asdict(stratum.options)
            episodes = with_derived(config.env, options, result.episodes)
            prices = (config.llm.input_price_per_mtok, config.llm.output_price_per_mtok)
            teams[team.label] = _team_entry(result, episodes, roles, out, prices)
            values[stratum.key, team.label] = episodes
        strata.append(
            {
                "key": stratum.key,
                "title": stratum.title,
                "difficulty": stratum.difficulty,
                "team_size": stratum.team_size,
                "options": dataclasses.asdict(stratum.options),
                "references": plan.references,
                "notes": plan.notes,
                "teams": teams,
                "gaps": _gaps([plan.references], [stratum.key], values, roles),
            }
        )
    results = {
        "format": GAP_FORMAT,
        "config": _describe(config),
        "roles": roles,
        "strata": strata,
        "gaps": _gaps(
            [entry["references"] for entry in strata], [e["key"] for e in strata], values, roles
        ),
        "wall_s": time.perf_counter() - started,
    }
    if provenance is not None:
        results["provenance"] = provenance()
    write_outputs(results, out)
    return results


def write_outputs(results: dict[str, Any], out: Path) -> None:
    """gap.json, the figures and gap.md (which shows them) in `out`."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "gap.json").write_text(json.dumps(results, indent=2, default=str) + "\n")
    figures = plot_gap(results, out / "figures")
    (out / "gap.md").write_text(markdown_report(results, figures, out))
    print(f"wrote {out / 'gap.json'}, {out / 'gap.md'} and the figures in {out / 'figures'}")


def _team_entry(
    result: TeamResult,
    episodes: dict[str, np.ndarray],
    roles: dict[str, str],
    out: Path,
    prices_per_mtok: tuple[float, float],
) -> dict[str, Any]:
    entry = {
        "kind": result.team.kind,
        "name": result.team.name,
        "seats": list(result.team.seats),
        "result": str(result.result.relative_to(out)),
        "wall_s": result.wall_s,
        "scores": team_scores(episodes, roles),
        # Per-episode values (seed order), so that `alemlite leaderboard` can resample them
        # without the runs/ folder, which is not published.
        "episodes": {
            role: np.asarray(episodes[metric], np.float64).tolist()
            for role, metric in roles.items()
            if metric in episodes
        },
    }
    if result.usage is not None:
        entry["usage"] = {key: result.usage[key] for key in USAGE_KEYS if key in result.usage}
        # Per episode too, so that `alemlite leaderboard --first-episodes` counts the tokens
        # and cost of the episodes it keeps.
        tokens = [np.asarray(episodes[name], np.int64) for name in EPISODE_TOKENS]
        cost = (tokens[0] * prices_per_mtok[0] + tokens[1] * prices_per_mtok[1]) / 1e6
        entry["episode_usage"] = {
            **{name: t.tolist() for name, t in zip(EPISODE_TOKENS, tokens, strict=True)},
            "cost": cost.tolist(),
        }
    return entry


def _gaps(
    references: list[dict[str, str | None]],
    keys: list[str],
    values: dict[tuple[str, str], dict[str, np.ndarray]],
    roles: dict[str, str],
) -> dict[str, dict[str, Any]]:
    """Each headline comparison over the strata where both its teams played: per role, the
    gap and its interval, and the strata it covers and misses."""
    gaps: dict[str, dict[str, Any]] = {}
    for comparison, (kind_a, kind_b) in COMPARISONS.items():
        pairs = [
            (key, refs[kind_a] if kind_a != "llm" else "llm", refs[kind_b])
            for key, refs in zip(keys, references, strict=True)
        ]
        covered = [(key, a, b) for key, a, b in pairs if a is not None and b is not None]
        entry: dict[str, Any] = {
            "strata": [key for key, _, _ in covered],
            "missing": [key for key, a, b in pairs if a is None or b is None],
            "teams": {key: [a, b] for key, a, b in covered},
        }
        for role, metric in roles.items():
            if covered and all(metric in values[key, a] for key, a, _ in covered):
                entry[role] = gap_interval(
                    [values[key, a][metric] for key, a, _ in covered],
                    [values[key, b][metric] for key, _, b in covered],
                )
        gaps[comparison] = entry
    return gaps


def _describe(config: GapConfig) -> dict[str, Any]:
    strata = config.strata()
    return {
        "env": config.env,
        "options": dataclasses.asdict(config.options),
        "difficulties": list(dict.fromkeys(s.difficulty for s in strata if s.difficulty)),
        "team_sizes": list(dict.fromkeys(s.team_size for s in strata)),
        "episodes": config.episodes,
        "seed": config.seed,
        "checkpoints": list(config.checkpoints),
        "scripted": list(config.scripted_teams()),
        "mixed_llm_seats": config.mixed_llm_seats,
        **config.llm.describe(),
        "decoding": config.llm.decoding,
        "constrained": config.llm.constrained,
        **(
            {}
            if config.llm.backend == "hf"
            else {"base_url": [without_userinfo(url) for url in config.llm.base_url]}
        ),
        "prompt": dataclasses.asdict(config.prompt),
    }
