"""The reference agent of one setting: every algorithm trained, the best on validation shipped.

Trains each algorithm (several seeds vmapped in one run) on the setting, picks the checkpoint
with the highest validation return across algorithms and seeds (each run keeps its best
checkpoint per seed, exported for its best seed), and replays that policy and the
environment's scripted reference policies on the same held-out test episodes: a Welch test
over episodes for the shipped seed, and a one-sided t-test over the chosen method's seeds.
Records each run's validation curve and projects, on the chosen run's late trend, the agent
steps at which it would reach the best scripted policy's return (`projection`).
Writes the results JSON and the learning curves in a fresh folder under `runs/bench/`, or,
with `--publish`, into `benchmarks/results/` and `docs/figures/`, and ships the policy with
its `CARD.md` under `baselines/pretrained/`.

A preset (`dining_references`, `matrix_references`) is a `ReferenceConfig` that names its
environment, options, files and the setting in words.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
from scipy import stats

import baselines
from alemlite.core.spec import EnvOptions
from alemlite.evaluation import evaluate
from alemlite.stats import mean_ci, welch_t_test
from baselines.common.config import (
    CurriculumConfig,
    GroupConfig,
    ImitationConfig,
    NetworkConfig,
    PPOConfig,
    TrainConfig,
    algorithm_label,
)
from baselines.common.reporting import MetricsLog, to_json
from baselines.common.trainer import make_env, train
from baselines.train import reference_policies
from benchmarks.harness import RESULTS_DIR, format_interval, output_path, refuse_earlier_runs
from benchmarks.provenance import begin_run

FIGURES_DIR = Path(__file__).resolve().parents[1] / "docs" / "figures"
# A reference must beat a scripted policy by this p-value (over episodes, and by seed).
SIGNIFICANCE = 0.01


@dataclass(frozen=True)
class ReferenceConfig:
    """The training budget of a reference; presets add their setting's options."""

    env_name: ClassVar[str]
    algorithms: tuple[str, ...] = ("ippo", "mappo")
    num_updates: int = 200
    num_seeds: int = 4
    num_envs: int = 64
    num_steps: int = 32
    test_episodes: int = 512
    eval_episodes: int = 128
    """Validation episodes per checkpoint (they choose the best checkpoint)."""
    network: NetworkConfig = field(default_factory=NetworkConfig)
    ppo: PPOConfig = field(default_factory=PPOConfig)
    group: GroupConfig = field(default_factory=GroupConfig)
    imitation: ImitationConfig = field(default_factory=ImitationConfig)
    """dagger: the scripted policy it imitates and how long that teacher plays."""
    curriculum: CurriculumConfig = field(default_factory=CurriculumConfig)
    """Stages of the environment's curriculum option (Craft: the building cost); the best
    checkpoint is chosen at the last, the setting the reference ships for."""
    init_actor: str = ""
    """A trained policy whose actor starts every run (a shipped name or an exported policy
    directory; its network options must be given); empty: fresh actors."""
    runs_dir: Path = Path("runs/references")
    """Run directories (checkpoints inside: an interrupted run resumes with --reuse-runs)."""
    out: Path | None = None
    """Results JSON; default: the preset's file in a fresh folder under runs/bench/
    (benchmarks/results/ with --publish, which also ships the policy)."""
    publish: bool = False
    """Write the published results and figures and ship the policy, replacing them."""
    reuse_runs: bool = False
    """Collect runs already finished in runs_dir and resume unfinished ones from their
    checkpoints, instead of refusing a run directory that exists."""
    allow_dirty: bool = False
    """Publish from a tree with uncommitted changes (the results are marked dirty)."""

    # ---- what a preset says about its setting ------------------------------------------------
    def options(self) -> EnvOptions:
        raise NotImplementedError

    @property
    def shipped_name(self) -> str:
        """The policy's name in `baselines/pretrained/` (`baselines.load(NAME)`)."""
        raise NotImplementedError

    @property
    def results_name(self) -> str:
        """The results file's name in `benchmarks/results/`."""
        raise NotImplementedError

    @classmethod
    def trained_on(cls, config: dict[str, Any]) -> str:
        """The setting in words, from a results file's `config` (the card says it)."""
        raise NotImplementedError


