"""A reference run end to end on a tiny budget (`benchmarks.references`, matrix preset): the
chosen seed is the one exported, the shipped copy plays what the results file says, and its
card is the one the results file renders."""

from __future__ import annotations

import json

import pytest

import baselines
from alemlite.evaluation import evaluate
from benchmarks import matrix_references, reference_tables, references


def test_a_reference_run_ships_the_checkpoint_its_card_and_results_describe(tmp_path):
    config = matrix_references.MatrixReferencesConfig(
        game="stag_hunt", max_steps=5, algorithms=("ippo", "grpo"), num_updates=10,
        num_seeds=2, num_envs=8, num_steps=8, test_episodes=16, runs_dir=tmp_path / "runs",
        out=tmp_path / "out" / "matrix_reference_stag_hunt_2.json",
    )  # fmt: skip
    results = references.run(config)
    written = json.loads(config.out.read_text())
    assert written["chosen"] == results["chosen"]
    algorithm, seed = results["chosen"]["algorithm"], results["chosen"]["seed"]
    validation = {
        name: run["best"]["validation_return_per_seed"] for name, run in written["runs"].items()
    }
    assert validation[algorithm][seed] == max(max(values) for values in validation.values())
    shipped = tmp_path / "out" / "matrix-stag-hunt-2"
    policy = baselines.load(str(shipped))
    assert policy.description["seed_index"] == seed
    env = policy.make_env()
    test_seed = written["runs"][algorithm]["test_seed"]
    replayed = evaluate(env, policy.state_policy(env), env.default_params, 16, test_seed)
    assert abs(float(replayed["episode_return"].mean()) - written["test"]["return"]["mean"]) < 1e-5
    assert set(written["test"]["scripted"]) == {"uniform", "tit_for_tat", "optimal"}
    card = (shipped / "CARD.md").read_text()
    assert card == matrix_references.card("matrix-stag-hunt-2", written, config.results_name)
    assert "trained on the repeated stag hunt game, 2 players, 5 rounds" in card
    # One validation at update 10 of 10 (every run's curve kept): too few to project from.
    for run in written["runs"].values():
        assert [row["update"] for row in run["validation_curve"]] == [10]
        assert len(run["validation_curve"][0]["validation_return"]) == 2
    best_scripted = max(
        written["test"]["scripted"].items(), key=lambda item: item[1]["return"]["mean"]
    )
    assert written["projection"]["target_policy"] == best_scripted[0]
    assert written["projection"]["agent_steps"] is None


SCRIPTED = {"random": {"return": {"mean": 1.0}}, "team": {"return": {"mean": 8.0}}}


def curve(returns: list[float]) -> list[dict]:
    """Evaluations at 10^4 .. agent steps, a tenfold apart, two seeds each."""
    return [
        {"update": i, "agent_steps": 10 ** (4 + i), "validation_return": [value - 1, value + 1]}
        for i, value in enumerate(returns)
    ]


def test_the_projection_extrapolates_the_late_log_linear_trend_to_the_best_scripted_return():
    # The early evaluations (a flat start) are left out; the late ones rise 2 a tenfold.
    found = references.projection(curve([0.0, 0.0, 0.0, 2.0, 4.0, 6.0]), SCRIPTED)
    assert found["target_policy"] == "team"
    assert found["fitted_evaluations"] == 4
    assert found["return_per_tenfold_steps"] == pytest.approx(2.0)
    # 6.0 at 10^9 agent steps, 8.0 one tenfold later.
    assert found["agent_steps"] == pytest.approx(1e10)


def test_a_falling_or_too_short_trend_projects_nothing():
    falling = references.projection(curve([5.0, 4.0, 3.0, 2.0]), SCRIPTED)
    assert falling["return_per_tenfold_steps"] == pytest.approx(-1.0)
    assert falling["agent_steps"] is None
    assert references.projection(curve([1.0, 2.0, 3.0]), SCRIPTED)["agent_steps"] is None


def test_the_projection_table_prints_a_kept_curve_and_says_where_nothing_was_projected(
    monkeypatch,
):
    kept = curve([0.0, 0.0, 0.0, 2.0, 4.0, 6.0])
    rising = {
        "chosen": {"algorithm": "dagger"},
        "runs": {"dagger": {"validation_curve": kept}},
        "projection": references.projection(kept, SCRIPTED),
    }
    short = {**rising, "projection": references.projection(kept[:2], SCRIPTED)}
    files = {"craft_reference_easy.json": rising, "craft_reference_hard.json": {}}
    monkeypatch.setattr(reference_tables, "load", files.__getitem__)
    monkeypatch.setattr(
        reference_tables,
        "CRAFT_REFERENCES",
        {
            "easy": (("craft-easy", "craft_reference_easy.json"),),
            "medium": (("craft-medium-ippo", "short.json"),),
            "hard": (("craft-hard", "craft_reference_hard.json"),),
        },
    )
    files["short.json"] = short
    rows = reference_tables.craft_reference_projections().splitlines()[2:]
    assert rows[0] == (
        "| `craft-easy` | 0.00 / 6.00 / 6.00 | +2.00 ± 0.00 | scripted team, 8.00 | 1.0e+10 |"
    )
    assert rows[1].startswith("| `craft-medium-ippo` |")
    assert rows[1].endswith("| no fit | scripted team, 8.00 | none: no rising trend |")
    assert "published before the curves were kept" in rows[2]


def test_an_imitation_reference_is_named_by_what_its_teacher_share_made_it():
    def label(**imitation) -> str:
        return references.chosen_method_label(
            {"chosen": {"algorithm": "dagger"}, "config": {"imitation": imitation}}
        )

    assert label(final_teacher_share=1.0) == "behaviour cloning"
    assert label() == "DAgger"
    assert label(cloning_updates=600, final_teacher_share=0.0) == (
        "behaviour cloning for 600 updates, then DAgger"
    )
    assert label(cloning_updates=300, final_teacher_share=0.75, mix_by="episode") == (
        "behaviour cloning for 300 updates, then DAgger on 25% of the episodes"
    )
    assert label(final_teacher_share=0.5) == "DAgger on 50% of the steps"
    assert references.chosen_method_label({"chosen": {"algorithm": "mappo"}}) == "MAPPO"
    started = {"chosen": {"algorithm": "ippo"}, "config": {"init_actor": "craft-easy"}}
    assert references.chosen_method_label(started) == "IPPO from `craft-easy`"
    staged = {
        "chosen": {"algorithm": "ippo"},
        "config": {"init_actor": "craft-easy-ippo", "curriculum": {"values": [0, 1, 3]}},
        "runs": {"ippo": {"env": {"name": "craft"}}},
    }
    assert reference_tables.curriculum_stages(staged) == ", building_cost 0 then 1 then 3"
    assert reference_tables.curriculum_stages(started) == ""
