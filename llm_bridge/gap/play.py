"""Each team of a stratum played by the evaluation machinery: a team with model seats by the
LLM bridge (`llm_bridge.sweep`, a run folder that resumes), any other team in the compiled
path (`alemlite.evaluation`, a report as `alemlite eval` writes it); all on the same seeds."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from alemlite.core.spec import EnvSpec
from alemlite.evaluation import evaluate
from alemlite.report import write_report
from baselines.seats import team_policy, team_seats
from llm_bridge.gap.config import GapConfig, Stratum
from llm_bridge.gap.plan import Team
from llm_bridge.sweep import run_sweep


@dataclass
class TeamResult:
    """A team's per-episode metrics, where they are written, its wall time and LLM usage."""

    team: Team
    episodes: dict[str, np.ndarray]
    result: Path
    wall_s: float
    usage: dict[str, Any] | None


def play_team(
    env_spec: EnvSpec, stratum: Stratum, team: Team, config: GapConfig, runs: Path
) -> TeamResult:
    """Play `team` on the stratum's `config.episodes` episodes from `config.seed`; its files go
    to `runs/TEAM/` (model seats) or `runs/TEAM.json`."""
    started = time.perf_counter()
    if team.has_llm:
        folder = runs / team.folder
        report = run_sweep(
            env_spec, stratum.options, team.seats, config.llm, config.prompt, config.episodes,
            config.seed, folder,
        )["base"]  # fmt: skip
        episodes = {name: np.asarray(values) for name, values in report["episodes"].items()}
        return TeamResult(
            team, episodes, folder / "summary.json", time.perf_counter() - started, report["usage"]
        )
    env = env_spec.build(stratum.options)
    seats = team_seats(team.seats, env.num_agents)
    episodes = evaluate(
        env, team_policy(env, seats), env.default_params, config.episodes, config.seed
    )
    # The config block of `alemlite eval`, so that `alemlite compare` reads the report.
    settings = {
        "env": env_spec.name,
        "options": dataclasses.asdict(stratum.options),
        "team": [f"{seat.kind}:{seat.name}" for seat in seats],
        "episodes": config.episodes,
        "seed": config.seed,
    }
    path = runs / f"{team.folder}.json"
    write_report(path, settings, episodes)
    return TeamResult(team, episodes, path, time.perf_counter() - started, None)
