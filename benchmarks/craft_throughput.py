"""Craft throughput: environment and agent steps per second over a sweep of batch sizes.

Times `VecEnv` with auto-reset from a pool of pre-generated worlds, driven by hashed
actions of (step, env, agent) (env only) and by a `jax.random` uniform policy. Where
peer virtual environments are given, the same run sweeps `craftax` Classic symbolic
(with and without auto-reset) and `alem-env` (`step` and `step_env`) over batch sizes
(`--peer-envs`, each peer until a larger batch stops helping it), alternating with
alemlite at each size, and reports each ratio at `--ratio-envs` environments and at
each side's best batch. At `--ratio-envs` alemlite and the peers alternate
`--ratio-rounds` times and the headline ratio is the median of the rounds' ratios, each
alemlite timing paired with the peer timings just after it: on a shared host the speed
of the machine drifts between minutes, and a single pair can land on either side. The
compile time of the program timed at `--ratio-envs` is measured from `--compile-runs`
fresh compiles (no compilation cache). Writes
`benchmarks/results/craft_throughput_<platform>.json` and a plot beside it.

    python -m benchmarks.craft_throughput --max-log2-envs 12
    python -m benchmarks.craft_throughput --craftax-python /tmp/peer-craftax/bin/python \\
        --alem-python /tmp/peer-alem/bin/python
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path

import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np
import tyro
from tqdm import tqdm

import alemlite
from alemlite.core.errors import ConfigError, require_at_least
from alemlite.core.spec import EnvOptions
from benchmarks.bench.throughput import state_bytes, time_batch
from benchmarks.harness import (
    ResultsFolder,
    hash_actions,
    time_compiled,
    vec_rollout,
    write_results,
)
from benchmarks.peers.table import PEERS, PeerRun

CRAFT = alemlite.spec("craft")
PLOT_LABELS = {"hashed": "env only (hashed actions)", "uniform_random": "random policy"}


@dataclass(frozen=True)
class CraftBenchConfig(ResultsFolder):
    """Measure Craft throughput (JSON + plot under benchmarks/results/)."""

    num_agents: int = 3
    map_size: int = 48
    min_log2_envs: int = 0
    max_log2_envs: int = 12
    """sweep num_envs = 2**min .. 2**max"""
    steps_per_call: int = 64
    repeats: int = 5
    pool_size: int = 64
    """pre-generated worlds (capped at num_envs)"""
    refresh_per_step: int = 1
    craftax_python: Path | None = None
    """python of a virtual environment with craftax==1.6.1 (None: skip the peer)"""
    alem_python: Path | None = None
    """python of a virtual environment with alem-env==0.2.1 (None: skip the peer)"""
    peer_envs: tuple[int, ...] = (16, 32, 64, 128, 256, 512, 1024)
    """batch sizes at which peers are timed, in this order, alternating with alemlite"""
    ratio_envs: int = 64
    """the batch of the headline ratios (the peers' own benchmark batch); always timed"""
    ratio_rounds: int = 3
    """rounds of alemlite-then-peers at `ratio_envs`; the headline ratio is their median"""
    peer_stop_gain: float = 1.05
    """past `ratio_envs`, a peer stops at the first batch where none of its modes gained this
    factor over its best so far (1: sweep every size)"""
    compile_runs: int = 5
    """fresh compiles (no cache) of the program timed at `ratio_envs` (0: skip)"""
    map_size_check: tuple[int, ...] = (16, 48, 128)
    """map sizes at which `step` alone (no reset) is timed, to show it ignores the map"""
    map_size_check_envs: int = 512

    def __post_init__(self):
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
            ratio_envs=self.ratio_envs,
            ratio_rounds=self.ratio_rounds,
            map_size_check_envs=self.map_size_check_envs,
        )
        require_at_least(0, compile_runs=self.compile_runs)
        require_at_least(1.0, peer_stop_gain=self.peer_stop_gain)
        self.options()
        for map_size in self.map_size_check:
            try:
                self.options(map_size)
            except ConfigError as error:
                raise ConfigError(f"map_size_check={self.map_size_check}: {error}") from None

    def options(self, map_size: int | None = None) -> EnvOptions:
        return CRAFT.options(num_agents=self.num_agents, map_size=map_size or self.map_size)


