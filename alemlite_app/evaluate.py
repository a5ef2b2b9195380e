"""`alemlite eval` and `alemlite eval-llm`: one config, any registered environment, any team.

A team is one spec per seat (or one for every seat, `baselines.seats`): scripted policies
of the environment's spec, trained checkpoints and language models, mixed at will. A team
without an `llm` seat is evaluated in the compiled path (`alemlite.evaluation.evaluate`)
and written as a report (`alemlite.report`); a team with one runs the LLM bridge
(`llm_bridge.sweep`), which writes a run folder (transcript and summary). Both follow the
seed protocol: episode i plays seed + i, so their numbers compare (`alemlite compare`).
With `--shard I/N` either plays only block I of N of the episodes, on their own seeds, and
`alemlite merge` joins the shards into the unsharded run's result (`llm_bridge.shards`).

The two commands differ only in the team they play when `--team` is not given:
`eval` the environment's default policy, `eval-llm` the model in every seat.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import tyro

import alemlite
from alemlite.core.errors import require
from alemlite.core.registry import DEFAULT_ENV, resolve_options
from alemlite.core.spec import EnvOptions, EnvSpec
from alemlite.evaluation import check_episode_seeds
from alemlite.evaluation import evaluate as evaluate_policy
from alemlite.outputs import writable_folder
from alemlite.report import format_table, report_path, write_report
from baselines.seats import Seat, parse_seat, resolve_best, team_policy, team_seats
from llm_bridge.gap.config import GapConfig
from llm_bridge.leaderboard import LeaderboardConfig
from llm_bridge.options import LLMOptions, PromptSwitches
from llm_bridge.shards import Shard, parse_shard

REPORTS = Path("runs/eval")
"""Where a team without language models writes its report unless `--out` says otherwise."""
LLM_RUN = Path("runs/llm")
"""The run folder of a team with language models unless `--out` says otherwise."""


@dataclass(frozen=True)
class EvalConfig:
    """Evaluate a team on the fixed seed protocol (episode i plays seed + i) and print its
    metrics with 95% confidence intervals."""

    env: str = DEFAULT_ENV
    """the environment (alemlite.registered_environments())"""
    options: EnvOptions | None = None
    """the environment's options; `--env NAME --help` lists them"""
    team: tuple[str, ...] = ()
    """one spec per seat, or one for every seat: NAME or policy:NAME (a scripted policy),
    checkpoint:NAME (a trained agent; checkpoint:best: the shipped reference closest to these
    options), llm, llm:MODEL or llm:MODEL@URL (a language model);
    default: `eval` plays the environment's default policy, `eval-llm` llm"""
    episodes: int = 32
    seed: int = 0
    """base seed: episode i uses seed + i"""
    out: Path | None = None
    """a team without llm seats: the folder of its report, named by its settings and a
    fingerprint of all of them (default runs/eval); with llm seats: the run folder of its
    transcript and summary, one subfolder per ablation (default runs/llm)"""
    llm: Annotated[LLMOptions, tyro.conf.OmitArgPrefixes] = field(default_factory=LLMOptions)
    """how language models are asked (llm seats only)"""
    prompt: Annotated[PromptSwitches, tyro.conf.OmitArgPrefixes] = field(
        default_factory=PromptSwitches
    )
    """what language models are shown (llm seats only)"""
    shard: str | None = None
    """I/N: play only block I (1 to N) of N equal blocks of the episodes, each on its own seed
    as in the whole run, into this run's --out; `alemlite merge` joins the N shards"""

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", resolve_options(self.env, self.options))
        check_episode_seeds(self.seed, self.episodes)
        for spec in self.team:
            parse_seat(spec)
        object.__setattr__(self, "team", resolve_best(self.team, self.env, self.options))
        if self.shard is not None:
            parse_shard(self.shard, self.episodes)
        require(
            self.out is None or not self.out.is_file(),
            f"out={self.out} is a file; give a folder",
        )


def evaluate(config: EvalConfig) -> dict[str, Any]:
    """Evaluate a team (default: the environment's default policy) on the seed protocol and
    print its metrics with 95% confidence intervals; with llm seats, see `alemlite eval-llm`."""
    return _evaluate(config, alemlite.spec(config.env).default_policy)


