"""Reference-agent results on Craft: IPPO and MAPPO beside the random and scripted teams.

Trains each algorithm at each difficulty (several seeds vmapped in one run) on a
map, team and episode length small enough for learning to show within a CPU
budget, evaluates the random and the scripted coordinating team (`team`) once per
difficulty on the same held-out test episodes, and writes held-out return (final
and best checkpoint, 95% CIs across seeds), team and coordination achievement %,
normalised return, completed tasks, gives, revives, buildings per kind and diamond
swords (every row) to `marl_craft_cpu.json`, with one learning curve per run in
`figures/` beside it: in a fresh folder under `runs/bench/marl_craft/`, or, with
`--publish`, into `benchmarks/results/` and `docs/figures/`. The runs `--ship` names export
their best checkpoint (of the seed best on validation) beside the results, or, with
`--publish`, to `baselines/pretrained/` under the run's name (`ippo-craft-medium`). With
`--reuse-runs`, finished runs are collected as they are and interrupted ones resume from
their latest checkpoint, so the whole script can be restarted after a stop.

    python -m benchmarks.marl_craft --num-updates 60 --ppo.rewards agent --reuse-runs
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import alemlite
from baselines import PRETRAINED_DIR
from baselines.common.checkpoints import RunCheckpoints
from baselines.common.config import NetworkConfig, PPOConfig, TrainConfig
from baselines.common.reporting import MetricsLog, plot_learning_curve, to_json
from baselines.common.trainer import evaluate_references, make_env, run_title, train
from baselines.train import reference_policies
from benchmarks.harness import RESULTS_DIR, format_interval, output_path, refuse_earlier_runs
from benchmarks.marl_dining import FIGURES_DIR, ship_best_checkpoints
from benchmarks.provenance import begin_run
from benchmarks.script import run_script

# Per-episode metrics in the table beside the return (pooled over seeds and episodes),
# with their column headings.
REPORTED = {
    "team_achievement_percent": "team achievements %",
    "coordination_achievement_percent": "coordination achievements %",
    "normalised_return": "normalised return",
    "coordination/task_completions": "tasks completed",
    "coordination/gives": "gives",
    "coordination/revives": "revives",
    "construction/shelters": "shelters",
    "construction/forges": "forges",
    "construction/beacons": "beacons",
    "construction/diamond_swords": "diamond swords",
}


@dataclass(frozen=True)
class MarlCraftConfig:
    """Train IPPO and MAPPO on Craft at each difficulty; write the results table and curves."""

    difficulties: tuple[str, ...] = ("easy", "medium", "hard")
    algorithms: tuple[str, ...] = ("ippo", "mappo")
    map_size: int = 32
    num_agents: int = 3
    max_steps: int = 500
    num_updates: int = 60
    num_seeds: int = 2
    num_envs: int = 32
    num_steps: int = 64
    eval_episodes: int = 64
    """Validation episodes per checkpoint (they pick the best checkpoint)."""
    test_episodes: int = 128
    """Held-out episodes per seed for the final and best checkpoints and the teams."""
    network: NetworkConfig = field(default_factory=lambda: NetworkConfig(hidden_size=32))
    ppo: PPOConfig = field(default_factory=lambda: PPOConfig(learning_rate=1e-3))
    runs_dir: Path = Path("runs/marl_craft")
    out: Path | None = None
    """Results JSON; default: marl_craft_cpu.json in a fresh folder under runs/bench/ (in
    benchmarks/results/ with --publish)."""
    figures_dir: Path | None = None
    """Where each run's learning curve goes (as ALGORITHM-craft-DIFFICULTY.png); default:
    figures/ beside the results JSON (docs/figures/ with --publish)."""
    publish: bool = False
    """Write the published results and figures, replacing them."""
    label: str = ""
    """Suffix of run and figure names, to keep variants apart (e.g. "-long")."""
    ship: tuple[str, ...] = ("ippo-craft-medium",)
    """Runs (ALGORITHM-craft-DIFFICULTY plus the label) whose best checkpoint is shipped
    under the run's name; a name this run does not train is left out."""
    reuse_runs: bool = False
    """Collect runs already finished in runs_dir and resume interrupted ones. Without it, a
    run directory that exists is refused."""
    allow_dirty: bool = False
    """Publish from a tree with uncommitted changes (the results are marked dirty)."""

    def train_config(self, algorithm: str, difficulty: str, run_dir: Path) -> TrainConfig:
        return TrainConfig(
            algorithm=algorithm,
            env="craft",
            options=alemlite.spec("craft").options(
                num_agents=self.num_agents,
                map_size=self.map_size,
                max_steps=self.max_steps,
                difficulty=difficulty,
            ),
            num_envs=self.num_envs,
            num_steps=self.num_steps,
            num_updates=self.num_updates,
            updates_per_chunk=10,
            eval_interval=max(10, self.num_updates // 10 // 10 * 10),
            num_seeds=self.num_seeds,
            eval_episodes=self.eval_episodes,
            test_episodes=self.test_episodes,
            network=self.network,
            ppo=self.ppo,
            out=run_dir,
        )


def _train_or_collect(train_config: TrainConfig, reuse: bool, **train_kwargs) -> dict[str, Any]:
    """A run's summary: collected when finished, resumed when interrupted (with `reuse`)."""
    run_dir = train_config.output_dir
    if reuse and (run_dir / "summary.json").exists():
        return json.loads((run_dir / "summary.json").read_text())
    interrupted = False
    if (run_dir / "config.json").exists():
        checkpoints = RunCheckpoints(run_dir / "checkpoints")
        interrupted = checkpoints.latest_update() is not None
        checkpoints.close()
    if not interrupted:  # an unfinished run with no checkpoint yet: nothing to keep
        shutil.rmtree(run_dir, ignore_errors=True)
    return train(dataclasses.replace(train_config, resume=reuse and interrupted), **train_kwargs)


def run(config: MarlCraftConfig) -> dict:
    earlier = [
        config.runs_dir / f"{algorithm}-craft-{difficulty}{config.label}"
        for difficulty in config.difficulties
        for algorithm in config.algorithms
    ]
    refuse_earlier_runs(earlier, config.reuse_runs)
    out = output_path(config.out, config.publish, RESULTS_DIR / "marl_craft_cpu.json", "marl_craft")
    figures_dir = config.figures_dir or (FIGURES_DIR if config.publish else out.parent / "figures")
    ship_root = PRETRAINED_DIR if config.publish else out.parent
    shipped = [name for name in config.ship if config.runs_dir / name in earlier]
    destinations = [out, figures_dir, config.runs_dir, *(ship_root / name for name in shipped)]
    provenance = begin_run(destinations, config.allow_dirty, config.publish)
    results: dict[str, Any] = {
        "config": {**dataclasses.asdict(config), "out": str(out), "figures_dir": str(figures_dir)},
        "runs": {},
        "references": {},
    }
    figures_dir.mkdir(parents=True, exist_ok=True)
    for difficulty in config.difficulties:
        first = config.train_config(config.algorithms[0], difficulty, config.runs_dir)
        env = make_env(first)
        references_path = config.runs_dir / f"teams-craft-{difficulty}{config.label}.json"
        if config.reuse_runs and references_path.exists():
            references = json.loads(references_path.read_text())
        else:
            references = evaluate_references(
                env, reference_policies("craft", env), first.test_episodes, first.test_seed
            )
            references_path.parent.mkdir(parents=True, exist_ok=True)
            references_path.write_text(to_json(references))
        results["references"][difficulty] = references
        team_returns = {
            team: summary["return_across_seeds"]["mean"] for team, summary in references.items()
        }
        for algorithm in config.algorithms:
            name = f"{algorithm}-craft-{difficulty}{config.label}"
            run_dir = config.runs_dir / name
            train_config = config.train_config(algorithm, difficulty, run_dir)
            summary = _train_or_collect(
                train_config,
                config.reuse_runs,
                env=env,
                reference_summaries=references,
            )
            results["runs"][name] = {"difficulty": difficulty, **summary}
            plot_learning_curve(
                MetricsLog(run_dir / "metrics.jsonl").read(),
                team_returns,
                figures_dir / f"{name}.png",
                run_title(train_config, env),
            )
            print(
                f"{name}: held-out return {format_interval(summary['best']['return_across_seeds'])}"
            )
    results["machine"] = provenance.describe()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(to_json(results))
    ship_best_checkpoints(shipped, config.runs_dir, ship_root)
    print(markdown_table(results))
    print(f"wrote {out}" + "".join(f" and {ship_root / name}" for name in shipped))
    return results


def _metric(summary: dict, name: str) -> str:
    return format_interval(summary["episodes"][name])


def markdown_table(results: dict) -> str:
    """Per difficulty: agents (return CI across seeds) and teams (CI over episodes)."""
    header = (
        "| difficulty | policy | held-out return, final | held-out return, best checkpoint | "
        + " | ".join(REPORTED.values())
        + " |"
    )
    lines = [header, "|" + " --- |" * (4 + len(REPORTED))]
    for difficulty, teams in results["references"].items():
        for summary in (r for r in results["runs"].values() if r["difficulty"] == difficulty):
            agent = f"{summary['algorithm'].upper()} ({summary['num_seeds']} seeds)"
            cells = [
                format_interval(summary["final"]["return_across_seeds"]),
                format_interval(summary["best"]["return_across_seeds"]),
                *(_metric(summary["best"], name) for name in REPORTED),
            ]
            lines.append(f"| {difficulty} | {agent} | " + " | ".join(cells) + " |")
        for team, summary in sorted(teams.items()):
            cells = [_metric(summary, "episode_return"), ""]
            cells += [_metric(summary, name) for name in REPORTED]
            label = {"random": "uniform random", "team": "scripted team"}.get(team, team)
            lines.append(f"| {difficulty} | {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    run_script(MarlCraftConfig, run)