def _time_alemlite(env, num_envs: int, config: CraftBenchConfig, random_policy: bool) -> dict:
    return time_batch(
        env,
        num_envs,
        config.steps_per_call,
        config.repeats,
        "uniform_random" if random_policy else "hashed",
        pool_size=min(config.pool_size, num_envs),
        refresh_per_step=config.refresh_per_step,
    )


def _time_step_only(map_size: int, config: CraftBenchConfig, with_observation: bool) -> dict:
    """`step` without any reset, from pre-generated states: its cost should not grow with S.

    Like the sweep and the peers, the plain figure leaves the observation unused (XLA
    then never builds it); `with_observation` consumes all of it, as a learner does.
    """
    env = CRAFT.build(config.options(map_size))
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


def _available_peers(config: CraftBenchConfig) -> dict[str, Path]:
    peers = {}
    setups = {peer.name: peer.setup for peer in PEERS["craft"]}
    for name, python in (("craftax", config.craftax_python), ("alem", config.alem_python)):
        if python is not None and Path(python).exists():
            peers[name] = Path(python)
        else:
            where = "not given" if python is None else f"missing at {python}"
            print(
                f"{name} peer {where}: timing alemlite only. Create it with:\n"
                f"  {setups[name]}\nand pass --{name}-python <venv>/bin/python"
            )
    return peers


def run(config: CraftBenchConfig) -> dict:
    """Sweep Craft throughput; time peers side by side where their venvs are given."""
    out_dir, provenance = config.begin("craft_throughput")
    env = CRAFT.build(config.options())
    sizes = [2**power for power in range(config.min_log2_envs, config.max_log2_envs + 1)]
    sweep = []
    for num_envs in tqdm(sizes, desc="craft sweep"):
        for random_policy in (False, True):
            sweep.append(_time_alemlite(env, num_envs, config, random_policy))

    step_only = [
        _time_step_only(size, config, with_observation)
        for size in config.map_size_check
        for with_observation in (False, True)
    ]
    for row in step_only:
        print(
            f"step only, {row['map_size']:>3}x{row['map_size']:<3} map"
            f"{', whole observation' if row['with_observation'] else ''}: "
            f"{row['env_steps_per_s']:.3e} env steps/s at {row['num_envs']} envs"
        )

    side_by_side = _side_by_side(env, config, _available_peers(config))
    compile_runs = _compile_runs(env, config)

    best = {}
    for policy in ("hashed", "uniform_random"):
        top = max((r for r in sweep if r["policy"] == policy), key=lambda r: r["env_steps_per_s"])
        best[policy] = {
            key: top[key] for key in ("num_envs", "env_steps_per_s", "agent_steps_per_s")
        }
    compile_s = [r["timing"]["compile_s"] for r in sweep]
    ours = [r for r in sweep if r["policy"] == "hashed"]
    ours += [r for r in side_by_side if r.get("peer") == "alemlite"]
    ratios = _ratios(ours, side_by_side, config.ratio_envs)
    payload = {
        "config": {
            **asdict(config),
            "out": str(out_dir),
            "craftax_python": str(config.craftax_python),
            "alem_python": str(config.alem_python),
        },
        "state_bytes_per_env": state_bytes(env),
        "compile_s": {
            "min": min(compile_s),
            "median": float(np.median(compile_s)),
            "max": max(compile_s),
        },
        "compile_runs": compile_runs,
        "sweep": sweep,
        "step_only_by_map_size": step_only,
        "peers": side_by_side,
        "ratios": ratios,
        "best": best,
    }
    path = write_results("craft_throughput", payload, out_dir, provenance)
    plot_path = _plot(sweep, side_by_side, path.with_suffix(".png"), config)
    for policy, entry in best.items():
        print(
            f"{PLOT_LABELS[policy]:>26}: {entry['env_steps_per_s']:.3e} env steps/s, "
            f"{entry['agent_steps_per_s']:.3e} agent steps/s at {entry['num_envs']} envs"
        )
    for name, entry in ratios.items():
        at, top = entry["at_ratio_envs"], entry["at_best"]
        print(
            f"{name:>16}: {at['ratio'] if at else float('nan'):.1f}x at {config.ratio_envs} envs,"
            f" {top['ratio']:.1f}x at each side's best ({top['alemlite_num_envs']} vs "
            f"{top['peer_num_envs']} envs)"
        )
    print(
        f"state {payload['state_bytes_per_env']} bytes per env; compile "
        f"{payload['compile_s']['median']:.1f} s (median over the sweep)"
        + (
            f"; {len(compile_runs['runs_s'])} fresh compiles at {config.ratio_envs} envs: "
            + ", ".join(f"{value:.1f}" for value in compile_runs["runs_s"])
            + " s"
            if compile_runs
            else ""
        )
    )
    print(f"wrote {path} and {plot_path}")
    return payload


