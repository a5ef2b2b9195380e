"""`alemlite leaderboard GAP_DIR...`: many models' gap reports side by side in one table.

Each gap report (`alemlite gap --out GAP_DIR`) already holds its model's team, the MARL
checkpoints and the scripted teams per stratum on the same seeds, so a leaderboard is their
model teams beside the references, on the strata every report played. Runs played on other
environment options, seeds or episode counts are refused: their numbers are not comparable.

Per team: the coordination and base scores per stratum (means over episodes), their
interquartile mean over all episodes of all strata with a 95% stratified bootstrap interval
(`alemlite.stats.iqm_ci`: episodes resampled within their stratum), the probability that it
beats the next team down the ranking (`probability_of_improvement_ci`), the share of
episodes with a base score of 0 (dining: no meal at all, the `paper` reward's degenerate
optimum), and for model teams the parse and cut-off rates, tokens and cost.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tyro.conf import Positional

from alemlite.core.errors import ConfigError, require
from alemlite.stats import iqm_ci, probability_of_improvement_ci
from llm_bridge.compare import read_result
from llm_bridge.gap.report import number
from llm_bridge.gap.scores import with_derived

SCORED = ("coordination", "base")
"""The roles the leaderboard shows; it ranks by the first."""


@dataclass(frozen=True)
class LeaderboardConfig:
    """Many models' gap reports in one table and plot, with the MARL and scripted references:
    per stratum and aggregated (IQM, probability of improvement between neighbours), the
    zero-base-score share, parse and cut-off rates, tokens and cost; leaderboard.json, .md,
    figures/ and index.html (`alemlite view OUT` shows it)."""

    runs: Positional[tuple[Path, ...]] = ()
    """gap report folders (the --out of `alemlite gap`), played on the same options and seeds"""
    first_episodes: int | None = None
    """use only each team's first N episodes (seeds seed .. seed + N - 1), so that reports of
    different lengths compare on the seeds they share; default: all, which must agree"""
    out: Path = Path("runs/leaderboard")
    """the leaderboard's folder"""
    publish: bool = False
    """write into benchmarks/results/ or docs/ (from a clean tree: the JSON names the commit)"""
    allow_dirty: bool = False
    """publish from a tree with uncommitted changes (the JSON says so)"""

    def __post_init__(self) -> None:
        # A bad value is named first, whatever else the command line lacks.
        require(
            self.first_episodes is None or self.first_episodes >= 1,
            f"first_episodes={self.first_episodes} must be at least 1",
        )
        require(bool(self.runs), "runs= is empty; give one or more `alemlite gap` --out folders")


def _model_label(config: Mapping[str, Any]) -> str:
    mode = config.get("decoding", "generate")
    mode = "constrained" if config.get("constrained") else "free" if mode == "generate" else mode
    return f"{config['model']} ({mode})"


def _team_values(folder: Path, report: Mapping, stratum: Mapping, label: str) -> dict:
    """Per role, the team's per-episode values: from gap.json (format 2), else its result
    file under runs/ (older reports, where that folder is kept)."""
    team = stratum["teams"][label]
    if "episodes" in team:
        return {role: np.asarray(values) for role, values in team["episodes"].items()}
    path = folder / team["result"]
    require(
        path.is_file(),
        f"{folder}: team {label} of {stratum['key']} has no per-episode values (a gap.json "
        f"older than format 2, and {path} is gone); rerun the command in its gap.json "
        "provenance",
    )
    episodes = with_derived(
        report["config"]["env"], stratum["options"], read_result(path)["episodes"]
    )
    return {
        role: episodes[metric] for role, metric in report["roles"].items() if metric in episodes
    }


def _check_alike(reports: list[tuple[Path, dict]], episodes: int | None) -> list[str]:
    """The strata every report played; refuses reports not played alike."""
    first_folder, first = reports[0]
    keys = [s["key"] for s in first["strata"]]
    for folder, report in reports[1:]:
        for field in ("env", "seed", *(() if episodes else ("episodes",))):
            mine, theirs = report["config"][field], first["config"][field]
            fix = (
                " or pass --first-episodes N to use the seeds both played"
                if field == "episodes"
                else ""
            )
            require(
                mine == theirs,
                f"runs={folder}: {field}={mine}, but {first_folder} has {field}={theirs}; "
                f"give reports played alike{fix}",
            )
        keys = [key for key in keys if key in {s["key"] for s in report["strata"]}]
    options = {s["key"]: s["options"] for s in first["strata"]}
    require(bool(keys), "runs= share no stratum (difficulty x team size); nothing to compare")
    for folder, report in reports:
        require(
            episodes is None or episodes <= report["config"]["episodes"],
            f"first_episodes={episodes}: {folder} played only {report['config']['episodes']}",
        )
        for stratum in report["strata"]:
            theirs, mine = options.get(stratum["key"], {}), stratum["options"]
            changed = [k for k in sorted({*theirs, *mine}) if mine.get(k) != theirs.get(k)]
            if stratum["key"] in keys and changed:
                name = changed[0]
                raise ConfigError(
                    f"runs={folder}: {stratum['key']} played {name}={mine.get(name)}, but "
                    f"{first_folder} played {name}={theirs.get(name)}; give reports played on "
                    "the same environment options"
                )
    return keys


