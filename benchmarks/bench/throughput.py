"""`alemlite bench --env NAME`: environment and agent steps per second over batch sizes.

Times `VecEnv` with auto-reset (from a pool of pre-generated start states where the spec
says resets are expensive) at num_envs = 2**min .. 2**max, driven by hashed actions of
(step, env, agent) (the environment alone) and by a random policy over the legal actions.
The environment's peers (`benchmarks/peers/table.py`) are timed in the same run and their
ratios printed. Writes `throughput_<env>_<platform>.json` and a plot beside it.

    alemlite bench --env dining --num-agents 10 --max-log2-envs 10
    alemlite bench --env craft --peers craftax=/tmp/peer-craftax/bin/python
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import jax
import matplotlib.pyplot as plt
import numpy as np
from tqdm import tqdm

import alemlite
from alemlite.core.environment import Environment
from alemlite.core.errors import require, require_at_least
from alemlite.core.registry import DEFAULT_ENV, resolve_options
from alemlite.core.spec import EnvOptions
from benchmarks.harness import ResultsFolder, time_compiled, vec_rollout, write_results
from benchmarks.peers.table import PEERS, Peer, PeerRun

POLICIES = ("hashed", "legal_random")
PLOT_LABELS = {
    "hashed": "env only (hashed actions)",
    "uniform_random": "random policy",
    "legal_random": "random legal actions",
}


@dataclass(frozen=True)
class ThroughputConfig(ResultsFolder):
    """Measure an environment's steps per second over batch sizes (JSON and plot)."""

    env: str = DEFAULT_ENV
    """the environment (alemlite.registered_environments())"""
    options: EnvOptions | None = None
    """the environment's options; `--env NAME --help` lists them"""
    min_log2_envs: int = 0
    max_log2_envs: int = 12
    """sweep num_envs = 2**min .. 2**max"""
    steps_per_call: int = 64
    repeats: int = 5
    pool_size: int = 64
    """pre-generated start states (capped at num_envs), where the environment's resets are
    expensive (its spec's pooled_resets)"""
    refresh_per_step: int = 1
    peers: tuple[str, ...] = ()
    """peers in their own virtual environments, NAME=PYTHON (benchmarks/peers/table.py);
    peers that run in this process are always timed"""
    peer_envs: tuple[int, ...] = (64,)
    """batch sizes at which batched peers are timed, alternating with alemlite"""
    peer_steps: int = 20_000
    """steps per timed call of a peer that plays one environment at a time"""

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", resolve_options(self.env, self.options))
        require_at_least(
            0, min_log2_envs=self.min_log2_envs, refresh_per_step=self.refresh_per_step
        )
        require_at_least(self.min_log2_envs, max_log2_envs=self.max_log2_envs)
        require_at_least(
            1,
            steps_per_call=self.steps_per_call,
            repeats=self.repeats,
            pool_size=self.pool_size,
            peer_envs=self.peer_envs,
            peer_steps=self.peer_steps,
        )
        known = {peer.name: peer for peer in PEERS.get(self.env, ())}
        for entry in self.peers:
            name, _, python = entry.partition("=")
            require(
                name in known and bool(known[name].setup) and bool(python),
                f"peers={entry!r}: give NAME=PYTHON for a peer of {self.env} that runs in its "
                "own virtual environment; those: "
                + (", ".join(n for n, p in known.items() if p.setup) or "(none)"),
            )

    def peer_pythons(self) -> dict[str, Path]:
        return {name: Path(python) for name, _, python in (e.partition("=") for e in self.peers)}


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


def state_bytes(env: Environment) -> int:
    """Bytes one environment's state holds."""
    state = jax.eval_shape(env.generate, jax.random.PRNGKey(0), env.default_params)
    return int(sum(np.dtype(leaf.dtype).itemsize * leaf.size for leaf in jax.tree.leaves(state)))


def _available(config: ThroughputConfig) -> list[tuple[Peer, Path | None]]:
    """The peers to time: in-process ones always, the others where their interpreter is."""
    pythons = config.peer_pythons()
    available = []
    for peer in PEERS.get(config.env, ()):
        python = pythons.get(peer.name)
        if not peer.setup:
            available.append((peer, None))
        elif python is not None and python.exists():
            available.append((peer, python))
        else:
            where = "not given" if python is None else f"missing at {python}"
            print(
                f"{peer.name} peer {where}: not timed. Create it with:\n  {peer.setup}\n"
                f"and pass --peers {peer.name}=<venv>/bin/python"
            )
    return available


