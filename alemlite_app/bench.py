"""`alemlite bench [policies|prompts|training]`: the benchmark engine's commands for any
registered environment.

The measuring code is the benchmarks' (`benchmarks/engine/`), shared with the published
scripts in `benchmarks/`; this module holds each command's options (with `--env` and that
environment's own option flags), writes its JSON and prints its summary. `alemlite bench gpu`
and `alemlite study` call the benchmark programs that their published scripts
(`benchmarks/gpu_suite.py`, `benchmarks/coordination_study.py`) run, so they have no
command module here.

    alemlite bench --env dining --num-agents 10 --max-log2-envs 10
    alemlite bench --env craft --peers craftax=/tmp/peer-craftax/bin/python
    alemlite bench policies --env dining --num-agents 10 --episodes 300
    alemlite bench prompts --env craft --num-envs 256
    alemlite bench training --env craft --num-agents 3 --map-size 32 --log2-envs 4 6 8
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

import alemlite
from alemlite.core.errors import require, require_at_least
from alemlite.core.registry import DEFAULT_ENV, resolve_options
from alemlite.core.spec import EnvOptions
from alemlite.stats import summarise
from benchmarks.engine import prompts as prompt_engine
from benchmarks.engine import training as training_engine
from benchmarks.engine.policies import policy_episodes, reported
from benchmarks.engine.throughput import LEGAL_POLICIES, Subject, ThroughputOptions, run_one
from benchmarks.harness import ResultsFolder, format_interval, write_results
from benchmarks.peers.table import PEERS


@dataclass(frozen=True)
class ThroughputConfig(ThroughputOptions):
    """Measure an environment's steps per second over batch sizes (JSON and plot)."""

    env: str = DEFAULT_ENV
    """the environment (alemlite.registered_environments())"""
    options: EnvOptions | None = None
    """the environment's options; `--env NAME --help` lists them"""
    peers: tuple[str, ...] = ()
    """peers in their own virtual environments, NAME=PYTHON (benchmarks/peers/table.py);
    peers that run in this process are always timed"""

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", resolve_options(self.env, self.options))
        known = {peer.name: peer for peer in PEERS.get(self.env, ())}
        for entry in self.peers:
            name, _, python = entry.partition("=")
            require(
                name in known and bool(known[name].setup) and bool(python),
                f"peers={entry!r}: give NAME=PYTHON for a peer of {self.env} that runs in its "
                "own virtual environment; those: "
                + (", ".join(n for n, p in known.items() if p.setup) or "(none)"),
            )
        super().__post_init__()

    def peer_pythons(self) -> dict[str, Path]:
        return {name: Path(python) for name, _, python in (e.partition("=") for e in self.peers)}

    def subjects(self) -> dict[str, Subject]:
        return {"alemlite": Subject(self.env, self.options, LEGAL_POLICIES, self.peer_pythons())}


def throughput(config: ThroughputConfig) -> dict[str, Any]:
    """Sweep the environment's throughput over batch sizes; time its peers beside it."""
    env = alemlite.spec(config.env).build(config.options)
    head = {
        "env": config.env,
        "options": dataclasses.asdict(config.options),
        "num_agents": env.num_agents,
    }
    return run_one(f"throughput_{config.env}", config, head)


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


def policies(config: PoliciesConfig) -> dict[str, Any]:
    """Evaluate the policies, print the table and write the JSON; returns the payload."""
    out, provenance = config.begin(f"reference_policies_{config.env}")
    env_spec = alemlite.spec(config.env)
    metrics = reported(env_spec)
    played = {}
    for name in tqdm(config.chosen(), desc=f"{config.env} policies"):
        episodes = policy_episodes(env_spec, config.options, name, config.episodes, config.seed)
        played[name] = summarise({metric: episodes[metric] for metric in metrics})
    payload = {
        "env": config.env,
        "options": dataclasses.asdict(config.options),
        "config": {**asdict(config), "out": str(out)},
        "metrics": list(metrics),
        "policies": played,
    }
    path = write_results(f"reference_policies_{config.env}", payload, out, provenance)
    print(f"{config.env}, {config.options.describe()}, {config.episodes} episodes:")
    print(policies_table(payload))
    print(f"wrote {path}")
    return payload


def policies_table(results: dict[str, Any]) -> str:
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


@dataclass(frozen=True)
class PromptsConfig(ResultsFolder):
    """Measure prompts per second serialised from a batch of environments (JSON)."""

    env: str = DEFAULT_ENV
    """the environment (alemlite.registered_environments())"""
    options: EnvOptions | None = None
    """the environment's options; `--env NAME --help` lists them"""
    num_envs: int = 256
    """environments in the batch"""
    repeats: int = 10

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", resolve_options(self.env, self.options))
        require_at_least(1, num_envs=self.num_envs, repeats=self.repeats)
        require(
            alemlite.spec(self.env).prompts is not None,
            f"env={self.env!r} has no prompt builder (models cannot play it); choose another",
        )


def prompts(config: PromptsConfig) -> dict[str, Any]:
    """Time the environment's batched prompt builder, transfer included."""
    out, provenance = config.begin(f"prompt_throughput_{config.env}")
    env_spec = alemlite.spec(config.env)
    env = env_spec.build(config.options)
    switches = env_spec.prompt_defaults
    result = prompt_engine.measure(
        env, env_spec.prompts(env), switches, config.num_envs, config.repeats
    )
    payload = {
        "env": config.env,
        "options": dataclasses.asdict(config.options),
        "prompt_options": dataclasses.asdict(switches),
        "config": {**dataclasses.asdict(config), "out": str(out)},
        "results": [result],
    }
    path = write_results(f"prompt_throughput_{config.env}", payload, out, provenance)
    prompt_engine.print_result(result)
    print(f"wrote {path}")
    return payload


def training(config: training_engine.TrainingSpeedConfig) -> dict[str, Any]:
    """Time whole updates against the environment alone; write the JSON and the plot."""
    name = f"training_speed_{config.env}"
    out, provenance = config.begin(name)
    result = training_engine.measure(config)
    path = write_results(name, result, out, provenance)
    training_engine.plot(result, config.algorithms, path.with_suffix(".png"))
    print(f"wrote {path}")
    return result