def _side_by_side(env, config: CraftBenchConfig, peers: dict[str, Path]) -> list[dict]:
    """At each of `peer_envs`, alemlite then every peer still sweeping, alternating
    (`ratio_rounds` times over at `ratio_envs`; rows carry their `round`).

    A peer stops past `ratio_envs` once a batch brings none of its modes a gain of
    `peer_stop_gain` over its best so far (a larger batch no longer helps it); a peer that
    fails (out of memory) stops there. alemlite rows carry `"peer": "alemlite"`.
    """
    if not peers:
        return []
    timers = {peer.name: peer.time for peer in PEERS["craft"]}
    sizes = sorted(set(config.peer_envs) | {config.ratio_envs})
    sweeping, best, rows = dict(peers), {}, []
    for num_envs in tqdm(sizes, desc="peers side by side"):
        if not sweeping:
            break
        gained = dict.fromkeys(sweeping, False)
        rounds = config.ratio_rounds if num_envs == config.ratio_envs else 1
        for round_index in range(rounds):
            ours = _time_alemlite(env, num_envs, config, random_policy=False)
            ours = {"peer": "alemlite", "mode": "beside the peers", "round": round_index, **ours}
            rows.append(ours)
            for name, python in sweeping.items():
                request = PeerRun(num_envs, config.steps_per_call, config.repeats, python)
                for row in timers[name](config.options(), request):
                    row["round"] = round_index
                    rows.append(row)
                    if "env_steps_per_s" not in row:
                        continue
                    row["alemlite_env_steps_per_s"] = ours["env_steps_per_s"]
                    row["ratio"] = ours["env_steps_per_s"] / row["env_steps_per_s"]
                    print(
                        f"{num_envs:>6} envs  {name} {row['mode']:<12} "
                        f"{row['env_steps_per_s']:>12.0f} env steps/s  "
                        f"alemlite {ours['env_steps_per_s']:>12.0f}  ratio {row['ratio']:.0f}x"
                        + (f"  (round {round_index + 1} of {rounds})" if rounds > 1 else "")
                    )
                    previous = best.get((name, row["mode"]), 0.0)
                    gained[name] |= row["env_steps_per_s"] >= config.peer_stop_gain * previous
                    best[name, row["mode"]] = max(previous, row["env_steps_per_s"])
        for name in list(sweeping):
            failed = any("error" in row for row in rows if row.get("peer") == name)
            if failed or (num_envs > config.ratio_envs and not gained[name]):
                print(f"{name}: sweep stops at {num_envs} envs")
                del sweeping[name]
    return rows


