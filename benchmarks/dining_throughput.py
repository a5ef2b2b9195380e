"""Dining throughput, the published preset of the throughput engine (`benchmarks/engine/
throughput.py`): philosopher steps per second over batch sizes at each table size, beside the
plain-Python engine of the same rules (`benchmarks/reference/dining.py`, also the tests'
oracle) timed in the same run. Writes `dining_throughput_<platform>.json` and a plot beside it.

    python -m benchmarks.dining_throughput            # full CPU sweep
    python -m benchmarks.dining_throughput --num-agents 5 --max-log2-envs 12

`alemlite bench --env dining --num-agents N` times one table size the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import alemlite
from benchmarks.engine.throughput import (
    UNIFORM_POLICIES,
    Subject,
    ThroughputOptions,
    measure,
    plot,
)
from benchmarks.harness import write_results
from benchmarks.script import run_script


@dataclass(frozen=True)
class DiningBenchConfig(ThroughputOptions):
    """Measure dining throughput (JSON + plot under benchmarks/results/)."""

    num_agents: tuple[int, ...] = (5, 10, 15)
    """the table sizes, one sweep each"""
    max_log2_envs: int = 16
    steps_per_call: int = 128

    def subjects(self) -> dict[str, Subject]:
        dining = alemlite.spec("dining")
        return {
            f"N={n}": Subject("dining", dining.options(num_agents=n), UNIFORM_POLICIES)
            for n in self.num_agents
        }


def run(config: DiningBenchConfig) -> dict[str, Any]:
    """Sweep each table size and compare with the plain-Python engine, in the layout the
    published results keep: rates per philosopher, best points keyed `N<size>_<policy>`."""
    out, provenance = config.begin("dining_throughput")
    subjects = config.subjects().values()
    runs = {n: measure(config, s) for n, s in zip(config.num_agents, subjects, strict=True)}
    engine = {
        str(n): next(row for row in run["peers"] if row["peer"] == "python_engine")
        for n, run in runs.items()
    }
    payload = {
        "config": config.record(out),
        "sweep": [
            {
                "num_philosophers": n,
                **{key: row[key] for key in ("num_envs", "policy", "env_steps_per_s")},
                "philosopher_steps_per_s": row["agent_steps_per_s"],
                "timing": row["timing"],
            }
            for n, run in runs.items()
            for row in run["sweep"]
        ],
        "python_engine": {
            n: {"philosopher_steps_per_s": row["agent_steps_per_s"], "timing": row["timing"]}
            for n, row in engine.items()
        },
        "best": {
            f"N{n}_{policy}": {
                "num_envs": top["num_envs"],
                "philosopher_steps_per_s": top["agent_steps_per_s"],
                "ratio_to_python": top["agent_steps_per_s"] / engine[str(n)]["agent_steps_per_s"],
            }
            for n, run in runs.items()
            for policy, top in run["best"].items()
        },
    }
    path = write_results("dining_throughput", payload, out, provenance)
    labelled = {f"N={n}": run for n, run in runs.items()}
    title = "dining throughput (dotted: plain-Python engine)"
    plot_path = plot(labelled, path.with_suffix(".png"), title, unit="philosopher")
    for name, entry in payload["best"].items():
        print(
            f"{name:>20}: {entry['philosopher_steps_per_s']:.3e} philosopher steps/s "
            f"at {entry['num_envs']} envs, {entry['ratio_to_python']:.0f}x the Python engine"
        )
    print(f"wrote {path} and {plot_path}")
    return payload


if __name__ == "__main__":
    run_script(DiningBenchConfig, run)
