"""The study's statistics and report, built from small known per-episode arrays."""

import dataclasses

import numpy as np
import pytest

from alemlite.core.errors import ConfigError
from alemlite.stats import hedges_g, welch_t_test
from baselines.common.config import CurriculumConfig
from baselines.common.reporting import to_json
from baselines.common.trainer import make_env
from benchmarks.study.config import SCALES, StudyConfig
from benchmarks.study.main import run as run_study
from benchmarks.study.plots import plot_study
from benchmarks.study.report import (
    CONCLUSIONS_HEADING,
    aggregate_lines,
    curriculum_table,
    kept_conclusions,
    markdown_report,
)
from benchmarks.study.runs import train_config
from benchmarks.study.statistics import comparison, outcome, run_result

RNG = np.random.default_rng(0)


def episodes(returns, meals, seeds=2):
    """Per-episode arrays `(seeds, episodes)` with the given returns and meals."""
    returns = np.asarray(returns, float).reshape(seeds, -1)
    meals = np.asarray(meals, float).reshape(seeds, -1)
    return {
        "episode_return": returns,
        "meals_total": meals,
        "deadlock": meals < 0,  # never
        "fairness": np.ones_like(returns),
        "starvation": np.zeros_like(returns),
    }


def fake_run(method, size, reward, shift):
    untrained = episodes(RNG.normal(0.6, 0.05, 8), RNG.integers(1, 9, 8))
    # The final actor waits in 3 of its 8 episodes (zero meals), the best never does.
    final = episodes(RNG.normal(0.6 + shift, 0.05, 8), [0, 0, 4, 5, 0, 6, 7, 8])
    best = episodes(RNG.normal(0.7 + shift, 0.05, 8), [3, 4, 4, 5, 6, 6, 7, 8])
    references = {"resource_ordering": episodes(RNG.normal(0.77, 0.01, 4), [22] * 4, seeds=1)}
    info = {
        "algorithm": method,
        "reward": reward,
        "num_philosophers": size,
        "num_seeds": 2,
        "num_envs": 16,
        "num_updates": 10,
        "env_steps_per_seed": 5120,
        "agent_steps_per_seed": 5120 * size,
        "wall_s": 12.0,
        "best_update_per_seed": [5, 10],
        "validation_curve": [(0, [0.6, 0.61]), (2560, [0.65, 0.7]), (5120, [0.7, 0.72])],
    }
    run = run_result(
        {"initial": untrained, "final": final, "best": best}, references, info
    )  # fmt: skip
    return run, untrained, final, best, references


def test_comparisons_are_welch_and_hedges_of_alemlite_stats_on_known_numbers():
    a = np.array([[1.0, 2.0, 3.0, 4.0], [2.0, 3.0, 4.0, 5.0]])
    b = np.array([[0.0, 1.0, 1.0, 2.0], [0.5, 0.5, 1.5, 1.0]])
    result = comparison(a, b)
    t, p = welch_t_test(a.ravel(), b.ravel())
    assert result["welch_t"] == pytest.approx(t) and result["welch_p"] == pytest.approx(p)
    assert result["hedges_g"] == pytest.approx(hedges_g(a.ravel(), b.ravel()))
    assert result["difference"] == pytest.approx(3.0 - 0.9375)
    # Over seed means: [2.5, 3.5] against [1.0, 0.875].
    assert result["seed_welch_p"] == pytest.approx(welch_t_test([2.5, 3.5], [1.0, 0.875])[1])
    # One seed: no test over seeds.
    assert np.isnan(comparison(a[:1], b)["seed_welch_p"])


def test_outcome_counts_zero_meal_episodes_and_a_ci_across_seeds():
    result = outcome(episodes([0.75] * 4 + [1.0, 0.5, 1.0, 0.5], [0, 0, 0, 0, 3, 0, 2, 1]))
    zero = result["episodes"]["zero_meals"]
    assert zero["mean"] == pytest.approx(5 / 8) and zero["ci"] == "wilson"
    assert result["return_per_seed"] == pytest.approx([0.75, 0.75])
    across = result["return_across_seeds"]
    assert across["mean"] == across["low"] == across["high"] == pytest.approx(0.75)
    assert result["episodes"]["meals_total"]["mean"] == pytest.approx(6 / 8)
    assert result["episodes"]["deadlock"]["mean"] == 0.0


