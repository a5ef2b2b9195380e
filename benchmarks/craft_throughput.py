"""Craft throughput: environment and agent steps per second over a sweep of batch sizes.

Times `VecEnv` with auto-reset from a pool of pre-generated worlds, driven by hashed
actions of (step, env, agent) (env only) and by a `jax.random` uniform policy. Where
peer virtual environments are given, the same run times `craftax` Classic symbolic
(with and without auto-reset) and `alem-env` (`step` and `step_env`) at the same
batch sizes, alternating with alemlite, and prints the ratios. Writes
`benchmarks/results/craft_throughput_<platform>.json` and a plot beside it.

    python -m benchmarks.craft_throughput --max-log2-envs 12
    python -m benchmarks.craft_throughput --craftax-python /tmp/peer-craftax/bin/python \\
        --alem-python /tmp/peer-alem/bin/python
"""

from __future__ import annotations

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
from benchmarks.harness import ResultsFolder, hash_actions, time_compiled, write_results
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
    peer_envs: tuple[int, ...] = (64,)
    """batch sizes at which peers are timed, alternating with alemlite"""
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
            map_size_check_envs=self.map_size_check_envs,
        )
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

    peers = _available_peers(config)
    timers = {peer.name: peer.time for peer in PEERS["craft"]}
    side_by_side = []
    for num_envs in config.peer_envs if peers else ():
        ours = _time_alemlite(env, num_envs, config, random_policy=False)
        for name, python in peers.items():
            request = PeerRun(num_envs, config.steps_per_call, config.repeats, python)
            for row in timers[name](config.options(), request):
                if "env_steps_per_s" in row:
                    row["alemlite_env_steps_per_s"] = ours["env_steps_per_s"]
                    row["ratio"] = ours["env_steps_per_s"] / row["env_steps_per_s"]
                    print(
                        f"{num_envs:>6} envs  {name} {row['mode']:<12} "
                        f"{row['env_steps_per_s']:>12.0f} env steps/s  "
                        f"alemlite {ours['env_steps_per_s']:>12.0f}  ratio {row['ratio']:.0f}x"
                    )
                side_by_side.append(row)

    best = {}
    for policy in ("hashed", "uniform_random"):
        top = max((r for r in sweep if r["policy"] == policy), key=lambda r: r["env_steps_per_s"])
        best[policy] = {
            key: top[key] for key in ("num_envs", "env_steps_per_s", "agent_steps_per_s")
        }
    compile_s = [r["timing"]["compile_s"] for r in sweep]
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
        "sweep": sweep,
        "step_only_by_map_size": step_only,
        "peers": side_by_side,
        "best": best,
    }
    path = write_results("craft_throughput", payload, out_dir, provenance)
    plot_path = _plot(sweep, side_by_side, path.with_suffix(".png"), config)
    for policy, entry in best.items():
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
        axis.plot(
            [r["num_envs"] for r in rows],
            [r["env_steps_per_s"] * r.get("num_agents", 1) for r in rows],
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
