"""A reference run end to end on a tiny budget (`benchmarks.references`, matrix preset): the
chosen seed is the one exported, the shipped copy plays what the results file says, and its
card is the one the results file renders."""

from __future__ import annotations

import json

import baselines
from alemlite.evaluation import evaluate
from benchmarks import matrix_references, references


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