def test_run_result_compares_each_checkpoint_with_its_untrained_start_and_the_reference():
    run, untrained, final, best, references = fake_run("grpo", 5, "paper", 0.0)
    comparisons = run["comparisons"]
    assert comparisons["best_vs_initial"]["hedges_g"] == pytest.approx(
        hedges_g(best["episode_return"].ravel(), untrained["episode_return"].ravel())
    )
    assert comparisons["final_vs_resource_ordering"]["welch_p"] == pytest.approx(
        welch_t_test(
            final["episode_return"].ravel(),
            references["resource_ordering"]["episode_return"].ravel(),
        )[1]
    )
    assert run["final"]["episodes"]["zero_meals"]["mean"] == pytest.approx(3 / 8)
    assert run["best"]["episodes"]["zero_meals"]["mean"] == 0.0


def fake_results():
    settings = {}
    for reward in ("paper", "shaped"):
        for size in (5, 15):
            runs = {
                m: fake_run(m, size, reward, 0.1 * i)[0] for i, m in enumerate(("grpo", "srpo"))
            }
            anchors = {
                name: outcome(episodes([0.75] * 4, [0] * 4 if name == "all_wait" else [8] * 4, 1))
                for name in ("resource_ordering", "backoff", "all_wait")
            }
            anchors["uniform_random"] = outcome(episodes([0.5] * 4, [8] * 4, 1))
            settings[f"{reward}-{size}"] = {
                "reward": reward,
                "num_philosophers": size,
                "references": anchors,
                "methods": runs,
            }
    direct, *_ = fake_run("grpo", 15, "shaped", 0.0)
    curriculum, _, final, best, _ = fake_run("grpo", 15, "shaped", 0.2)
    curriculum["curriculum"] = {
        "sizes": [5, 15],
        "final_stage": 1,
        "final_size": 15,
        "stage_per_checkpoint": [(2560, 5), (5120, 15)],
    }
    pair = {
        "direct": direct,
        "curriculum": curriculum,
        "comparisons": {
            "final_curriculum_vs_direct": comparison(
                final["episode_return"], final["episode_return"]
            ),
            "best_curriculum_vs_direct": comparison(
                best["episode_return"], final["episode_return"]
            ),
        },
    }
    config = dataclasses.asdict(StudyConfig(num_agents=(5, 15), methods=("grpo", "srpo")))
    return {
        "machine": {
            **{key: "x" for key in ("processor", "platform", "device_kind", "date")},
            **{"cpu_count": 2, "commit": "abc", "libraries": {"jax": "0.1", "python": "x"}},
            "command": "python -m benchmarks.coordination_study --num-seeds 2",
        },
        "config": config,
        "budget": dataclasses.asdict(SCALES["cpu"]),
        "settings": settings,
        "curriculum": {"grpo": pair},
        "wall_s": 600.0,
        "train_wall_s": 540.0,
    }


def test_report_holds_the_tables_figures_and_kept_conclusions(tmp_path):
    results = fake_results()
    figures = plot_study(results, tmp_path)
    assert {path.name for path in figures.values()} == {
        "study_curves_paper.png",
        "study_curves_shaped.png",
        "study_final_returns.png",
        "study_performance_profiles.png",
        "study_curriculum.png",
    }
    assert all(path.stat().st_size > 0 for path in figures.values())
    conclusions = f"{CONCLUSIONS_HEADING}\n\nGRPO waited.\n"
    old_report = f"# old\n\nold tables\n\n{conclusions}"
    report = markdown_report(results, figures, tmp_path, kept_conclusions(old_report))
    assert report.endswith(conclusions) and "old tables" not in report
    assert "python -m benchmarks.coordination_study" in report
    assert "![learning curves, paper reward](study_curves_paper.png)" in report
    paper_optimum = report.split("zero-meal optimum?")[1].split("![")[0]
    grpo_rows = [line for line in paper_optimum.splitlines() if line.startswith("| GRPO | 5 |")]
    # final: 3 of 8 episodes without a meal (Wilson interval); best: none.
    assert len(grpo_rows) == 1 and "| 0.38 [0.14, 0.69] |" in grpo_rows[0]
    assert grpo_rows[0].rstrip().endswith("| 0.00 [0.00, 0.32] |")
    run = results["settings"]["shaped-15"]["methods"]["srpo"]
    g = run["comparisons"]["final_vs_initial"]["hedges_g"]
    assert "| SRPO | 15 |" in report and f"{g:+.2f} (p " in report
    assert (
        "| all_wait | 5 | 0.75 | 0.0 | 0.00 [0.00, 0.49] | 1.00 | 1.00 [0.51, 1.00] | |" in report
    )
    assert markdown_report(results, figures, tmp_path).endswith(
        "Not yet written for these numbers.\n"
    )


