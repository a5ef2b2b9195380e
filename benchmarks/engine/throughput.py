"""The throughput engine: environment and agent steps per second over batch sizes, with the
environment's peers timed beside it.

Times `VecEnv` with auto-reset (from a pool of pre-generated start states where the spec
says resets are expensive) at num_envs = 2**min .. 2**max, driven by hashed actions of
(step, env, agent) (the environment alone) and by a random policy. Options add:
- the peers of `benchmarks/peers/table.py`, timed beside alemlite and alternating with it
  (`side_by_side`): over `peer_envs` until a larger batch stops helping a peer
  (`peer_stop_gain`), `ratio_rounds` times over at `ratio_envs`;
- `compile_runs` fresh compiles (no compilation cache) of the program timed at `ratio_envs`;
- `step` alone (no reset) at each of `map_size_check`, to show that its cost ignores the map.

Every command of the engine writes the sections of `measure` and draws `plot`: `alemlite
bench --env NAME` (`alemlite_app/bench.py`) and the published benchmarks
(`benchmarks/dining_throughput.py`, `benchmarks/craft_throughput.py`), which are presets.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np
from tqdm import tqdm

import alemlite
from alemlite.core.environment import Environment
from alemlite.core.errors import ConfigError, require, require_at_least
from alemlite.core.spec import EnvOptions
from benchmarks.engine.side_by_side import ratios, side_by_side
from benchmarks.harness import (
    ResultsFolder,
    hash_actions,
    time_compiled,
    vec_rollout,
    write_results,
)
from benchmarks.peers.table import PEERS, Peer

# A random policy over the legal actions; the published benchmarks time a uniform one over
# every action id, as they did when first published.
LEGAL_POLICIES = ("hashed", "legal_random")
UNIFORM_POLICIES = ("hashed", "uniform_random")
PLOT_LABELS = {
    "hashed": "env only (hashed actions)",
    "uniform_random": "random policy",
    "legal_random": "random legal actions",
}


@dataclass(frozen=True)
class Subject:
    """One setting of one environment that a throughput run times."""

    env: str
    options: EnvOptions
    policies: tuple[str, ...] = LEGAL_POLICIES
    """how the sweep's actions are chosen (`harness.ACTIONS`); peers are timed beside hashed"""
    pythons: Mapping[str, Path] = field(default_factory=dict)
    """interpreters of the peers that run in their own virtual environment, by peer name"""


@dataclass(frozen=True)
class ThroughputOptions(ResultsFolder):
    """The throughput engine's options; a command names what it times in `subjects`."""

    min_log2_envs: int = 0
    max_log2_envs: int = 12
    """sweep num_envs = 2**min .. 2**max"""
    steps_per_call: int = 64
    repeats: int = 5
    pool_size: int = 64
    """pre-generated start states (capped at num_envs), where the environment's resets are
    expensive (its spec's pooled_resets)"""
    refresh_per_step: int = 1
    peer_envs: tuple[int, ...] = (64,)
    """batch sizes at which batched peers are timed, in this order, alternating with alemlite"""
    peer_steps: int = 20_000
    """steps per timed call of a peer that plays one environment at a time"""
    ratio_envs: int = 64
    """the batch of the headline ratios (the peers' own benchmark batch); always timed"""
    ratio_rounds: int = 1
    """rounds of alemlite-then-peers at `ratio_envs`; the headline ratio is their median"""
    peer_stop_gain: float = 1.0
    """past `ratio_envs`, a peer stops at the first batch where none of its modes gained this
    factor over its best so far (1: where a larger batch is slower)"""
    compile_runs: int = 0
    """fresh compiles (no cache) of the program timed at `ratio_envs` (0: skip)"""
    map_size_check: tuple[int, ...] = ()
    """map sizes at which `step` alone (no reset) is timed, to show it ignores the map"""
    map_size_check_envs: int = 512

    def subjects(self) -> dict[str, Subject]:
        """What the command times, by the label its plot gives it."""
        raise NotImplementedError

    def __post_init__(self) -> None:
        require_at_least(
            0,
            min_log2_envs=self.min_log2_envs,
            refresh_per_step=self.refresh_per_step,
            compile_runs=self.compile_runs,
        )
        require_at_least(self.min_log2_envs, max_log2_envs=self.max_log2_envs)
        require_at_least(
            1,
            steps_per_call=self.steps_per_call,
            repeats=self.repeats,
            pool_size=self.pool_size,
            peer_envs=self.peer_envs,
            peer_steps=self.peer_steps,
            ratio_envs=self.ratio_envs,
            ratio_rounds=self.ratio_rounds,
            map_size_check_envs=self.map_size_check_envs,
        )
        require_at_least(1.0, peer_stop_gain=self.peer_stop_gain)
        for subject in self.subjects().values():
            for map_size in self.map_size_check:
                _options_at(subject, map_size, self.map_size_check)

    def sizes(self) -> list[int]:
        return [2**power for power in range(self.min_log2_envs, self.max_log2_envs + 1)]

    def record(self, out: Path) -> dict[str, Any]:
        """The options as the results JSON keeps them (paths as text)."""
        plain = {name: str(v) if isinstance(v, Path) else v for name, v in asdict(self).items()}
        return {**plain, "out": str(out)}


