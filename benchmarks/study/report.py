"""The study's markdown report: its tables, built from the results JSON."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from alemlite.stats import IQM_CUT, RESAMPLES
from benchmarks.harness import format_interval
from benchmarks.study.config import ANCHORS, SCALES, method_label
from benchmarks.study.statistics import CHECKPOINTS, aggregates, normalisation

CONCLUSIONS_HEADING = "## Conclusions"
ALL_WAIT_PAPER_RETURN = 0.75  # the `paper` reward's degenerate optimum (README)
CRITIC_REWARDS = {"agent": "each seat's own reward", "team": "the table's mean reward"}


def _p(value: float | None) -> str:
    if value is None or not np.isfinite(value):
        return "n/a"
    if value == 0:  # below the smallest float64
        return "< 1e-300"
    return f"{value:.1e}" if value < 1e-3 else f"{value:.3f}"


def _g(value: float | None) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.2f}"


def _test(comparison: Mapping[str, float]) -> str:
    """Hedges' g with Welch's p over episodes and over seed means."""
    return (
        f"{_g(comparison['hedges_g'])} (p {_p(comparison['welch_p'])}; "
        f"seeds {_p(comparison['seed_welch_p'])})"
    )


def _episodes(result: Mapping[str, Any], metric: str, digits: int = 2) -> str:
    return format_interval(result["episodes"][metric], digits)


def returns_table(setting_list: list[dict]) -> list[str]:
    lines = [
        "| method | N | untrained | final | best | final vs untrained: g (p) "
        "| best vs untrained: g (p) | best vs final: g (p) | best at update |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for setting in setting_list:
        for method, run in setting["methods"].items():
            c = run["comparisons"]
            lines.append(
                f"| {method_label(method)} | {setting['num_philosophers']} "
                f"| {format_interval(run['initial']['return_across_seeds'])} "
                f"| {format_interval(run['final']['return_across_seeds'])} "
                f"| {format_interval(run['best']['return_across_seeds'])} "
                f"| {_test(c['final_vs_initial'])} | {_test(c['best_vs_initial'])} "
                f"| {_test(c['best_vs_final'])} "
                f"| {', '.join(map(str, run['best_update_per_seed']))} of {run['num_updates']} |"
            )
    return lines


def outcomes_table(setting_list: list[dict]) -> list[str]:
    lines = [
        "| policy | N | return | meals per episode | deadlock rate | fairness "
        "| zero-meal episodes | vs resource ordering: g (p) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for setting in setting_list:
        size = setting["num_philosophers"]
        for method, run in setting["methods"].items():
            for which in ("final", "best"):
                result = run[which]
                versus = run["comparisons"].get(f"{which}_vs_resource_ordering")
                versus_cell = (
                    f"{_g(versus['hedges_g'])} (p {_p(versus['welch_p'])})" if versus else ""
                )
                lines.append(
                    f"| {method_label(method)}, {which} | {size} "
                    f"| {_episodes(result, 'episode_return')} "
                    f"| {_episodes(result, 'meals_total', 1)} | {_episodes(result, 'deadlock')} "
                    f"| {_episodes(result, 'fairness')} | {_episodes(result, 'zero_meals')} "
                    f"| {versus_cell} |"
                )
        for name in ANCHORS:
            result = setting["references"][name]
            lines.append(
                f"| {name} | {size} | {_episodes(result, 'episode_return')} "
                f"| {_episodes(result, 'meals_total', 1)} | {_episodes(result, 'deadlock')} "
                f"| {_episodes(result, 'fairness')} | {_episodes(result, 'zero_meals')} | |"
            )
    return lines


def paper_optimum_table(settings: Mapping[str, dict]) -> list[str]:
    """Under `paper`: how far each method went towards the all-WAIT optimum."""
    lines = [
        "| method | N | final return | final meals | final zero-meal episodes "
        "| best return | best meals | best zero-meal episodes |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for setting in settings.values():
        if setting["reward"] != "paper":
            continue
        for method, run in setting["methods"].items():
            cells = [
                f"{_episodes(run[w], 'episode_return', 3)} | {_episodes(run[w], 'meals_total', 1)} "
                f"| {_episodes(run[w], 'zero_meals')}"
                for w in ("final", "best")
            ]
            lines.append(
                f"| {method_label(method)} | {setting['num_philosophers']} "
                f"| {cells[0]} | {cells[1]} |"
            )
    return lines


def curriculum_table(curriculum: Mapping[str, dict]) -> list[str]:
    lines = [
        "| method | training | final | best | final zero-meal episodes | last size trained "
        "| curriculum vs direct, final: g (p) | curriculum vs direct, best: g (p) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for method, pair in curriculum.items():
        for name in ("direct", "curriculum"):
            run = pair[name]
            last = run.get("curriculum", {}).get("final_size", run["num_philosophers"])
            tests = (
                f"{_test(pair['comparisons']['final_curriculum_vs_direct'])} "
                f"| {_test(pair['comparisons']['best_curriculum_vs_direct'])}"
                if name == "curriculum"
                else " | "
            )
            final = format_interval(run["final"]["return_across_seeds"])
            best = format_interval(run["best"]["return_across_seeds"])
            lines.append(
                f"| {method_label(method)} | {name} | {final} | {best} "
                f"| {_episodes(run['final'], 'zero_meals')} | {last} | {tests} |"
            )
    return lines


def aggregate_lines(results: Mapping[str, Any]) -> list[str]:
    """rliable's aggregates over the settings: the normalisation, IQM and optimality gap per
    method, and the probability of improvement per pair of methods."""
    settings = results["settings"]
    runs_per_task = {
        len(run["final"]["return_per_seed"])
        for setting in settings.values()
        for run in setting["methods"].values()
    }
    runs = " or ".join(map(str, sorted(runs_per_task)))
    lines = [
        f"Each setting (reward, N) is a task and each seed a run: {len(settings)} tasks of "
        f"{runs} runs per method. A run's score is its mean test return normalised within "
        "its setting, so that settings on different reward scales can be pooled: 0 is uniform "
        "random play and 1 the best scripted policy, both on the same test episodes "
        "(scale below). A score above 1 beats every hand-written policy on that table. The "
        "best scripted policy of each setting sets 1, rather than one fixed policy, so that 1 "
        "means the same thing everywhere and no setting is stretched by a reference that "
        "barely beats random play there.",
        "",
        "| setting | uniform random (0) | best scripted policy (1) |",
        "| --- | --- | --- |",
    ]
    for setting in settings.values():
        scale = normalisation(setting)
        lines.append(
            f"| {setting['reward']}, N = {setting['num_philosophers']} | {scale['random']:.3f} "
            f"| {scale['best_scripted']:.3f} ({scale['best_policy']}) |"
        )
    summary = aggregates(results)
    lines += [
        "",
        "IQM: the mean of the middle half of all runs of all tasks "
        f"(`scipy.stats.trim_mean(scores, {IQM_CUT})`, as in rliable: floor(n / 4) runs cut "
        "from each end). Optimality gap: the mean of max(0, 1 - score), how far runs fall "
        "short of the best scripted policy. P(X > Y): the chance that a run of X scores above "
        "a run of Y on the same task (ties count half), averaged over tasks. 95% intervals "
        f"from the stratified bootstrap ({RESAMPLES:,} resamples, percentile, seed 0): seeds "
        "are resampled within each task, never across tasks.",
        "",
        "| method | IQM, final | IQM, best | optimality gap, final | optimality gap, best |",
        "| --- | --- | --- | --- | --- |",
    ]
    for method, result in summary["methods"].items():
        cells = [
            format_interval(result[which][statistic])
            for statistic in ("iqm", "optimality_gap")
            for which in CHECKPOINTS
        ]
        lines.append(f"| {method_label(method)} | {' | '.join(cells)} |")
    lines += [
        "",
        "| X vs Y | P(X > Y), final | P(X > Y), best |",
        "| --- | --- | --- |",
    ]
    for (x, y), result in summary["improvement"].items():
        cells = [format_interval(result[which]) for which in CHECKPOINTS]
        lines.append(f"| {method_label(x)} vs {method_label(y)} | {' | '.join(cells)} |")
    return lines


def budget_lines(results: Mapping[str, Any]) -> list[str]:
    budget = results["budget"]
    lines = [
        "| method | N | seeds | tables | updates | table steps per seed | agent steps per seed "
        "| training wall time (s) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    runs = [run for s in results["settings"].values() for run in s["methods"].values()]
    runs += [pair["curriculum"] for pair in results["curriculum"].values()]
    seen = set()
    for run in runs:
        key = (run["algorithm"], run["num_philosophers"], "curriculum" in run)
        if key in seen:
            continue
        seen.add(key)
        name = method_label(run["algorithm"]) + (", curriculum" if "curriculum" in run else "")
        same = [
            r["wall_s"]
            for r in runs
            if (r["algorithm"], r["num_philosophers"], "curriculum" in r) == key
        ]
        lines.append(
            f"| {name} | {run['num_philosophers']} | {run['num_seeds']} | {run['num_envs']} "
            f"| {run['num_updates']} | {run['env_steps_per_seed']:,} "
            f"| {run['agent_steps_per_seed']:,} | {' / '.join(f'{s:.0f}' for s in same)} |"
        )
    lines += [
        "",
        f"Rollouts of {budget['num_steps']} steps (episodes are 30 steps), "
        f"{budget['num_checkpoints']} checkpoints per run evaluated on "
        f"{budget['eval_episodes']} validation episodes, {budget['test_episodes']} test episodes "
        "per seed (base seed 2,000,000) for the untrained, final and best actors and the "
        "scripted policies. Wall times are per reward (listed in the order of the rewards).",
    ]
    return lines


def kept_conclusions(previous_report: str) -> str:
    """The hand-written `## Conclusions` section of an earlier report, if any."""
    index = previous_report.find(CONCLUSIONS_HEADING)
    return previous_report[index:].strip() + "\n" if index >= 0 else ""


def markdown_report(
    results: Mapping[str, Any],
    figures: Mapping[str, Path],
    report_dir: Path,
    conclusions: str = "",
) -> str:
    """The study's report, generated from the results; `conclusions` is appended verbatim."""
    config, machine = results["config"], results["machine"]
    # Results written before the study recorded it learned from each seat's own reward.
    critic_rewards = config.get("ppo", {}).get("rewards", "agent")
    settings = results["settings"]
    by_reward: dict[str, list[dict]] = {}
    for setting in settings.values():
        by_reward.setdefault(setting["reward"], []).append(setting)

    def figure(name: str, alt: str) -> list[str]:
        if name not in figures:
            return []
        return [f"![{alt}]({os.path.relpath(figures[name], report_dir)})", ""]

    command = machine["command"]
    # Results written before `--publish` existed were all published.
    json_name = f"coordination_study_{config['scale']}.json"
    scale = "" if config["scale"] == "cpu" else f" --scale {config['scale']}"
    if config.get("publish", True):
        results_file = f"benchmarks/results/{json_name}"
        rebuild = f"python -m benchmarks.coordination_study --report-only --publish{scale}"
    else:
        results_file = f"{json_name}, beside this report"
        rebuild = f"python -m benchmarks.coordination_study --report-only --out PATH{scale}"
    lines = [
        "# Coordination study: group-relative training on dining",
        "",
        "Can critic-free, group-relative training (GRPO, SRPO, TeamTR) teach parameter-shared "
        "philosophers to share forks, as well as IPPO and MAPPO do and as well as the scripted "
        "resource-ordering policy? Each method is trained on dining tables of "
        f"N = {', '.join(str(s['num_philosophers']) for s in by_reward[next(iter(by_reward))])} "
        "under the `paper` reward (the four-term episode score whose all-WAIT optimum scores "
        f"{ALL_WAIT_PAPER_RETURN} with zero meals) and under the `shaped` reward, "
        f"{results['budget']['num_seeds']} seeds vmapped per run.",
        "",
        "Every run's untrained start (its initial parameters), final checkpoint and best "
        "checkpoint (highest validation return per seed) are evaluated on the same held-out "
        "test episodes as the scripted policies. Intervals are 95%: stratified bootstrap over "
        "seeds within settings for the aggregates, across seed means (Student-t) for the "
        "returns tables, over all episodes (Student-t; Wilson for rates) elsewhere. "
        "Comparisons give Hedges' g over all test episodes with Welch's p over episodes and, "
        "in brackets, over the seed means (the seeds are the independent replicates, so that "
        "p is the honest one; with few seeds it is weak).",
        "",
        "## How it was run",
        "",
        "```bash",
        command,
        f"{rebuild}   # rebuild plots and this report from the JSON",
        "```",
        "",
        f"Machine: {machine['cpu_count']} x {machine['processor']} "
        f"({machine['platform']}, {machine['device_kind']}), JAX {machine['libraries']['jax']}, "
        f"Python {machine['libraries']['python']}, commit {machine['commit']}, {machine['date']}. "
        f"Training wall time {results['train_wall_s'] / 60:.0f} min summed over the runs; the "
        f"invocation that wrote these results took {results['wall_s'] / 60:.0f} min (runs "
        f"finished earlier are reused, not retrained). Results: `{results_file}`.",
        "",
        f"Budget of this run (`--scale {config['scale']}`) below; the presets: "
        + "; ".join(
            f"`{name}`: {b.num_seeds} seeds, {b.num_envs:,} tables, {b.num_updates:,} updates, "
            f"{b.num_checkpoints} checkpoints, {b.test_episodes:,} test episodes"
            for name, b in SCALES.items()
        )
        + ". TeamTR plays one rollout per seat per "
        "update, so it gets 1/N of the updates: the same table steps and the same number of "
        "policy-update stages (one per seat) as the other methods. Default hyperparameters "
        "(2 x 64 tanh MLPs, Adam 2.5e-3, clip 0.2, entropy 0.01, 4 epochs x 4 minibatches; "
        f"IPPO and MAPPO learn from {CRITIC_REWARDS[critic_rewards]}; group size 8, team "
        "returns, no KL penalty, TeamTR KL budget 0.02).",
        "",
        *budget_lines(results),
        "",
    ]
    lines += [
        "## Aggregate over the settings",
        "",
        *aggregate_lines(results),
        "",
        *figure("performance_profiles", "performance profiles of normalised returns"),
    ]
    for reward, setting_list in by_reward.items():
        lines += [
            f"## Returns under the `{reward}` reward",
            "",
            *returns_table(setting_list),
            "",
            f"### Outcomes under the `{reward}` reward (test episodes, pooled over seeds)",
            "",
            *outcomes_table(setting_list),
            "",
            *figure(f"curves_{reward}", f"learning curves, {reward} reward"),
        ]
    if "paper" in by_reward:
        lines += [
            "## Does the `paper` reward lead to its zero-meal optimum?",
            "",
            f"All-WAIT scores {ALL_WAIT_PAPER_RETURN} with no meals and no deadlock; a method "
            "that converged to it would show 0 meals and a zero-meal fraction of 1.",
            "",
            *paper_optimum_table(settings),
            "",
        ]
    lines += [*figure("final_returns", "final returns with 95% CIs"), ""]
    if results["curriculum"]:
        curriculum = config["curriculum"]
        # The flag as the run spelled it (studies before environment specs: --curriculum.sizes).
        key = "values" if "values" in curriculum else "sizes"
        lines += [
            "## Curriculum against direct training at the largest size",
            "",
            f"`--curriculum.{key} {' '.join(map(str, curriculum[key]))} "
            f"--curriculum.patience {curriculum['patience']} --curriculum.min-improvement "
            f"{curriculum['min_improvement']} --curriculum.mix {curriculum['mix']}`, "
            f"`{config['curriculum_reward']}` reward, on the same budget (updates, tables, "
            "seeds) as the direct run, both evaluated at the largest size.",
            "",
            *curriculum_table(results["curriculum"]),
            "",
            *figure("curriculum", "curriculum against direct training"),
        ]
    lines.append(conclusions or f"{CONCLUSIONS_HEADING}\n\nNot yet written for these numbers.\n")
    return "\n".join(lines).rstrip() + "\n"