def _ratios(ours: list[dict], peers: list[dict], ratio_envs: int) -> dict[str, dict]:
    """Per peer mode: the ratio at `ratio_envs` (the median over the rounds of alemlite
    timed just before the peer, with the rounds listed) and at each side's best batch
    (alemlite's best hashed rate in the whole run against the peer's best)."""
    top = max(ours, key=lambda row: row["env_steps_per_s"])
    ratios = {}
    for key in sorted({(r["peer"], r["mode"]) for r in peers if "ratio" in r}):
        rows = [r for r in peers if (r.get("peer"), r.get("mode")) == key and "ratio" in r]
        rounds = [r for r in rows if r["num_envs"] == ratio_envs]
        peer_top = max(rows, key=lambda row: row["env_steps_per_s"])
        ratios[f"{key[0]}/{key[1]}"] = {
            "at_ratio_envs": _median_round(rounds, ratio_envs) if rounds else None,
            "at_best": {
                "alemlite_num_envs": top["num_envs"],
                "alemlite_env_steps_per_s": top["env_steps_per_s"],
                "peer_num_envs": peer_top["num_envs"],
                "peer_env_steps_per_s": peer_top["env_steps_per_s"],
                "ratio": top["env_steps_per_s"] / peer_top["env_steps_per_s"],
            },
            "peer_batches": sorted({r["num_envs"] for r in rows}),
        }
    return ratios


def _median_round(rounds: list[dict], ratio_envs: int) -> dict:
    """The medians over the rounds at `ratio_envs` of alemlite's rate, the peer's and
    their paired ratio (not the ratio of the two medians), and every round's figures."""
    figures = [
        {
            "alemlite_env_steps_per_s": r["alemlite_env_steps_per_s"],
            "peer_env_steps_per_s": r["env_steps_per_s"],
            "ratio": r["ratio"],
        }
        for r in rounds
    ]
    return {
        "num_envs": ratio_envs,
        **{field: float(np.median([f[field] for f in figures])) for field in figures[0]},
        "rounds": figures,
    }


def _compile_runs(env, config: CraftBenchConfig) -> dict:
    """Seconds of `compile_runs` fresh compiles of the program timed at `ratio_envs`.

    Each traces a new function and compiles it with JAX's persistent cache off, so none
    reuses an earlier compile.
    """
    if not config.compile_runs:
        return {}
    pool = min(config.pool_size, config.ratio_envs)
    runs = []
    enabled = jax.config.jax_enable_compilation_cache
    jax.config.update("jax_enable_compilation_cache", False)
    try:
        for _ in tqdm(range(config.compile_runs), desc="fresh compiles"):
            rollout = vec_rollout(
                env,
                config.ratio_envs,
                config.steps_per_call,
                "hashed",
                pool,
                config.refresh_per_step,
            )
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


def _plot(sweep: list[dict], peers: list[dict], path: Path, config: CraftBenchConfig) -> Path:
    figure, axis = plt.subplots(figsize=(7, 4.5))
    for policy, style in (("hashed", "-"), ("uniform_random", "--")):
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
        sizes = sorted({r["num_envs"] for r in rows})  # the median of the rounds at a size
        axis.plot(
            sizes,
            [
                np.median([r["agent_steps_per_s"] for r in rows if r["num_envs"] == n])
                for n in sizes
            ],
            ":",
            marker="s",
            markersize=4,
            label=f"{key[0]} {key[1]}",
        )
    axis.set_xscale("log", base=2)
    axis.set_yscale("log")
    axis.set_xlabel("parallel environments")
    axis.set_ylabel("agent steps / s")
    axis.set_title(
        f"Craft throughput, P={config.num_agents}, {config.map_size}x{config.map_size}, auto-reset"
    )
    axis.legend(fontsize=7)
    axis.grid(True, which="both", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


if __name__ == "__main__":
    run(tyro.cli(CraftBenchConfig))