def _options_at(subject: Subject, map_size: int, check: tuple[int, ...]) -> EnvOptions:
    require(
        hasattr(subject.options, "map_size"),
        f"map_size_check={check}: env={subject.env} has no map_size option",
    )
    try:
        return dataclasses.replace(subject.options, map_size=map_size)
    except ConfigError as error:
        raise ConfigError(f"map_size_check={check}: {error}") from None


def pool_for(env_name: str, num_envs: int, pool_size: int) -> int:
    """Start states kept for auto-reset: none where resets are cheap."""
    return min(pool_size, num_envs) if alemlite.spec(env_name).pooled_resets else 0


def time_batch(
    env: Environment,
    num_envs: int,
    steps: int,
    repeats: int,
    actions: str,
    pool_size: int = 0,
    refresh_per_step: int = 1,
) -> dict[str, Any]:
    """One point of a sweep: `num_envs` environments playing `steps` steps per timed call."""
    rollout = vec_rollout(env, num_envs, steps, actions, pool_size, refresh_per_step)
    timing = time_compiled(rollout, jax.random.PRNGKey(0), repeats=repeats)
    env_steps = num_envs * steps / timing.median_s
    return {
        "num_envs": num_envs,
        "policy": actions,
        "env_steps_per_s": env_steps,
        "agent_steps_per_s": env_steps * env.num_agents,
        "env_steps_per_s_min": num_envs * steps / timing.max_s,
        "env_steps_per_s_max": num_envs * steps / timing.min_s,
        "timing": asdict(timing),
    }


def time_alemlite(
    env: Environment, subject: Subject, num_envs: int, policy: str, config: ThroughputOptions
) -> dict[str, Any]:
    """alemlite at one batch size, with the subject's pool of start states."""
    pool = pool_for(subject.env, num_envs, config.pool_size)
    return time_batch(
        env, num_envs, config.steps_per_call, config.repeats, policy, pool,
        config.refresh_per_step,
    )  # fmt: skip


def state_bytes(env: Environment) -> int:
    """Bytes one environment's state holds."""
    state = jax.eval_shape(env.generate, jax.random.PRNGKey(0), env.default_params)
    return int(sum(np.dtype(leaf.dtype).itemsize * leaf.size for leaf in jax.tree.leaves(state)))


def time_step_only(
    subject: Subject, map_size: int, config: ThroughputOptions, with_observation: bool
) -> dict[str, Any]:
    """`step` without any reset, from pre-generated states: its cost should not grow with the
    map. Like the sweep and the peers, the plain figure leaves the observation unused (XLA
    then never builds it); `with_observation` consumes all of it, as a learner does."""
    env = alemlite.spec(subject.env).build(_options_at(subject, map_size, config.map_size_check))
    params, num_envs = env.default_params, config.map_size_check_envs
    reset = jax.jit(jax.vmap(env.reset, in_axes=(0, None)))
    _, start = reset(jax.random.split(jax.random.PRNGKey(0), num_envs), params)
    step = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    def run(state, key):
        def one_step(carry, t):
            state, key = carry
            key, step_key = jax.random.split(key)
            actions = hash_actions(t, num_envs, env.num_agents, env.num_actions)
            obs, state, reward, _, _ = step(
                jax.random.split(step_key, num_envs), state, actions, params
            )
            return (state, key), reward.sum() + (obs.sum() if with_observation else 0.0)

        _, totals = jax.lax.scan(one_step, (state, key), jnp.arange(config.steps_per_call))
        return totals.sum()

    timing = time_compiled(run, start, jax.random.PRNGKey(1), repeats=config.repeats)
    return {
        "map_size": map_size,
        "num_envs": num_envs,
        "with_observation": with_observation,
        "env_steps_per_s": num_envs * config.steps_per_call / timing.median_s,
        "timing": asdict(timing),
    }


