"""benchmarks/marl_matrix: how run summaries become per-seed outcomes and the table (no
training here; the learning itself is tested in test_matrix_learning.py)."""

import pytest

from alemlite.core import ConfigError
from benchmarks.marl_matrix import MarlMatrixConfig, algorithm_results, markdown_table, run_name


def held_out(episode_return: float, shares: tuple[float, float, float], optimal: float) -> dict:
    rates = {
        "optimal_joint_action_rate": optimal,
        "miscoordination_rate": 1 - max(shares),
        "play_a_rate": shares[0],
        "play_b_rate": shares[1],
        "play_c_rate": shares[2],
    }
    return {
        "return_per_seed": [episode_return],
        "episodes": {name: {"mean": value} for name, value in rates.items()},
    }


def summary(final: dict, best: dict) -> dict:
    return {"final": final, "best": best}


def test_each_seed_reports_the_move_it_settled_on():
    summaries = [
        summary(held_out(175.0, (0.0, 1.0, 0.0), 0.0), held_out(175.0, (0.0, 1.0, 0.0), 0.0)),
        summary(held_out(125.0, (0.0, 0.05, 0.95), 0.0), held_out(275.0, (1.0, 0.0, 0.0), 1.0)),
        summary(held_out(100.0, (0.5, 0.0, 0.5), 0.25), held_out(150.0, (0.5, 0.5, 0.0), 0.2)),
    ]
    results = algorithm_results(summaries)
    final, best = results["final"], results["best"]
    assert [seed["settled_on"] for seed in final["seeds"]] == ["PLAY_B", "PLAY_C", "mixed"]
    assert final["settled_on"] == {"PLAY_B": 1, "PLAY_C": 1, "mixed": 1}
    assert best["settled_on"] == {"PLAY_A": 1, "PLAY_B": 1, "mixed": 1}
    assert final["return_across_seeds"]["mean"] == pytest.approx(400 / 3)
    assert final["return_across_seeds"]["n"] == 3
    assert final["return_across_seeds"]["low"] < 100 < 175 < final["return_across_seeds"]["high"]
    assert best["optimal_joint_action_rate"] == pytest.approx(1.2 / 3)

    table = markdown_table(
        {
            "algorithms": {"ippo": results},
            "references": {
                "optimal": {
                    "episode_return": {"mean": 275.0, "low": 275.0, "high": 275.0},
                    "optimal_joint_action_rate": {"mean": 1.0},
                    "miscoordination_rate": {"mean": 0.0},
                }
            },
        }
    )
    assert "| IPPO (3 seeds) |" in table and "PLAY_B 1, PLAY_C 1, mixed 1" in table
    assert "| optimal | 275.00 | | 1.00 | 0.00 | |" in table


def test_the_benchmark_names_runs_by_setting_and_refuses_a_bad_game():
    config = MarlMatrixConfig(game="penalty", num_agents=3)
    assert run_name(config, "grpo", 4) == "grpo-matrix-penalty_k-10_3-seed4"
    with pytest.raises(ConfigError, match="unknown game 'chicken'"):
        MarlMatrixConfig(game="chicken")
