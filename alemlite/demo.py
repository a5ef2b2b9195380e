"""`alemlite demo`: a short tour that runs in a few minutes on a laptop CPU.

Evaluates every reference policy on the dining table, shows the `paper`
reward's degenerate optimum beside the `shaped` reward, measures throughput on
a small sweep, trains a small IPPO agent that visibly learns, and renders a
Craft episode. Everything lands under `--out`.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import alemlite
from alemlite.envs.dining.policies import DINING_POLICIES
from alemlite.evaluation import evaluate
from alemlite.stats import mean_ci, wilson_ci


@dataclass(frozen=True)
class DemoConfig:
    """Run the tour: policies, rewards, throughput, training, a rendered Craft episode."""

    out: Path = Path("runs/demo")
    episodes: int = 300
    philosophers: int = 5
    train_updates: int = 80


def _policy_table(config: DemoConfig) -> str:
    shaped = alemlite.make("dining", num_philosophers=config.philosophers, reward="shaped")
    paper = alemlite.make("dining", num_philosophers=config.philosophers, reward="paper")
    header = (
        f"{'policy':<18} {'shaped return':>22} {'paper return':>22} "
        f"{'meals':>7} {'deadlock rate':>22} {'fairness':>9}"
    )
    lines = [header, "-" * len(header)]
    for name, policy in sorted(DINING_POLICIES.items()):
        shaped_runs = evaluate(shaped, policy, shaped.default_params, config.episodes)
        paper_runs = evaluate(paper, policy, paper.default_params, config.episodes)
        deadlocks = int(shaped_runs["deadlock"].sum())
        lines.append(
            f"{name:<18} {_interval(mean_ci(shaped_runs['episode_return'])):>22} "
            f"{_interval(mean_ci(paper_runs['episode_return'])):>22} "
            f"{shaped_runs['meals_total'].mean():>7.2f} "
            f"{_interval(wilson_ci(deadlocks, config.episodes)):>22} "
            f"{shaped_runs['fairness'].mean():>9.3f}"
        )
    return "\n".join(lines)


def _interval(estimate: tuple[float, float, float]) -> str:
    mean, low, high = estimate
    return f"{mean:.3f} [{low:.3f}, {high:.3f}]"


def demo(config: DemoConfig) -> None:
    """A few-minute tour of alemlite; prints where every result went."""
    config.out.mkdir(parents=True, exist_ok=True)
    print(f"== Dining, N={config.philosophers}: reference policies over {config.episodes} episodes")
    print("   (under the paper reward, eating nothing scores near the top of these policies;")
    print("   the shaped reward has no such trap)\n")
    table = _policy_table(config)
    print(table)
    (config.out / "dining_policies.txt").write_text(table + "\n")

    from benchmarks.dining_throughput import DiningBenchConfig
    from benchmarks.dining_throughput import run as bench_dining

    print("\n== Dining throughput, a small sweep (the full one: make bench)")
    bench_dining(DiningBenchConfig(table_sizes=(5,), max_log2_envs=12, out_dir=config.out))
    from baselines.common.config import TrainConfig
    from baselines.train import main as train

    print(f"\n== IPPO on dining N={config.philosophers}: a short run that learns")
    run_dir = config.out / "ippo-dining"
    shutil.rmtree(run_dir, ignore_errors=True)  # each demo trains afresh; it resumes nothing
    train(
        TrainConfig(
            algorithm="ippo",
            philosophers=config.philosophers,
            num_updates=config.train_updates,
            num_seeds=2,
            eval_interval=max(1, config.train_updates // 4),
            run_dir=str(run_dir),
        )
    )

    from alemlite.envs.craft.render_cli import RenderCraftConfig, render_craft

    print("\n== Craft: a scripted team of three on a 32x32 map")
    render_craft(RenderCraftConfig(seed=1, out=config.out / "craft_episode.gif"))
    print(f"\nAll demo results are under {config.out.resolve()}")