def time_compiles(env: Environment, subject: Subject, config: ThroughputOptions) -> dict:
    """Seconds of `compile_runs` fresh compiles of the program timed at `ratio_envs`: each
    traces a new function and compiles it with JAX's persistent cache off, so none reuses an
    earlier compile."""
    if not config.compile_runs:
        return {}
    pool = pool_for(subject.env, config.ratio_envs, config.pool_size)
    runs = []
    enabled = jax.config.jax_enable_compilation_cache
    jax.config.update("jax_enable_compilation_cache", False)
    try:
        for _ in tqdm(range(config.compile_runs), desc="fresh compiles"):
            rollout = vec_rollout(
                env, config.ratio_envs, config.steps_per_call, "hashed", pool,
                config.refresh_per_step,
            )  # fmt: skip
            start = time.perf_counter()
            jax.jit(rollout).lower(jax.random.PRNGKey(0)).compile()
            runs.append(time.perf_counter() - start)
    finally:
        jax.config.update("jax_enable_compilation_cache", enabled)
    return {
        "num_envs": config.ratio_envs,
        "runs_s": runs,
        "median_s": float(np.median(runs)),
        "max_s": max(runs),
    }


def available_peers(subject: Subject) -> list[tuple[Peer, Path | None]]:
    """The peers to time: in-process ones always, the others where their interpreter is."""
    available = []
    for peer in PEERS.get(subject.env, ()):
        python = subject.pythons.get(peer.name)
        if not peer.setup:
            available.append((peer, None))
        elif python is not None and Path(python).exists():
            available.append((peer, Path(python)))
        else:
            where = "not given" if python is None else f"missing at {python}"
            print(
                f"{peer.name} peer {where}: not timed. Create it with:\n  {peer.setup}\n"
                "and point the benchmark at <venv>/bin/python"
            )
    return available


def measure(config: ThroughputOptions, subject: Subject) -> dict[str, Any]:
    """Every figure of one subject, in the sections each throughput JSON holds."""
    env = alemlite.spec(subject.env).build(subject.options)
    sweep = [
        time_alemlite(env, subject, num_envs, policy, config)
        for num_envs in tqdm(config.sizes(), desc=f"{subject.env} sweep")
        for policy in subject.policies
    ]
    step_only = [
        time_step_only(subject, size, config, with_observation)
        for size in config.map_size_check
        for with_observation in (False, True)
    ]
    for row in step_only:
        print(
            f"step only, {row['map_size']:>3}x{row['map_size']:<3} map"
            f"{', whole observation' if row['with_observation'] else ''}: "
            f"{row['env_steps_per_s']:.3e} env steps/s at {row['num_envs']} envs"
        )
    peers = side_by_side(
        lambda num_envs: time_alemlite(env, subject, num_envs, "hashed", config),
        subject.options,
        config,
        available_peers(subject),
    )
    compile_runs = time_compiles(env, subject, config)
    best = {}
    for policy in subject.policies:
        top = max((r for r in sweep if r["policy"] == policy), key=lambda r: r["env_steps_per_s"])
        best[policy] = {
            key: top[key] for key in ("num_envs", "env_steps_per_s", "agent_steps_per_s")
        }
    compile_s = [row["timing"]["compile_s"] for row in sweep]
    beside = [r for r in sweep if r["policy"] == "hashed"]
    beside += [r for r in peers if r.get("peer") == "alemlite"]
    return {
        "state_bytes_per_env": state_bytes(env),
        "compile_s": {
            "min": min(compile_s),
            "median": float(np.median(compile_s)),
            "max": max(compile_s),
        },
        "compile_runs": compile_runs,
        "sweep": sweep,
        "step_only_by_map_size": step_only,
        "peers": peers,
        "ratios": ratios(beside, peers, config.ratio_envs),
        "best": best,
    }


