"""Independent learners in the climbing game: IPPO beside a group-relative method (GRPO).

The classic result (Claus & Boutilier 1998): learners that each average over a partner
still exploring prefer a safe move, because the optimal move a is surrounded by the -30
penalties (relative overgeneralisation); they settle on (b, b) = 7 or (c, c) = 5, not the
optimum (a, a) = 11. Each algorithm trains `--num-seeds` runs of one seed each (sharing one
compiled program), so that every seed's held-out outcome and the move it settles on are
reported: final and best-checkpoint return (95% CI across seeds), optimal-joint-action rate,
miscoordination rate and the share of each move, beside the scripted teams on the same test
episodes. Writes `marl_matrix_<platform>.json`: in a fresh folder under runs/bench/marl_matrix/,
or, with `--publish`, in benchmarks/results/.

    python -m benchmarks.marl_matrix --num-seeds 8 --num-updates 200 --publish
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

import alemlite
from alemlite.stats import mean_ci
from baselines.common.config import GroupConfig, NetworkConfig, PPOConfig, TrainConfig
from baselines.common.reporting import to_json
from baselines.common.trainer import evaluate_references, train
from baselines.train import reference_policies
from benchmarks.harness import ResultsFolder, format_interval, refuse_earlier_runs, write_results
from benchmarks.script import run_script

MATRIX = alemlite.spec("matrix")
MOVES = ("play_a", "play_b", "play_c")
# A seed has settled on a move when it plays that move at least this often.
SETTLED = 0.9
OUTCOMES = ("optimal_joint_action_rate", "miscoordination_rate", *(f"{m}_rate" for m in MOVES))


@dataclass(frozen=True)
class MarlMatrixConfig(ResultsFolder):
    """Train IPPO and GRPO on a matrix game, seed by seed; write the outcomes of every seed."""

    algorithms: tuple[str, ...] = ("ippo", "grpo")
    game: str = "climbing"
    num_agents: int = 2
    max_steps: int = 25
    """rounds; every rollout holds one whole episode (num_steps = max_steps)"""
    reward: str = "payoff"
    num_seeds: int = 8
    num_updates: int = 200
    num_envs: int = 64
    network: NetworkConfig = field(default_factory=NetworkConfig)
    ppo: PPOConfig = field(default_factory=PPOConfig)
    group: GroupConfig = field(default_factory=GroupConfig)
    runs_dir: Path = Path("runs/marl_matrix")
    reuse_runs: bool = False
    """Collect the summaries of runs already finished in runs_dir instead of training again
    (unfinished ones are trained afresh). Without it, a run directory that exists is refused."""

    def __post_init__(self) -> None:
        self.matrix_options()  # a bad game or size is refused before anything runs

    def matrix_options(self):
        return MATRIX.options(
            game=self.game,
            num_agents=self.num_agents,
            max_steps=self.max_steps,
            reward=self.reward,
        )


def run_name(config: MarlMatrixConfig, algorithm: str, seed: int) -> str:
    return f"{algorithm}-matrix-{config.matrix_options().label()}-seed{seed}"


def run(config: MarlMatrixConfig) -> dict[str, Any]:
    options = config.matrix_options()
    names = [run_name(config, a, s) for a in config.algorithms for s in range(config.num_seeds)]
    refuse_earlier_runs([config.runs_dir / name for name in names], config.reuse_runs)
    out, provenance = config.begin("marl_matrix")
    env = MATRIX.build(options)
    train_configs = {
        (algorithm, seed): TrainConfig(
            algorithm=algorithm,
            env="matrix",
            options=options,
            num_envs=config.num_envs,
            num_steps=config.max_steps,
            num_updates=config.num_updates,
            updates_per_chunk=10,
            eval_interval=max(10, config.num_updates // 10 // 10 * 10),
            seed=seed,
            network=config.network,
            ppo=config.ppo,
            group=config.group,
            out=str(config.runs_dir / run_name(config, algorithm, seed)),
            progress=False,
        )
        for algorithm in config.algorithms
        for seed in range(config.num_seeds)
    }
    any_config = next(iter(train_configs.values()))
    references = evaluate_references(
        env, reference_policies("matrix", env), any_config.test_episodes, any_config.test_seed
    )
    summaries = {}
    for (algorithm, seed), train_config in train_configs.items():
        run_dir = train_config.output_dir
        if config.reuse_runs and (run_dir / "summary.json").exists():
            summaries[algorithm, seed] = json.loads((run_dir / "summary.json").read_text())
            continue
        shutil.rmtree(run_dir, ignore_errors=True)
        summaries[algorithm, seed] = train(train_config, env, reference_summaries=references)
        outcome = seed_outcome(summaries[algorithm, seed]["final"])
        settled = outcome["settled_on"]
        print(f"{run_dir.name}: return {outcome['return']:.1f}, settled on {settled}", flush=True)
    params = env.default_params
    results = {
        "config": {**dataclasses.asdict(config), "out": str(out)},
        "game": {
            "options": dataclasses.asdict(options),
            "matrix": np.asarray(params.matrix)[: int(params.num_moves), : int(params.num_moves)],
            "optimal_joint_action": np.asarray(params.optimal_joint),
        },
        "algorithms": {
            algorithm: algorithm_results(
                [summaries[algorithm, seed] for seed in range(config.num_seeds)]
            )
            for algorithm in config.algorithms
        },
        "references": {
            name: {metric: summary["episodes"][metric] for metric in ("episode_return", *OUTCOMES)}
            for name, summary in references.items()
        },
    }
    # JSON-safe (paths, arrays) before the harness writes it with the run's provenance.
    path = write_results("marl_matrix", json.loads(to_json(results)), out, provenance)
    print(markdown_table(results))
    print(f"wrote {path}")
    return results


def seed_outcome(held_out: dict[str, Any]) -> dict[str, Any]:
    """One seed's held-out return, outcome rates and the move it settled on."""
    rates = {name: held_out["episodes"][name]["mean"] for name in OUTCOMES}
    shares = [rates[f"{move}_rate"] for move in MOVES]
    top = int(np.argmax(shares))
    return {
        "return": held_out["return_per_seed"][0],
        **rates,
        "settled_on": MOVES[top].upper() if shares[top] >= SETTLED else "mixed",
    }