def train_config(config: ReferenceConfig, algorithm: str, run_dir: Path) -> TrainConfig:
    return TrainConfig(
        algorithm=algorithm,
        env=config.env_name,
        options=config.options(),
        num_envs=config.num_envs,
        num_steps=config.num_steps,
        num_updates=config.num_updates,
        updates_per_chunk=10,
        eval_interval=max(10, config.num_updates // 20 // 10 * 10),
        num_seeds=config.num_seeds,
        eval_episodes=config.eval_episodes,
        test_episodes=config.test_episodes,
        network=config.network,
        ppo=config.ppo,
        group=config.group,
        imitation=config.imitation,
        curriculum=config.curriculum,
        init_actor=config.init_actor,
        out=run_dir,
        # An interrupted run (checkpoints inside) continues where it stopped.
        resume=any((run_dir / "checkpoints").glob("*")),
        progress=False,
    )


def compare_on_test_episodes(policy_dir: Path, test_episodes: int, test_seed: int) -> dict:
    """The shipped policy and every scripted reference policy on the same test episodes: mean
    return with its 95% interval over episodes, and the policy's Welch test against each."""
    policy = baselines.load(str(policy_dir))
    env = policy.make_env()
    params = env.default_params
    learned = evaluate(env, policy.state_policy(env), params, test_episodes, test_seed)
    returns = np.asarray(learned["episode_return"])
    mean, low, high = mean_ci(returns)
    scripted = {}
    env_name = policy.description["env"]["name"]
    for name, scripted_policy in reference_policies(env_name, env).items():
        theirs = np.asarray(
            evaluate(env, scripted_policy, params, test_episodes, test_seed)["episode_return"]
        )
        t, p = welch_t_test(returns, theirs)
        scripted[name] = {
            "return": dict(zip(("mean", "low", "high"), mean_ci(theirs), strict=True)),
            "welch_t": t,
            "welch_p": p,
            "beaten": bool(returns.mean() > theirs.mean() and p < SIGNIFICANCE),
        }
    return {
        "return": {"mean": mean, "low": low, "high": high, "n": int(returns.size)},
        "scripted": scripted,
    }


def choose(runs: dict[str, dict]) -> tuple[str, int]:
    """The algorithm and seed whose best checkpoint has the highest validation return."""
    return max(
        (
            (name, seed)
            for name, summary in runs.items()
            for seed in range(len(summary["best"]["validation_return_per_seed"]))
        ),
        key=lambda pick: runs[pick[0]]["best"]["validation_return_per_seed"][pick[1]],
    )


def validation_curve(run_dir: Path) -> list[dict[str, Any]]:
    """A run's validation evaluations in order: update, agent steps a seed, each seed's return
    (what its learning-curve figure draws)."""
    return [
        {key: record[key] for key in ("update", "agent_steps", "validation_return")}
        for record in MetricsLog(run_dir / "metrics.jsonl").read()
        if record["kind"] == "eval"
    ]


MIN_FITTED_EVALUATIONS = 3


def projection(curve: list[dict[str, Any]], scripted: dict[str, dict]) -> dict[str, Any]:
    """Where the trend of a run's validation return (mean over seeds) reaches the best
    scripted policy's test return: a least-squares line in log10(agent steps) through the
    last half of the evaluations, extrapolated (an estimate, not a measurement). No
    projection where the trend does not rise or the last half holds fewer than
    `MIN_FITTED_EVALUATIONS` evaluations."""
    target_policy = max(scripted, key=lambda name: scripted[name]["return"]["mean"])
    target = scripted[target_policy]["return"]["mean"]
    fitted = curve[(len(curve) - 1) // 2 :]
    found = {
        "target_policy": target_policy,
        "target_return": target,
        "fitted_evaluations": len(fitted),
        "fitted_from_agent_steps": fitted[0]["agent_steps"] if fitted else None,
        "return_per_tenfold_steps": None,
        "slope_stderr": None,
        "agent_steps": None,
    }
    if len(fitted) < MIN_FITTED_EVALUATIONS:
        return found
    fit = stats.linregress(
        np.log10([row["agent_steps"] for row in fitted]),
        [float(np.mean(row["validation_return"])) for row in fitted],
    )
    found["return_per_tenfold_steps"] = float(fit.slope)
    found["slope_stderr"] = float(fit.stderr)
    if fit.slope > 0:
        found["agent_steps"] = float(10 ** ((target - fit.intercept) / fit.slope))
    return found


def p_value(p: float | None) -> str:
    """A p-value; one below float precision (two nearly constant samples) prints as < 1e-300,
    an undefined one (samples without spread: NaN, or null once written as JSON) as such."""
    if p is None or np.isnan(p):
        return "undefined"
    return f"{p:.2g}" if p > 0 else "< 1e-300"


def by_seed_p(seed_returns: list[float], scripted_mean: float) -> float:
    """One-sided p that the method's seeds (each its best checkpoint on the test episodes)
    score above `scripted_mean`: a one-sample t-test over seeds, the replicates that a
    new training run would draw (the episodes' p says only that this seed is better)."""
    return float(stats.ttest_1samp(seed_returns, scripted_mean, alternative="greater").pvalue)


def chosen_method_label(results: dict) -> str:
    """How the chosen reference's method is written: its algorithm (and the policy it started
    from, `init_actor`), or for imitation what the teacher's share made it (results from
    before the cloning updates, the final share and `mix_by` lack them: DAgger, drawn at
    every step)."""
    algorithm = results["chosen"]["algorithm"]
    start = results.get("config", {}).get("init_actor")
    if start:
        return f"{algorithm_label(algorithm)} from `{start}`"
    if algorithm != "dagger":
        return algorithm_label(algorithm)
    imitation = results["config"]["imitation"]
    final = imitation.get("final_teacher_share", 0.0)
    if final == 1.0:
        return "behaviour cloning"
    if final == 0.0:
        dagger = "DAgger"
    elif imitation.get("mix_by", "step") == "episode":
        dagger = f"DAgger on {1 - final:.0%} of the episodes"
    else:
        dagger = f"DAgger on {1 - final:.0%} of the steps"
    cloning_updates = imitation.get("cloning_updates", 0)
    if cloning_updates:
        return f"behaviour cloning for {cloning_updates} updates, then {dagger}"
    return dagger


def card(name: str, results: dict, results_file: str, trained_on: str) -> str:
    """The shipped policy's card: method, budget, seeds, held-out return, every scripted
    policy on the same test episodes (over episodes for the shipped seed, over seeds for
    the method), and where it falls short."""
    chosen = results["chosen"]
    method = chosen_method_label(results)
    run = results["runs"][chosen["algorithm"]]
    test = results["test"]
    seeds = run["best"]["return_per_seed"]
    steps = run["agent_steps_per_seed"] * chosen["update"] // run["num_updates"]
    lines = [
        f"# {name}",
        "",
        f"- method: {method}, feed-forward actor "
        f"{results['config']['network']['num_layers']}x{results['config']['network']['hidden_size']}"
        f", trained on {trained_on}",
        f"- chosen: the best validation return across {', '.join(results['runs'])} and "
        f"{run['num_seeds']} seeds each: seed {chosen['seed']}, update {chosen['update']} of "
        f"{run['num_updates']} ({steps / 1e6:.2f} M agent steps; the run: "
        f"{run['agent_steps_per_seed'] / 1e6:.2f} M per seed)",
        f"- held-out return: {format_interval(test['return'])} (95% interval over "
        f"{test['return']['n']} test episodes from seed {run['test_seed']:,})",
        f"- every seed of {method}, best checkpoint, on the test episodes: "
        + ", ".join(f"{value:.2f}" for value in seeds),
        f"- trained with `{results['machine']['command']}` at commit "
        f"{results['machine']['commit'][:12]}; numbers from `{results_file}`",
        "",
        f"| scripted policy | return (same test episodes) | Welch p, episodes | "
        f"beaten (p < {SIGNIFICANCE}) | t-test p, {len(seeds)} seeds | beaten by seed |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    short, short_by_seed = [], []
    for policy, summary in test["scripted"].items():
        p_seeds = by_seed_p(seeds, summary["return"]["mean"])
        by_seed = p_seeds < SIGNIFICANCE  # undefined (False) when every seed scores its mean
        short += [] if summary["beaten"] else [policy]
        short_by_seed += [] if by_seed else [policy]
        lines.append(
            f"| {policy} | {format_interval(summary['return'])} | {p_value(summary['welch_p'])} "
            f"| {'yes' if summary['beaten'] else 'no'} | {p_value(p_seeds)} "
            f"| {'yes' if by_seed else 'no'} |"
        )
    lines.append("")
    if not short and not short_by_seed:
        lines.append("Beats every scripted policy, over episodes and by seed.")
    else:
        if short:
            lines.append(f"Falls short over episodes of: {', '.join(short)}.")
        if short_by_seed:
            lines.append(
                f"By seed, {method}'s margin is not significant at "
                f"p < {SIGNIFICANCE} over: {', '.join(short_by_seed)} (a new training run "
                "may score below them)."
            )
    return "\n".join(lines) + "\n"


def run(config: ReferenceConfig) -> dict[str, Any]:
    """Train, choose, compare and ship the reference of `config`'s setting."""
    shipped_name = config.shipped_name
    run_dirs = {name: config.runs_dir / f"{name}-{shipped_name}" for name in config.algorithms}
    refuse_earlier_runs(run_dirs.values(), config.reuse_runs)
    benchmark = Path(config.results_name).stem
    out = output_path(config.out, config.publish, RESULTS_DIR / config.results_name, benchmark)
    figures_dir = FIGURES_DIR if config.publish else out.parent / "figures"
    shipped = baselines.PRETRAINED_DIR / shipped_name
    destinations = [out, figures_dir, *([shipped] if config.publish else [])]
    provenance = begin_run(destinations, config.allow_dirty, config.publish)
    figures_dir.mkdir(parents=True, exist_ok=True)
    runs = {}
    for name, run_dir in run_dirs.items():
        if (run_dir / "summary.json").exists():
            runs[name] = json.loads((run_dir / "summary.json").read_text())
        else:
            training = train_config(config, name, run_dir)
            env = make_env(training)
            runs[name] = train(training, env, references=reference_policies(config.env_name, env))
        setting = shipped_name.removeprefix(f"{config.env_name}-")
        figure = f"{config.env_name}-reference-{setting}-{name}.png"
        shutil.copy(run_dir / "learning_curve.png", figures_dir / figure)
        runs[name]["validation_curve"] = validation_curve(run_dir)
    algorithm, seed = choose(runs)
    policy_dir = run_dirs[algorithm] / "policy" / "best"
    description = json.loads((policy_dir / "policy.json").read_text())
    # Each run exports the best checkpoint of its best seed: the one chosen here.
    assert description["seed_index"] == seed, (description, seed)
    results = {
        "config": {**dataclasses.asdict(config), "out": str(out)},
        "runs": runs,
        "chosen": {"algorithm": algorithm, "seed": seed, "update": description["update"]},
        "test": compare_on_test_episodes(
            policy_dir, config.test_episodes, runs[algorithm]["test_seed"]
        ),
    }
    results["projection"] = projection(
        runs[algorithm]["validation_curve"], results["test"]["scripted"]
    )
    results["machine"] = provenance.describe()
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(to_json(results))
    ship_dir = shipped if config.publish else out.parent / shipped_name
    shutil.rmtree(ship_dir, ignore_errors=True)
    shutil.copytree(policy_dir, ship_dir)
    trained_on = config.trained_on(results["config"])
    (ship_dir / "CARD.md").write_text(card(shipped_name, results, config.results_name, trained_on))
    print((ship_dir / "CARD.md").read_text())
    print(f"wrote {out} and {ship_dir}")
    return results
