"""Curriculum across dining table sizes: the plateau rule, the mixed batch, one compiled
update across stages, and resume."""

import json
from dataclasses import replace
from pathlib import Path

import jax
import numpy as np
import pytest
import tyro

import alemlite
from alemlite.core.errors import ConfigError
from baselines.common.checkpoints import RunCheckpoints
from baselines.common.config import (
    CurriculumConfig,
    GroupConfig,
    NetworkConfig,
    PPOConfig,
    TrainConfig,
)
from baselines.common.curriculum import StageTracker, observe, restart_tables, table_sizes
from baselines.common.trainer import compiled_program, stage_tables, train
from baselines.grpo import GRPO


# ---- the plateau rule and the batch, pure Python ------------------------------------------
def test_stage_advances_after_patience_evaluations_without_improvement():
    config = CurriculumConfig(sizes=(5, 10, 15), patience=2, min_improvement=0.1)
    returns = [1.0, 1.5, 1.55, 1.58, 0.5, 0.55, 0.9, 0.95, 0.96, 2.0, 1.0, 1.0, 1.0]
    # improve, improve, stale, stale -> 10 | improve, stale, improve, stale, stale -> 15 | last
    expected = [0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2]
    tracker, stages = StageTracker.start(), []
    for value in returns:
        tracker = observe(tracker, value, config)
        stages.append(int(tracker.stage))
    assert stages == expected
    # The last stage never advances; its plateau count keeps growing.
    assert int(tracker.stale) == 3


def test_an_improvement_resets_the_patience():
    config = CurriculumConfig(sizes=(3, 5), patience=3, min_improvement=0.5)
    tracker, stages = StageTracker.start(), []
    # 0.2 and 0.4 are stale; 0.6 counts (>= 0.0 + 0.5) and restarts the count; then 3 stale.
    for value in [0.0, 0.2, 0.4, 0.6, 0.7, 0.8, 0.9]:
        tracker = observe(tracker, value, config)
        stages.append(int(tracker.stage))
    assert stages == [0, 0, 0, 0, 0, 0, 1]
    assert float(tracker.best_return) == -np.inf and int(tracker.stale) == 0


def test_mixed_batches_replay_earlier_sizes_spread_over_the_batch():
    config = CurriculumConfig(sizes=(3, 5, 7), mix=0.25)
    np.testing.assert_array_equal(table_sizes(config, 0, 8), [3] * 8)
    np.testing.assert_array_equal(table_sizes(config, 1, 8), [5, 5, 5, 3, 5, 5, 5, 3])
    np.testing.assert_array_equal(table_sizes(config, 2, 8), [7, 7, 7, 3, 7, 7, 7, 5])
    # Groups (of GRPO-like methods) share one size.
    grouped = table_sizes(config, 2, 16, group_size=2).reshape(8, 2)
    np.testing.assert_array_equal(grouped[:, 0], grouped[:, 1])
    np.testing.assert_array_equal(grouped[:, 0], table_sizes(config, 2, 8))


def test_invalid_curricula_name_the_value_and_the_fix():
    with pytest.raises(ConfigError, match="must increase"):
        CurriculumConfig(sizes=(10, 5))
    with pytest.raises(ConfigError, match="mix=1"):
        CurriculumConfig(sizes=(3, 5), mix=1.0)
    with pytest.raises(ConfigError, match="patience=0"):
        CurriculumConfig(sizes=(3, 5), patience=0)
    with pytest.raises(ConfigError, match="env='dining'"):
        TrainConfig(env="craft", curriculum=CurriculumConfig(sizes=(3, 5)))


def test_command_line_and_config_json_carry_the_curriculum(tmp_path):
    args = ["ippo", "--curriculum.sizes", "5", "10", "15", "--curriculum.patience", "3"]
    args += ["--curriculum.min-improvement", "0.1", "--curriculum.mix", "0.25"]
    config = tyro.cli(TrainConfig, args=args)
    assert config.curriculum == CurriculumConfig(
        sizes=(5, 10, 15), patience=3, min_improvement=0.1, mix=0.25
    )
    assert config.env_kwargs() == {
        "num_philosophers": 15,
        "max_philosophers": 15,
        "reward": "shaped",
    }
    assert str(config.output_dir) == "runs/ippo-dining-5-10-15"
    config.save(tmp_path / "config.json")
    assert TrainConfig.load(tmp_path / "config.json") == config


# ---- a short curriculum run on dining 3 -> 5 ------------------------------------------------
CONFIG = TrainConfig(
    algorithm="ippo",
    env="dining",
    max_steps=8,
    num_envs=4,
    num_steps=8,
    num_updates=6,
    updates_per_chunk=2,
    eval_interval=2,
    num_seeds=2,
    eval_episodes=8,
    test_episodes=8,
    progress=False,
    network=NetworkConfig(hidden_size=8, num_layers=1),
    ppo=PPOConfig(num_epochs=1, num_minibatches=2),
    # The first evaluation sets the baseline; the second cannot improve by 1e9: advance.
    curriculum=CurriculumConfig(sizes=(3, 5), patience=1, min_improvement=1e9, mix=0.5),
)


@pytest.fixture(scope="module")
def env():
    return alemlite.make("dining", **CONFIG.env_kwargs())