def summarize(measured: Mapping[str, Any], config: ThroughputOptions) -> None:
    """Print a run's headline figures."""
    for policy, entry in measured["best"].items():
        print(
            f"{PLOT_LABELS[policy]:>26}: {entry['env_steps_per_s']:.3e} env steps/s, "
            f"{entry['agent_steps_per_s']:.3e} agent steps/s at {entry['num_envs']} envs"
        )
    for name, entry in measured["ratios"].items():
        at, top = entry["at_ratio_envs"], entry["at_best"]
        print(
            f"{name:>22}: {at['ratio'] if at else float('nan'):.3g}x at {config.ratio_envs} envs,"
            f" {top['ratio']:.3g}x at each side's best ({top['alemlite_num_envs']} vs "
            f"{top['peer_num_envs']} envs)"
        )
    compiles = measured["compile_runs"].get("runs_s", [])
    print(
        f"state {measured['state_bytes_per_env']} bytes per env; compile "
        f"{measured['compile_s']['median']:.1f} s (median over the sweep)"
        + (f"; {len(compiles)} fresh compiles at {config.ratio_envs} envs: " if compiles else "")
        + ", ".join(f"{value:.1f} s" for value in compiles)
    )


def run_one(benchmark: str, config: ThroughputOptions, head: Mapping[str, Any]) -> dict[str, Any]:
    """Measure a command's one subject; write `benchmark`'s JSON (`head` first, then the
    options and every section of `measure`) and its plot."""
    out, provenance = config.begin(benchmark)
    ((label, subject),) = config.subjects().items()
    measured = measure(config, subject)
    payload = {**head, "config": config.record(out), **measured}
    path = write_results(benchmark, payload, out, provenance)
    title = f"{subject.env} throughput, {subject.options.describe()}, auto-reset"
    plot_path = plot({label: measured}, path.with_suffix(".png"), title)
    summarize(measured, config)
    print(f"wrote {path} and {plot_path}")
    return payload


def plot(
    runs: Mapping[str, Mapping[str, Any]], path: Path, title: str, unit: str = "agent"
) -> Path:
    """Each run's sweep, a curve per policy, and its peers dotted (the median of the rounds
    at a batch; a level line for a peer timed at one batch only)."""
    figure, axis = plt.subplots(figsize=(7, 4.5))
    for label, run in runs.items():
        policies = list(dict.fromkeys(row["policy"] for row in run["sweep"]))
        for policy, style in zip(policies, ("-", "--", "-."), strict=False):
            rows = [r for r in run["sweep"] if r["policy"] == policy]
            line = axis.plot(
                [r["num_envs"] for r in rows],
                [r["agent_steps_per_s"] for r in rows],
                style,
                marker="o",
                markersize=3,
                label=f"{label}, {PLOT_LABELS[policy]}",
            )
        for peer, mode in sorted({(r["peer"], r["mode"]) for r in run["peers"] if "mode" in r}):
            rows = [r for r in run["peers"] if (r.get("peer"), r.get("mode")) == (peer, mode)]
            sizes = sorted({r["num_envs"] for r in rows})
            rates = [
                np.median([r["agent_steps_per_s"] for r in rows if r["num_envs"] == n])
                for n in sizes
            ]
            name = f"{label}: {peer} {mode}" if len(runs) > 1 else f"{peer} {mode}"
            if len(sizes) == 1 and peer != "alemlite":
                axis.axhline(rates[0], color=line[0].get_color(), linestyle=":", label=name)
            else:
                axis.plot(sizes, rates, ":", marker="s", markersize=4, label=name)
    axis.set_xscale("log", base=2)
    axis.set_yscale("log")
    axis.set_xlabel("parallel environments")
    axis.set_ylabel(f"{unit} steps / s")
    axis.set_title(title)
    axis.legend(fontsize=7)
    axis.grid(True, which="both", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path
