"""`alemlite bench policies --env NAME`: the environment's scripted policies on the seed protocol.

Plays every scripted policy of the environment's spec (or those named with `--policies`)
on the same episodes and writes the return and the spec's headline metrics with 95%
intervals (Student-t; Wilson for 0/1 outcomes) to `reference_policies_<env>_<platform>.json`,
printing them as a table: the anchors that trained agents are read against.

    alemlite bench policies --env dining --num-agents 10 --episodes 300
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from tqdm import tqdm

import alemlite
from alemlite.core.errors import require, require_at_least
from alemlite.core.registry import DEFAULT_ENV, resolve_options
from alemlite.core.spec import EnvOptions, EnvSpec
from alemlite.evaluation import evaluate
from alemlite.stats import summarise
from benchmarks.harness import ResultsFolder, format_interval, write_results


@dataclass(frozen=True)
class PoliciesConfig(ResultsFolder):
    """Evaluate an environment's scripted policies on the same episodes (table and JSON)."""

    env: str = DEFAULT_ENV
    """the environment (alemlite.registered_environments())"""
    options: EnvOptions | None = None
    """the environment's options; `--env NAME --help` lists them"""
    policies: tuple[str, ...] = ()
    """the scripted policies to play; empty: every one the environment has"""
    episodes: int = 32
    seed: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", resolve_options(self.env, self.options))
        require_at_least(1, episodes=self.episodes)
        known = alemlite.spec(self.env).policies
        for name in self.policies:
            require(
                name in known,
                f"policies={name!r} is not a {self.env} policy; choose from: "
                + ", ".join(sorted(known)),
            )

    def chosen(self) -> tuple[str, ...]:
        return self.policies or tuple(sorted(alemlite.spec(self.env).policies))


def reported(env_spec: EnvSpec) -> tuple[str, ...]:
    """The metrics a policy table shows: the return, then the spec's headline metrics."""
    return ("episode_return", *(name for name in env_spec.metrics if name != "episode_return"))


def policy_episodes(
    env_spec: EnvSpec, options: EnvOptions, name: str, episodes: int, seed: int
) -> dict[str, np.ndarray]:
    """Per-episode metrics of the scripted policy `name` on the seed protocol."""
    env = env_spec.build(options)
    return evaluate(env, env_spec.policy(name, env), env.default_params, episodes, seed)


def run(config: PoliciesConfig) -> dict[str, Any]:
    """Evaluate the policies, print the table and write the JSON; returns the payload."""
    out, provenance = config.begin(f"reference_policies_{config.env}")
    env_spec = alemlite.spec(config.env)
    metrics = reported(env_spec)
    policies = {}
    for name in tqdm(config.chosen(), desc=f"{config.env} policies"):
        episodes = policy_episodes(env_spec, config.options, name, config.episodes, config.seed)
        policies[name] = summarise({metric: episodes[metric] for metric in metrics})
    payload = {
        "env": config.env,
        "options": dataclasses.asdict(config.options),
        "config": {**asdict(config), "out": str(out)},
        "metrics": list(metrics),
        "policies": policies,
    }
    path = write_results(f"reference_policies_{config.env}", payload, out, provenance)
    print(f"{config.env}, {config.options.describe()}, {config.episodes} episodes:")
    print(markdown_table(payload))
    print(f"wrote {path}")
    return payload


def markdown_table(results: dict[str, Any]) -> str:
    """One row per policy, highest mean return first: each metric's mean and 95% interval."""
    metrics = results["metrics"]
    lines = ["| policy | " + " | ".join(metrics) + " |", "|" + " --- |" * (len(metrics) + 1)]
    by_return = sorted(
        results["policies"].items(), key=lambda item: -item[1]["episode_return"]["mean"]
    )
    for name, summary in by_return:
        cells = [format_interval(summary[metric], 3) for metric in metrics]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