def algorithm_results(summaries: list[dict[str, Any]]) -> dict[str, Any]:
    """Per seed and across seeds, for the final and the best-checkpoint actors."""
    results: dict[str, Any] = {}
    for which in ("final", "best"):
        seeds = [seed_outcome(summary[which]) for summary in summaries]
        mean, low, high = mean_ci(np.array([seed["return"] for seed in seeds]))
        settled = [seed["settled_on"] for seed in seeds]
        results[which] = {
            "return_across_seeds": {"mean": mean, "low": low, "high": high, "n": len(seeds)},
            **{name: float(np.mean([seed[name] for seed in seeds])) for name in OUTCOMES},
            "settled_on": {name: settled.count(name) for name in sorted(set(settled))},
            "seeds": seeds,
        }
    return results


def markdown_table(results: dict[str, Any]) -> str:
    """Held-out returns (CI across seeds, or over episodes for scripted teams) and outcomes."""
    lines = [
        "| team | return, final | return, best | optimal joint action | miscoordination "
        "| settled on (final, seeds) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for algorithm, outcome in results["algorithms"].items():
        final, best = outcome["final"], outcome["best"]
        settled = ", ".join(f"{name} {count}" for name, count in final["settled_on"].items())
        lines.append(
            f"| {algorithm.upper()} ({final['return_across_seeds']['n']} seeds) "
            f"| {format_interval(final['return_across_seeds'])} "
            f"| {format_interval(best['return_across_seeds'])} "
            f"| {final['optimal_joint_action_rate']:.2f} | {final['miscoordination_rate']:.2f} "
            f"| {settled} |"
        )
    for name, metrics in sorted(results["references"].items()):
        lines.append(
            f"| {name} | {format_interval(metrics['episode_return'])} | "
            f"| {metrics['optimal_joint_action_rate']['mean']:.2f} "
            f"| {metrics['miscoordination_rate']['mean']:.2f} | |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    run_script(MarlMatrixConfig, run)