def time_peers(config: ThroughputConfig, env: Environment, best: float) -> list[dict[str, Any]]:
    """Every available peer beside alemlite (hashed actions, the same batch, timed in turn)."""
    rows = []
    for peer, python in _available(config):
        for num_envs in config.peer_envs if peer.batched else (1,):
            steps = config.steps_per_call if peer.batched else config.peer_steps
            pool = pool_for(config.env, num_envs, config.pool_size)
            ours = time_batch(
                env, num_envs, config.steps_per_call, config.repeats, "hashed", pool,
                config.refresh_per_step,
            )  # fmt: skip
            run = PeerRun(num_envs, steps, config.repeats, python)
            for row in peer.time(config.options, run):
                if "env_steps_per_s" in row:
                    row["alemlite_env_steps_per_s"] = ours["env_steps_per_s"]
                    row["ratio"] = ours["env_steps_per_s"] / row["env_steps_per_s"]
                    row["ratio_to_best"] = best / row["env_steps_per_s"]
                    print(
                        f"{num_envs:>6} envs  {peer.name} {row['mode']:<12} "
                        f"{row['env_steps_per_s']:>12.0f} env steps/s  alemlite "
                        f"{ours['env_steps_per_s']:>12.0f}  ratio {row['ratio']:.3g}x "
                        f"({row['ratio_to_best']:.3g}x at alemlite's best batch)"
                    )
                rows.append(row)
    return rows


def run(config: ThroughputConfig) -> dict[str, Any]:
    """Sweep the environment's throughput over batch sizes; time its peers beside it."""
    out, provenance = config.begin(f"throughput_{config.env}")
    env = alemlite.spec(config.env).build(config.options)
    sizes = [2**power for power in range(config.min_log2_envs, config.max_log2_envs + 1)]
    sweep = [
        time_batch(
            env, num_envs, config.steps_per_call, config.repeats, policy,
            pool_for(config.env, num_envs, config.pool_size), config.refresh_per_step,
        )
        for num_envs in tqdm(sizes, desc=f"{config.env} sweep")
        for policy in POLICIES
    ]  # fmt: skip
    best = {
        policy: max((r for r in sweep if r["policy"] == policy), key=lambda r: r["env_steps_per_s"])
        for policy in POLICIES
    }
    peers = time_peers(config, env, best["hashed"]["env_steps_per_s"])
    compile_s = [row["timing"]["compile_s"] for row in sweep]
    payload = {
        "env": config.env,
        "options": dataclasses.asdict(config.options),
        "config": {**asdict(config), "out": str(out)},
        "num_agents": env.num_agents,
        "state_bytes_per_env": state_bytes(env),
        "compile_s": {
            "min": min(compile_s),
            "median": float(np.median(compile_s)),
            "max": max(compile_s),
        },
        "sweep": sweep,
        "peers": peers,
        "best": {
            policy: {key: row[key] for key in ("num_envs", "env_steps_per_s", "agent_steps_per_s")}
            for policy, row in best.items()
        },
    }
    path = write_results(f"throughput_{config.env}", payload, out, provenance)
    plot_path = plot(sweep, peers, path.with_suffix(".png"), config)
    for policy, entry in payload["best"].items():
        print(
            f"{PLOT_LABELS[policy]:>26}: {entry['env_steps_per_s']:.3e} env steps/s, "
            f"{entry['agent_steps_per_s']:.3e} agent steps/s at {entry['num_envs']} envs"
        )
    print(
        f"state {payload['state_bytes_per_env']} bytes per env; compile "
        f"{payload['compile_s']['median']:.1f} s (median over the sweep)"
    )
    print(f"wrote {path} and {plot_path}")
    return payload


def plot(sweep: list[dict], peers: list[dict], path: Path, config: ThroughputConfig) -> Path:
    figure, axis = plt.subplots(figsize=(7, 4.5))
    for policy, style in zip(POLICIES, ("-", "--"), strict=True):
        rows = [r for r in sweep if r["policy"] == policy]
        axis.plot(
            [r["num_envs"] for r in rows],
            [r["agent_steps_per_s"] for r in rows],
            style,
            marker="o",
            markersize=3,
            label=f"alemlite, {PLOT_LABELS[policy]}",
        )
    for key in sorted({(r["peer"], r["mode"]) for r in peers if "mode" in r}):
        rows = [r for r in peers if (r.get("peer"), r.get("mode")) == key]
        axis.plot(
            [r["num_envs"] for r in rows],
            [r["agent_steps_per_s"] for r in rows],
            ":",
            marker="s",
            markersize=4,
            label=f"{key[0]} {key[1]}",
        )
    axis.set_xscale("log", base=2)
    axis.set_yscale("log")
    axis.set_xlabel("parallel environments")
    axis.set_ylabel("agent steps / s")
    axis.set_title(f"{config.env} throughput, {config.options.describe()}, auto-reset")
    axis.legend(fontsize=7)
    axis.grid(True, which="both", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path