def scaled_results(normalised: dict[str, dict[str, list[list[float]]]]) -> dict:
    """Two settings on different scales, paper (0 = 0.5, 1 = 0.75 by resource ordering) and
    shaped (0 = 1, 1 = 5 by backoff), with the given normalised per-seed returns per method,
    checkpoint and setting."""
    scales = {"paper": (0.5, {"resource_ordering": 0.75, "backoff": 0.7}),
              "shaped": (1.0, {"resource_ordering": 3.0, "backoff": 5.0})}  # fmt: skip
    settings = {}
    for task, (reward, (random, scripted)) in enumerate(scales.items()):
        best = max(scripted.values())
        references = {"uniform_random": random, **scripted}
        settings[f"{reward}-5"] = {
            "reward": reward,
            "num_philosophers": 5,
            "references": {
                name: {"return_across_seeds": {"mean": value}} for name, value in references.items()
            },
            "methods": {
                method: {
                    which: {"return_per_seed": [random + s * (best - random) for s in scores[task]]}
                    for which, scores in checkpoints.items()
                }
                for method, checkpoints in normalised.items()
            },
        }
    return {"settings": settings}


def test_aggregate_section_normalises_each_setting_and_reports_known_values():
    constant = {"final": [[0.5, 0.5], [0.5, 0.5]], "best": [[1.0, 1.0], [1.0, 1.0]]}
    results = scaled_results(
        {
            "ippo": constant,
            "mappo": {"final": [[0.0, 1.0], [0.0, 1.0]], "best": [[0.5, 0.5], [0.5, 0.5]]},
            "grpo": {"final": [[2.0, 2.0], [2.0, 2.0]], "best": [[2.0, 2.0], [2.0, 2.0]]},
            "srpo": {"final": [[1.5, 1.5], [1.5, 1.5]], "best": [[3.0, 3.0], [3.0, 3.0]]},
        }
    )
    lines = aggregate_lines(results)
    assert "| paper, N = 5 | 0.500 | 0.750 (resource_ordering) |" in lines
    assert "| shaped, N = 5 | 1.000 | 5.000 (backoff) |" in lines
    # Constant runs: degenerate intervals, printed as the value alone.
    # IQM final, IQM best, gap final, gap best.
    assert "| IPPO | 0.50 | 1.00 | 0.50 | 0.00 |" in lines
    assert "| GRPO | 2.00 | 2.00 | 0.00 | 0.00 |" in lines
    # Final scores 0, 1 | 0, 1: IQM and gap 0.5; all four runs resampled to 0 (or to 1)
    # has chance 1/16 > 2.5%, so both intervals reach 0 and 1.
    assert "| MAPPO | 0.50 [0.00, 1.00] | 0.50 | 0.50 [0.00, 1.00] | 0.50 |" in lines
    pairs = [line.split(" |")[0] for line in lines if " vs " in line][1:]  # after the header
    # Every method against IPPO and MAPPO (MAPPO vs IPPO once), then GRPO against SRPO.
    assert pairs == [
        "| MAPPO vs IPPO",
        "| GRPO vs IPPO",
        "| SRPO vs IPPO",
        "| GRPO vs MAPPO",
        "| SRPO vs MAPPO",
        "| GRPO vs SRPO",
    ]
    # MAPPO's 0 and 1 against IPPO's 0.5 on each task: one half; GRPO 2 beats SRPO 1.5 at
    # the final checkpoint and loses to SRPO's 3 at the best.
    assert next(line for line in lines if line.startswith("| MAPPO vs IPPO")).startswith(
        "| MAPPO vs IPPO | 0.50 ["
    )
    assert "| GRPO vs SRPO | 1.00 | 0.00 |" in lines