def build_leaderboard(config: LeaderboardConfig) -> dict[str, Any]:
    """The leaderboard of `config.runs` (see the module's docstring) as a JSON-able dict."""
    reports = []
    for folder in config.runs:
        path = folder / "gap.json"
        require(path.is_file(), f"runs={folder} holds no gap.json; give `alemlite gap` folders")
        reports.append((folder, json.loads(path.read_text())))
    keys = _check_alike(reports, config.first_episodes)
    first = reports[0][1]
    cut = config.first_episodes
    teams: dict[str, dict[str, Any]] = {}
    for folder, report in reports:
        by_key = {s["key"]: s for s in report["strata"]}
        model = _model_label(report["config"])
        label = model if model not in teams else f"{model} [{folder.name}]"
        candidates = [("llm", label, "model")]
        candidates += [(name, name, t["kind"]) for name, t in by_key[keys[0]]["teams"].items()
                       if t["kind"] in ("marl", "scripted")]  # fmt: skip
        for source, name, kind in candidates:
            if name in teams or not all(source in by_key[key]["teams"] for key in keys):
                continue
            values = {key: _team_values(folder, report, by_key[key], source) for key in keys}
            entry = {"kind": kind, "report": str(folder), "values": {
                role: {key: values[key][role][:cut].tolist() for key in keys}
                for role in SCORED if all(role in values[key] for key in keys)
            }}  # fmt: skip
            if kind == "model":
                entry["usage"] = _usage(
                    [by_key[key]["teams"]["llm"] for key in keys], cut, report["config"]["episodes"]
                )
            teams[name] = entry
    for entry in teams.values():
        entry["scores"] = {}
        for role, per_stratum in entry["values"].items():
            samples = [per_stratum[key] for key in keys]
            mean, low, high = iqm_ci(samples)
            entry["scores"][role] = {
                "iqm": mean, "low": low, "high": high,
                "by_stratum": {key: float(np.mean(per_stratum[key])) for key in keys},
            }  # fmt: skip
        base = np.concatenate([entry["values"]["base"][key] for key in keys])
        entry["zero_share"] = float(np.mean(base == 0))
    ranked = sorted(teams, key=lambda name: -teams[name]["scores"][SCORED[0]]["iqm"])
    for better, worse in itertools.pairwise(ranked):
        x, y = ([teams[name]["values"][SCORED[0]][key] for key in keys] for name in (better, worse))
        point, low, high = probability_of_improvement_ci(x, y, resamples=2000)
        teams[better]["beats_next"] = {"next": worse, "p": point, "low": low, "high": high}
    return {
        "env": first["config"]["env"],
        "roles": {role: first["roles"][role] for role in SCORED},
        "strata": keys,
        "seed": first["config"]["seed"],
        "episodes": cut or first["config"]["episodes"],
        "options": {
            key: next(s for s in first["strata"] if s["key"] == key)["options"] for key in keys
        },
        "ranking": ranked,
        "teams": teams,
    }


def _usage(teams: list[Mapping[str, Any]], cut: int | None, played: int) -> dict[str, Any]:
    """The model's turns summed over strata (each played `played` episodes); rates weighted by
    turns, over all episodes. Tokens and cost count the first `cut` episodes (None: all) from
    the report's per-episode usage; where it has none (reports written before it) and the cut
    drops episodes, they are unknown (None), not the whole run's."""
    usages = [team["usage"] for team in teams if team.get("usage")]
    requests = sum(u["requests"] for u in usages)
    cut_off = [u.get("cut_off") for u in usages]
    kept: dict[str, Any] = {"prompt_tokens": 0, "completion_tokens": 0, "cost": 0.0}
    for team in teams:
        usage, per_episode = team.get("usage") or {}, team.get("episode_usage")
        if per_episode is not None:
            for name in kept:
                kept[name] += sum(per_episode[name][:cut])
        elif cut is None or cut >= played:
            kept["prompt_tokens"] += usage.get("prompt_tokens", 0)
            kept["completion_tokens"] += usage.get("completion_tokens", 0)
            kept["cost"] += usage.get("cost") or 0.0
        else:  # the whole run's count would charge the episodes cut away
            kept = dict.fromkeys(kept)
            break
    return {
        "requests": requests,
        "parse_rate": sum(u["parse_rate"] * u["requests"] for u in usages) / max(requests, 1),
        "cut_off_rate": None if None in cut_off else sum(cut_off) / max(requests, 1),
        **kept,
    }


def leaderboard_rows(board: Mapping[str, Any]) -> tuple[list[str], list[list[str]]]:
    """The table's header and rows, best first (the Markdown and the page share them)."""
    roles = board["roles"]
    header = ["rank", "team", *(f"{SCORED[0]} {key}" for key in board["strata"]),
              f"{SCORED[0]} IQM [95%]", "P(beats next) [95%]", f"base IQM ({roles['base']})",
              "zero base", "parse rate", "cut-off rate", "tokens in / out", "cost"]  # fmt: skip
    rows = []
    for rank, name in enumerate(board["ranking"], 1):
        team = board["teams"][name]
        score = team["scores"][SCORED[0]]
        beats, usage = team.get("beats_next"), team.get("usage")
        rows.append([
            str(rank), name,
            *(number(score["by_stratum"][key]) for key in board["strata"]),
            f"{number(score['iqm'])} [{number(score['low'])}, {number(score['high'])}]",
            "-" if beats is None else
            f"{number(beats['p'], digits=2)} [{number(beats['low'], digits=2)}, "
            f"{number(beats['high'], digits=2)}]",
            number(team["scores"]["base"]["iqm"]),
            f"{team['zero_share']:.0%}",
            "-" if usage is None else number(usage["parse_rate"]),
            "-" if usage is None or usage["cut_off_rate"] is None
            else number(usage["cut_off_rate"]),
            "-" if usage is None or usage["prompt_tokens"] is None
            else f"{usage['prompt_tokens']:,} / {usage['completion_tokens']:,}",
            "-" if usage is None or usage["cost"] is None else f"{usage['cost']:.4f}",
        ])  # fmt: skip
    return header, rows
