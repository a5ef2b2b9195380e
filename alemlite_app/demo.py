"""`alemlite demo`: a short tour that runs in a few minutes on a laptop CPU.

Evaluates every reference policy on the dining table, shows the `paper`
reward's degenerate optimum beside the `shaped` reward, measures throughput on
a small sweep, trains a small IPPO agent that visibly learns, and renders a
Craft episode. Everything lands under `--out`.
"""

from __future__ import annotations

import math
import shutil
from dataclasses import dataclass
from pathlib import Path

from alemlite.core.errors import named_as, require
from alemlite.envs.dining.config import DiningConfig


@dataclass(frozen=True)
class DemoConfig:
    """Run the tour: policies, rewards, throughput, training, a rendered Craft episode."""

    out: Path = Path("runs/demo")
    episodes: int = 300
    philosophers: int = 5
    train_updates: int = 80
    """IPPO updates of the training part (any positive number)."""

    def __post_init__(self):
        require(self.episodes >= 1, f"episodes={self.episodes} must be at least 1")
        require(self.train_updates >= 1, f"train_updates={self.train_updates} must be at least 1")
        with named_as(num_philosophers="philosophers"):
            DiningConfig(num_philosophers=self.philosophers)


def _training(config: DemoConfig, run_dir: Path):
    """The IPPO run, evaluated about four times (and at the end), each time at the end of a
    compiled chunk: chunks of up to 10 updates that divide the run."""
    from baselines.common.config import TrainConfig

    updates = config.train_updates
    chunk = math.gcd(updates, 10)
    interval = chunk * max(1, round(updates / 4 / chunk))
    return TrainConfig(
        algorithm="ippo",
        philosophers=config.philosophers,
        num_updates=updates,
        updates_per_chunk=chunk,
        num_seeds=2,
        eval_interval=interval,
        run_dir=str(run_dir),
    )


def demo(config: DemoConfig) -> None:
    """A few-minute tour of alemlite; prints where every result went."""
    run_dir = config.out / "ippo-dining"
    training = _training(config, run_dir)  # checked now, not after the first parts
    config.out.mkdir(parents=True, exist_ok=True)
    print(f"== Dining, N={config.philosophers}: reference policies over {config.episodes} episodes")
    print("   (under the paper reward, eating nothing scores near the top of these policies;")
    print("   the shaped reward has no such trap)\n")
    from benchmarks.dining_reference_policies import DiningPoliciesConfig
    from benchmarks.dining_reference_policies import run as evaluate_policies

    evaluate_policies(
        DiningPoliciesConfig(
            episodes=config.episodes, num_philosophers=config.philosophers, out_dir=config.out
        )
    )

    from benchmarks.dining_throughput import DiningBenchConfig
    from benchmarks.dining_throughput import run as bench_dining

    print("\n== Dining throughput, a small sweep (the full one: make bench)")
    bench_dining(DiningBenchConfig(table_sizes=(5,), max_log2_envs=12, out_dir=config.out))
    from baselines.train import main as train

    print(f"\n== IPPO on dining N={config.philosophers}: a short run that learns")
    shutil.rmtree(run_dir, ignore_errors=True)  # each demo trains afresh; it resumes nothing
    train(training)

    from alemlite.envs.craft.render_cli import RenderCraftConfig, render_craft

    print("\n== Craft: a scripted team of three on a 32x32 map")
    render_craft(RenderCraftConfig(seed=1, out=config.out / "craft_episode.gif"))
    print(f"\nAll demo results are under {config.out.resolve()}")