@pytest.fixture(scope="module")
def curriculum_run(env, tmp_path_factory):
    config = replace(CONFIG, run_dir=str(tmp_path_factory.mktemp("curriculum")))
    return config, train(config, env=env)


def records(run_dir: Path, kind: str):
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["kind"] == kind]


def latest_state(run_dir: Path):
    checkpoints = RunCheckpoints(run_dir / "checkpoints")
    state, _ = checkpoints.restore(checkpoints.latest_update(), None)
    checkpoints.close()
    return state


def test_the_stage_advances_on_the_plateau_and_is_logged(curriculum_run):
    config, summary = curriculum_run
    run_dir = Path(config.run_dir)
    evals = records(run_dir, "eval")
    assert [r["curriculum/stage"] for r in evals] == [0, 0, 1]
    assert [r["curriculum/advanced"] for r in evals] == [False, True, False]
    assert [r["curriculum/size"] for r in records(run_dir, "train")] == [3, 3, 3, 3, 5, 5]
    # Agent steps count seats in play (the tables' sizes), never the inert seats up to 5.
    per_update = [
        config.num_steps * table_sizes(config.curriculum, stage, config.num_envs).sum()
        for stage in (0, 0, 0, 0, 1, 1)
    ]
    steps = [r["agent_steps"] for r in records(run_dir, "train")]
    assert steps == np.cumsum(per_update).tolist()
    assert steps[-1] < config.num_updates * config.num_envs * config.num_steps * 5
    assert summary["agent_steps_per_seed"] == steps[-1]
    for record in records(run_dir, "train"):
        for name in ("loss/total", "loss/policy", "loss/value", "loss/entropy"):
            assert np.isfinite(record[name]), (name, record)
    assert (run_dir / "learning_curve.png").exists()
    assert summary["curriculum"]["final_size"] == 5
    for size in ("3", "5"):
        per_size = json.loads((run_dir / "summary.json").read_text())["curriculum"]["per_size"]
        for name in ("final", "best"):
            assert len(per_size[size][name]["return_per_seed"]) == config.num_seeds


def test_one_batch_mixes_table_sizes_and_the_tables_play_them(curriculum_run):
    config, _ = curriculum_run
    runner = latest_state(Path(config.run_dir))["runner"]
    tables = np.asarray(runner["env_params"]["num_philosophers"])
    assert tables.shape == (config.num_seeds, config.num_envs)
    np.testing.assert_array_equal(tables[0], table_sizes(config.curriculum, 1, config.num_envs))
    assert set(tables[0].tolist()) == {3, 5}
    # Seats in play per table follow that table's size (the rest are inert).
    active = np.asarray(runner["rollout"]["view"]["active"])
    np.testing.assert_array_equal(active.sum(-1), tables)


def test_advancing_reuses_the_compiled_update(curriculum_run, env):
    config, _ = curriculum_run
    program = compiled_program(config, env)
    # Stage 0 and stage 1 chunks ran through one compiled update; the restart compiled once.
    assert program.run_chunk._cache_size() == 1
    assert program.restart._cache_size() == 1


def test_resumed_curriculum_equals_uninterrupted_run(curriculum_run, env, tmp_path):
    config, summary = curriculum_run
    # Interrupted right at the advance: the checkpoint holds the new stage and fresh tables.
    interrupted = replace(config, run_dir=str(tmp_path / "resumed"), num_updates=4)
    train(interrupted, env=env)
    resumed = train(replace(interrupted, num_updates=6, resume=True), env=env)

    expected_state = latest_state(Path(config.run_dir))
    actual_state = latest_state(tmp_path / "resumed")
    for expected, actual in zip(
        jax.tree.leaves(expected_state), jax.tree.leaves(actual_state), strict=True
    ):
        np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=1e-5, atol=1e-6)
    assert int(actual_state["curriculum"]["stage"]) == 1
    assert resumed["final"]["return_per_seed"] == pytest.approx(summary["final"]["return_per_seed"])
    assert resumed["agent_steps_per_seed"] == summary["agent_steps_per_seed"]
    assert [r["curriculum/size"] for r in records(tmp_path / "resumed", "train")] == [
        3,
        3,
        3,
        3,
        5,
        5,
    ]
    assert compiled_program(config, env).run_chunk._cache_size() == 1


def test_grpo_groups_share_a_table_size_and_play_it(env):
    config = replace(CONFIG, algorithm="grpo", group=GroupConfig(group_size=2))
    grpo = GRPO(env, config)
    tables = stage_tables(config, env, grpo, 1)
    np.testing.assert_array_equal(tables.num_philosophers, [5, 5, 3, 3])  # one replayed group

    @jax.jit
    def grouped_rollout(key):
        runner = restart_tables(grpo, grpo.init(key), tables)
        return grpo.group_rollout(runner.params["actor"], runner.rollout, key, runner.env_params)

    _, batch, statistics = grouped_rollout(jax.random.PRNGKey(0))
    # Every member of a group starts from its group's table: seats in play follow the size.
    active = np.asarray(batch["transitions"].view.active)  # (E, T, N)
    np.testing.assert_array_equal(active.sum(-1), np.broadcast_to([[5], [5], [3], [3]], (4, 8)))
    assert np.isfinite(np.asarray(batch["advantages"])).all()
    assert np.isfinite(float(statistics["group/return"]))
