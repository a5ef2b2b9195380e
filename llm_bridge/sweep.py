"""A team with language models in it, evaluated on any environment whose spec has prompts:
one run, or one per named ablation of the prompt switches (`--ablation`), each in its own
folder, with their means side by side at the end."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from alemlite.core.errors import require
from alemlite.core.prompting import PromptBuilder
from alemlite.core.spec import EnvOptions, EnvSpec
from llm_bridge.agents import build_team
from llm_bridge.options import LLMOptions, PromptSwitches
from llm_bridge.runner import InvalidRun, RunConfig, run_evaluation
from llm_bridge.shards import Shard


def env_with_prompts(env_spec: EnvSpec, options: EnvOptions) -> tuple[Any, PromptBuilder]:
    """The environment of `options` and its prompt builder; refuses, in one line, an
    environment whose spec has none (language models cannot play it)."""
    require(
        env_spec.prompts is not None,
        f"env={env_spec.name} has no prompt builder in its spec, so language models cannot "
        "play it; give --team seats without llm",
    )
    env = env_spec.build(options)
    return env, env_spec.prompts(env)


def run_sweep(
    env_spec: EnvSpec,
    options: EnvOptions,
    team: Sequence[str],
    llm: LLMOptions,
    prompt: PromptSwitches,
    episodes: int,
    seed: int,
    out: Path,
    shard: Shard | None = None,
) -> dict[str, dict[str, Any]]:
    """Evaluate `team` (the specs of `--team`) once per ablation (`base` alone without a
    sweep); returns each run's report by ablation. A sweep writes run `NAME` into `out/NAME`.
    A `shard` plays only its block of the `episodes` (`llm_bridge.shards`)."""
    env, builder = env_with_prompts(env_spec, options)
    played = range(episodes) if shard is None else shard.episodes(episodes)
    sweep = prompt.ablation or ("base",)
    reports = {}
    for ablation in sweep:
        agents = build_team(team, env, llm.make_backend)
        run_config = RunConfig(
            episodes=len(played),
            seed=seed,
            first_episode=played.start,
            out=out / ablation if prompt.ablation else out,
            resume=llm.resume,
            progress=llm.progress,
            input_price_per_mtok=llm.input_price_per_mtok,
            output_price_per_mtok=llm.output_price_per_mtok,
            max_failed_fraction=llm.max_failed_fraction,
            constrained=llm.constrained,
            decoding=llm.decoding,
            observation=prompt.observation,
            system_prompt=prompt.system_prompt_text(),
            few_shot=prompt.few_shot_messages(),
        )
        describe = {
            "options": dataclasses.asdict(options),
            **llm.describe(),
            **prompt.describe(),
            "ablation": ablation,
            **({} if shard is None else {"shard": shard.describe(episodes)}),
        }
        prompt_options = prompt.prompt_options(env_spec.prompt_defaults, ablation)
        try:
            report = run_evaluation(
                env, builder, agents, prompt_options, run_config, describe=describe,
                render_agent=env_spec.render_agent_rgb,
            )  # fmt: skip
        except InvalidRun as error:
            print(error.report["table"])  # what was counted; the command then fails in one line
            raise
        print(report["table"])
        print(f"\nwrote {run_config.out / 'summary.json'}\n")
        reports[ablation] = report
    if len(reports) > 1:
        print(format_sweep(reports))
    return reports


def format_sweep(reports: dict[str, dict]) -> str:
    """Metric means side by side, one column per ablation."""
    names = list(reports)
    metrics = list(next(iter(reports.values()))["summary"])
    rows = [("metric", *names)]
    rows += [
        (metric, *(f"{reports[name]['summary'][metric]['mean']:.3f}" for name in names))
        for metric in metrics
    ]
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)