def evaluate_llm(config: EvalConfig) -> dict[str, Any]:
    """Evaluate language models as agents (default team: the --model in every seat), mixed
    with scripted or trained seats at will; with --ablation, one run per named ablation."""
    return _evaluate(config, "llm")


def gap(config: GapConfig) -> dict[str, Any]:
    """The coordination-gap report: a model's team, the shipped MARL agents and the scripted
    teams on the same seeds, difficulties and team sizes, and mixed teams; base-task and
    coordination scores and their gaps with stratified bootstrap intervals, as JSON, Markdown
    and plots in --out."""
    from benchmarks.provenance import begin_run
    from llm_bridge.gap.main import run_gap

    # The report records the commit, command and machine; published folders need --publish.
    provenance = begin_run([config.out_dir], config.allow_dirty, config.publish)
    return run_gap(config, provenance.describe)


def leaderboard(config: LeaderboardConfig) -> Path:
    """Many models' gap reports in one table, plot and page, with the MARL and scripted
    references; returns the page's path."""
    from benchmarks.provenance import begin_run
    from llm_bridge.leaderboard import build_leaderboard
    from llm_bridge.viewer.leaderboard import write_leaderboard

    provenance = begin_run([config.out], config.allow_dirty, config.publish)
    board = build_leaderboard(config)
    board["provenance"] = provenance.describe()
    return write_leaderboard(board, config.out)


def _evaluate(config: EvalConfig, default_team: str) -> dict[str, Any]:
    """The summary of a compiled evaluation, or the LLM runs' reports by ablation."""
    env_spec = alemlite.spec(config.env)
    team = config.team or (default_team,)
    if any(parse_seat(spec).kind == "llm" for spec in team):
        from llm_bridge.sweep import run_sweep

        out = LLM_RUN if config.out is None else config.out
        return run_sweep(
            env_spec, config.options, team, config.llm, config.prompt, config.episodes,
            config.seed, out, _shard(config),
        )  # fmt: skip
    return _compiled(config, env_spec, team)


def _compiled(config: EvalConfig, env_spec: EnvSpec, team: tuple[str, ...]) -> dict[str, Any]:
    """A team of scripted and trained seats, played inside one compiled program."""
    require(
        not config.prompt.ablation,
        f"ablation={' '.join(config.prompt.ablation)} sweeps prompt switches, which only llm "
        "seats read; add an llm seat to --team or drop --ablation",
    )
    out = writable_folder(REPORTS if config.out is None else config.out)  # before any episode
    env = env_spec.build(config.options)
    seats = team_seats(team, env.num_agents)
    shard = _shard(config)
    played = range(config.episodes) if shard is None else shard.episodes(config.episodes)
    episodes = evaluate_policy(
        env, team_policy(env, seats), env.default_params, len(played), config.seed + played.start
    )
    # The environment's headline metrics first, in its order.
    order = [name for name in env_spec.metrics if name in episodes]
    episodes = {name: episodes[name] for name in [*order, *(n for n in episodes if n not in order)]}
    settings = {
        "env": config.env,
        "options": dataclasses.asdict(config.options),
        "team": [f"{seat.kind}:{seat.name}" for seat in seats],
        "episodes": len(played),
        "seed": config.seed,
    }
    label = f"{config.env}_{config.options.label()}_{_team_label(seats)}"
    if shard is not None:  # the merged report takes the unsharded run's name and settings
        settings.update(first_episode=played.start, shard=shard.describe(config.episodes))
        label += f"_{shard.label}"
    path = report_path(out, label, settings)
    summary = write_report(path, settings, episodes)
    names = ", ".join(dict.fromkeys(seat.name for seat in seats))
    print(format_table(summary, f"{config.env} {config.options.describe()}, team={names}"))
    print(f"\nwrote {path}")
    return summary


def _shard(config: EvalConfig) -> Shard | None:
    return None if config.shard is None else parse_shard(config.shard, config.episodes)


def _team_label(seats: tuple[Seat, ...]) -> str:
    """The team for a file name: its distinct seats' names (a checkpoint's folder by its
    last part), in seat order; the report's fingerprint tells any two teams apart."""
    names = dict.fromkeys(Path(seat.name).name or seat.name for seat in seats)
    return re.sub(r"[^\w.+-]", "-", "+".join(names))[:80]
