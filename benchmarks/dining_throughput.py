"""Dining throughput: philosopher steps per second over a sweep of batch and table sizes.

Times the jitted, vmapped environment (with auto-reset) driven by hashed
actions (env only) and by a `jax.random` uniform policy, and the plain-Python
engine of the same rules (`benchmarks/reference/dining.py`, also the tests'
oracle) in the same run, then prints the ratio at N = 5. Writes
`benchmarks/results/dining_throughput_<platform>.json` and a plot beside it.

    python -m benchmarks.dining_throughput            # full CPU sweep
    python -m benchmarks.dining_throughput --table-sizes 5 --max-log2-envs 12

`alemlite bench --env dining --num-agents N` times one table size the same way.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import tyro
from tqdm import tqdm

import alemlite
from alemlite.core.errors import require_at_least
from benchmarks.bench.throughput import time_batch
from benchmarks.harness import ResultsFolder, write_results
from benchmarks.peers.table import python_engine_timing

DINING = alemlite.spec("dining")

PLOT_LABELS = {"hashed": "env only", "uniform_random": "random policy"}


@dataclass(frozen=True)
class DiningBenchConfig(ResultsFolder):
    """Measure dining throughput (JSON + plot under benchmarks/results/)."""

    table_sizes: tuple[int, ...] = (5, 10, 15)
    max_log2_envs: int = 16
    """sweep num_envs = 1, 2, 4, ..., 2**max_log2_envs"""
    steps_per_call: int = 128
    repeats: int = 5
    oracle_steps: int = 20_000

    def __post_init__(self):
        require_at_least(2, table_sizes=self.table_sizes)
        require_at_least(0, max_log2_envs=self.max_log2_envs)
        require_at_least(
            1,
            steps_per_call=self.steps_per_call,
            repeats=self.repeats,
            oracle_steps=self.oracle_steps,
        )


def run(config: DiningBenchConfig) -> dict:
    """Sweep dining throughput and compare with the plain-Python engine."""
    out_dir, provenance = config.begin("dining_throughput")
    sweep = []
    sizes = [2**power for power in range(config.max_log2_envs + 1)]
    points = [
        (n, b, policy) for n in config.table_sizes for b in sizes
        for policy in ("hashed", "uniform_random")
    ]  # fmt: skip
    for num_philosophers, num_envs, policy in tqdm(points, desc="dining sweep"):
        env = DINING.build(DINING.options(num_agents=num_philosophers))
        row = time_batch(env, num_envs, config.steps_per_call, config.repeats, policy)
        sweep.append(
            {
                "num_philosophers": num_philosophers,
                "num_envs": num_envs,
                "policy": policy,
                "env_steps_per_s": row["env_steps_per_s"],
                "philosopher_steps_per_s": row["agent_steps_per_s"],
                "timing": row["timing"],
            }
        )
    oracle = {}
    for num_philosophers in config.table_sizes:
        options = DINING.options(num_agents=num_philosophers)
        timing = python_engine_timing(options, config.oracle_steps, config.repeats)
        oracle[num_philosophers] = {
            "philosopher_steps_per_s": config.oracle_steps * num_philosophers / timing.median_s,
            "timing": asdict(timing),
        }
    best = {}
    for num_philosophers in config.table_sizes:
        for policy in ("hashed", "uniform_random"):
            rows = [
                r
                for r in sweep
                if r["num_philosophers"] == num_philosophers and r["policy"] == policy
            ]
            top = max(rows, key=lambda r: r["philosopher_steps_per_s"])
            best[f"N{num_philosophers}_{policy}"] = {
                "num_envs": top["num_envs"],
                "philosopher_steps_per_s": top["philosopher_steps_per_s"],
                "ratio_to_python": top["philosopher_steps_per_s"]
                / oracle[num_philosophers]["philosopher_steps_per_s"],
            }
    payload = {
        "config": {**asdict(config), "out": str(out_dir)},
        "sweep": sweep,
        "python_engine": {str(n): value for n, value in oracle.items()},
        "best": best,
    }
    path = write_results("dining_throughput", payload, out_dir, provenance)
    plot_path = _plot(sweep, oracle, path.with_suffix(".png"))
    for name, entry in best.items():
        print(
            f"{name:>20}: {entry['philosopher_steps_per_s']:.3e} philosopher steps/s "
            f"at {entry['num_envs']} envs, {entry['ratio_to_python']:.0f}x the Python engine"
        )
    print(f"wrote {path} and {plot_path}")
    return payload


def _plot(sweep: list[dict], oracle: dict, path: Path) -> Path:
    figure, axis = plt.subplots(figsize=(7, 4.5))
    for num_philosophers in sorted({r["num_philosophers"] for r in sweep}):
        for policy, style in (("hashed", "-"), ("uniform_random", "--")):
            rows = [
                r
                for r in sweep
                if r["num_philosophers"] == num_philosophers and r["policy"] == policy
            ]
            line = axis.plot(
                [r["num_envs"] for r in rows],
                [r["philosopher_steps_per_s"] for r in rows],
                style,
                marker="o",
                markersize=3,
                label=f"N={num_philosophers}, {PLOT_LABELS[policy]}",
            )
        axis.axhline(
            oracle[num_philosophers]["philosopher_steps_per_s"],
            color=line[0].get_color(),
            linestyle=":",
            linewidth=1,
        )
    axis.set_xscale("log", base=2)
    axis.set_yscale("log")
    axis.set_xlabel("parallel environments")
    axis.set_ylabel("philosopher steps / s")
    axis.set_title("dining throughput (dotted: plain-Python engine)")
    axis.legend(fontsize=7)
    axis.grid(True, which="both", alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path


if __name__ == "__main__":
    run(tyro.cli(DiningBenchConfig))
