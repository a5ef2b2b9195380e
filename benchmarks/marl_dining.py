"""Reference-agent results on dining: IPPO and MAPPO beside the scripted policies.

Trains each algorithm at each table size (several seeds vmapped in one run),
then collects the held-out returns (final and best checkpoint, 95% CIs across
seeds and over episodes) and the scripted policies' returns on the same test
episodes into `marl_dining.json`, with one learning curve per run copied to
`figures/` beside it: in a fresh folder under `runs/bench/marl_dining/`, or, with
`--publish`, into `benchmarks/results/` and `docs/figures/`. The runs named by `--ship`
export their best checkpoint (of the best seed on validation) beside the results, or, with
`--publish`, to `baselines/pretrained/` under the run's name (`ippo-dining-5`).

    python -m benchmarks.marl_dining --num-agents 5 --num-updates 200 --ppo.rewards agent
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path

import alemlite
import baselines
from baselines.common.config import NetworkConfig, PPOConfig, TrainConfig
from baselines.common.reporting import to_json
from baselines.common.trainer import make_env, train
from baselines.train import reference_policies
from benchmarks.harness import RESULTS_DIR, format_interval, output_path, refuse_earlier_runs
from benchmarks.provenance import begin_run
from benchmarks.script import run_script

FIGURES_DIR = Path(__file__).resolve().parents[1] / "docs" / "figures"
DINING = alemlite.spec("dining")


@dataclass(frozen=True)
class MarlDiningConfig:
    """Train IPPO and MAPPO on dining tables; write the results table and curves."""

    num_agents: tuple[int, ...] = (5,)
    """the table sizes, trained one after another"""
    algorithms: tuple[str, ...] = ("ippo", "mappo")
    num_updates: int = 200
    num_seeds: int = 4
    num_envs: int = 64
    num_steps: int = 32
    network: NetworkConfig = field(default_factory=NetworkConfig)
    ppo: PPOConfig = field(default_factory=PPOConfig)
    runs_dir: Path = Path("runs/marl_dining")
    out: Path | None = None
    """Results JSON; default: marl_dining.json in a fresh folder under runs/bench/ (in
    benchmarks/results/ with --publish). Learning curves go to figures/ beside it (docs/figures/
    with --publish)."""
    publish: bool = False
    """Write the published results and figures, replacing them."""
    label: str = ""
    """Suffix of run and figure names, to keep variants apart (e.g. "-anneal")."""
    ship: tuple[str, ...] = ("ippo-dining-5",)
    """Runs (ALGORITHM-dining-N plus the label) whose best checkpoint is shipped under the
    run's name; a name this run does not train is left out."""
    reuse_runs: bool = False
    """Collect the summaries of runs already finished in runs_dir instead of training again
    (unfinished ones are trained afresh). Without it, a run directory that exists is refused."""
    allow_dirty: bool = False
    """Publish from a tree with uncommitted changes (the results are marked dirty)."""


def run(config: MarlDiningConfig) -> dict:
    names = [
        f"{algorithm}-dining-{size}{config.label}"
        for size in config.num_agents
        for algorithm in config.algorithms
    ]
    refuse_earlier_runs([config.runs_dir / name for name in names], config.reuse_runs)
    out = output_path(config.out, config.publish, RESULTS_DIR / "marl_dining.json", "marl_dining")
    figures_dir = FIGURES_DIR if config.publish else out.parent / "figures"
    ship_root = baselines.PRETRAINED_DIR if config.publish else out.parent
    shipped = [name for name in config.ship if name in names]
    destinations = [out, figures_dir, *(ship_root / name for name in shipped)]
    provenance = begin_run(destinations, config.allow_dirty, config.publish)
    results = {"config": {**dataclasses.asdict(config), "out": str(out)}, "runs": {}}
    figures_dir.mkdir(parents=True, exist_ok=True)
    for size in config.num_agents:
        for algorithm in config.algorithms:
            name = f"{algorithm}-dining-{size}{config.label}"
            run_dir = config.runs_dir / name
            if config.reuse_runs and (run_dir / "summary.json").exists():
                results["runs"][name] = json.loads((run_dir / "summary.json").read_text())
                shutil.copy(run_dir / "learning_curve.png", figures_dir / f"{name}.png")
                continue
            shutil.rmtree(run_dir, ignore_errors=True)
            train_config = TrainConfig(
                algorithm=algorithm,
                env="dining",
                options=DINING.options(num_agents=size),
                num_envs=config.num_envs,
                num_steps=config.num_steps,
                num_updates=config.num_updates,
                updates_per_chunk=10,
                eval_interval=max(10, config.num_updates // 10 // 10 * 10),
                num_seeds=config.num_seeds,
                network=config.network,
                ppo=config.ppo,
                out=run_dir,
            )
            env = make_env(train_config)
            summary = train(train_config, env, references=reference_policies("dining", env))
            results["runs"][name] = summary
            shutil.copy(run_dir / "learning_curve.png", figures_dir / f"{name}.png")
    results["machine"] = provenance.describe()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(to_json(results))
    ship_best_checkpoints(shipped, config.runs_dir, ship_root)
    print(markdown_table(results))
    print(f"wrote {out}" + "".join(f" and {ship_root / name}" for name in shipped))
    return results


def ship_best_checkpoints(names: list[str], runs_dir: Path, ship_root: Path) -> None:
    """Copy each named run's exported best checkpoint (the trainer exports that of the seed
    best on validation) to `ship_root / NAME`, replacing what is there."""
    for name in names:
        shutil.rmtree(ship_root / name, ignore_errors=True)
        shutil.copytree(runs_dir / name / "policy" / "best", ship_root / name)


def table_size(summary: dict) -> int:
    """A run's table size N, from its summary (runs before environment options recorded
    `make`'s keyword arguments)."""
    env = summary["env"]
    return env["options"]["num_agents"] if "options" in env else env["num_philosophers"]


def markdown_table(results: dict) -> str:
    """Held-out returns: agents (CI across seeds) and scripted policies (CI over episodes)."""
    lines = [
        "| policy | N | held-out return, final | held-out return, best checkpoint |",
        "| --- | --- | --- | --- |",
    ]
    references: dict[int, dict] = {}
    for summary in results["runs"].values():
        size = table_size(summary)
        final = format_interval(summary["final"]["return_across_seeds"])
        best = format_interval(summary["best"]["return_across_seeds"])
        agent = f"{summary['algorithm'].upper()} ({summary['num_seeds']} seeds)"
        lines.append(f"| {agent} | {size} | {final} | {best} |")
        references.setdefault(size, summary["references"])
    for size, policies in references.items():
        for policy, summary in sorted(policies.items()):
            episode_return = format_interval(summary["episodes"]["episode_return"])
            lines.append(f"| {policy} | {size} | {episode_return} | |")
    return "\n".join(lines)


if __name__ == "__main__":
    run_script(MarlDiningConfig, run)