def test_aggregate_refuses_a_setting_no_scripted_policy_solves():
    results = scaled_results({"ippo": {"final": [[0.5], [0.5]], "best": [[0.5], [0.5]]}})
    references = results["settings"]["shaped-5"]["references"]
    for name in ("resource_ordering", "backoff"):
        references[name]["return_across_seeds"]["mean"] = 0.5
    with pytest.raises(ConfigError, match="shaped-5: no scripted policy beats uniform_random"):
        aggregate_lines(results)


def test_report_only_rebuilds_the_report_and_profiles_from_the_json(tmp_path):
    (tmp_path / "coordination_study_cpu.json").write_text(to_json(fake_results()))
    run_study(StudyConfig(report_only=True, out=tmp_path))
    report = (tmp_path / "coordination_study.md").read_text()
    aggregate = report.split("## Aggregate over the settings")[1].split("## Returns")[0]
    assert "| GRPO | " in aggregate and "| GRPO vs SRPO | " in aggregate
    assert (
        "![performance profiles of normalised returns](figures/study_performance_profiles.png)"
        in aggregate
    )
    assert (tmp_path / "figures" / "study_performance_profiles.png").stat().st_size > 0


def test_report_only_without_results_is_refused_in_one_line(tmp_path):
    with pytest.raises(ConfigError, match="holds no results to rebuild from"):
        run_study(StudyConfig(report_only=True, out=tmp_path))


def test_the_study_writes_into_its_folder_unless_published(tmp_path):
    config = StudyConfig(scale="gpu", out=tmp_path)
    outputs = config.outputs()
    assert config.runs_dir == tmp_path / "gpu"
    assert outputs.results == tmp_path / "coordination_study_gpu.json"
    assert outputs.report == tmp_path / "coordination_study_gpu.md"
    assert outputs.figures_dir == tmp_path / "figures"
    published = dataclasses.replace(config, publish=True).outputs()
    assert published.results.parent.name == "results" and published.report.parent.name == "docs"


def test_a_bad_table_size_or_reward_is_refused_before_any_training():
    with pytest.raises(ConfigError, match=r"^num_agents=1 "):
        StudyConfig(num_agents=(5, 1))
    with pytest.raises(ConfigError, match="unknown reward 'meals'"):
        StudyConfig(rewards=("paper", "meals"))


def test_curriculum_rows_name_the_last_size_and_the_tests():
    rows = curriculum_table(fake_results()["curriculum"])
    assert rows[2].startswith("| GRPO | direct |") and "| 15 |" in rows[2]
    assert rows[3].startswith("| GRPO | curriculum |") and rows[3].count("(p ") == 2


def test_teamtr_gets_the_same_table_steps_in_one_update_per_seat():
    budget = dataclasses.replace(SCALES["cpu"], num_updates=150)
    curriculum = CurriculumConfig(values=(5, 10, 15))
    ippo = train_config(budget, "ippo", 15, "paper", "runs/x", StudyConfig().ppo)
    assert ippo.ppo.rewards == "agent"  # each seat its own reward, as the study published
    teamtr = train_config(budget, "teamtr", 15, "paper", "runs/x", StudyConfig().ppo)
    assert (ippo.num_updates, teamtr.num_updates) == (150, 10)
    # 12 checkpoints: every 12 updates in chunks of 6 (dividing 150 and 12); TeamTR every one.
    assert (ippo.eval_interval, ippo.updates_per_chunk) == (12, 6)
    assert (teamtr.eval_interval, teamtr.updates_per_chunk) == (1, 1)
    staged = train_config(budget, "ippo", 15, "shaped", "runs/x", StudyConfig().ppo, curriculum)
    assert make_env(staged).num_agents == 15 and staged.num_updates == 150
