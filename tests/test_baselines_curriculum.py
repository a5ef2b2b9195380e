"""A curriculum through the environment's spec, on dining table sizes: the plateau rule, the
mixed batch, one compiled update across stages, and resume."""

import json
from dataclasses import fields, replace
from pathlib import Path

import chex
import jax
import numpy as np
import pytest
import tyro

import alemlite
import baselines
from alemlite.core.errors import ConfigError
from alemlite_app.cli import with_env_options
from baselines.common.checkpoints import RunCheckpoints
from baselines.common.config import (
    CurriculumConfig,
    GroupConfig,
    NetworkConfig,
    PPOConfig,
    TrainConfig,
)
from baselines.common.curriculum import (
    FixedSetting,
    StagedCurriculum,
    StageTracker,
    make_schedule,
    observe,
    restart,
    stage_values,
)
from baselines.common.reporting import plot_learning_curve
from baselines.common.trainer import compiled_program, make_env, train
from baselines.grpo import GRPO


# ---- the plateau rule and the batch, pure Python ------------------------------------------
def test_stage_advances_after_patience_evaluations_without_improvement():
    config = CurriculumConfig(values=(5, 10, 15), patience=2, min_improvement=0.1)
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
    config = CurriculumConfig(values=(3, 5), patience=3, min_improvement=0.5)
    tracker, stages = StageTracker.start(), []
    # 0.2 and 0.4 are stale; 0.6 counts (>= 0.0 + 0.5) and restarts the count; then 3 stale.
    for value in [0.0, 0.2, 0.4, 0.6, 0.7, 0.8, 0.9]:
        tracker = observe(tracker, value, config)
        stages.append(int(tracker.stage))
    assert stages == [0, 0, 0, 0, 0, 0, 1]
    assert float(tracker.best_return) == -np.inf and int(tracker.stale) == 0


def test_mixed_batches_replay_earlier_values_spread_over_the_batch():
    config = CurriculumConfig(values=(3, 5, 7), mix=0.25)
    np.testing.assert_array_equal(stage_values(config, 0, 8), [3] * 8)
    np.testing.assert_array_equal(stage_values(config, 1, 8), [5, 5, 5, 3, 5, 5, 5, 3])
    np.testing.assert_array_equal(stage_values(config, 2, 8), [7, 7, 7, 3, 7, 7, 7, 5])
    # Groups (of GRPO-like methods) share one value.
    grouped = stage_values(config, 2, 16, group_size=2).reshape(8, 2)
    np.testing.assert_array_equal(grouped[:, 0], grouped[:, 1])
    np.testing.assert_array_equal(grouped[:, 0], stage_values(config, 2, 8))


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: CurriculumConfig(values=(10, 5)),
            "curriculum.values=[10, 5] must increase (smallest first)",
        ),
        (lambda: CurriculumConfig(values=(3, 5), mix=1.0), "curriculum.mix=1.0 must lie in [0, 1)"),
        (
            lambda: CurriculumConfig(values=(3, 5), patience=0),
            "curriculum.patience=0 must be at least 1",
        ),
        (
            lambda: TrainConfig(curriculum=CurriculumConfig(values=(1, 5))),
            "curriculum.values=[1, 5] must be at least 2 (the smallest num_agents of dining)",
        ),
        (
            lambda: TrainConfig(env="matrix", curriculum=CurriculumConfig(values=(3, 5))),
            "curriculum.values=[3, 5]: env='matrix' has no curriculum option; "
            "drop --curriculum.values",
        ),
        (
            lambda: TrainConfig(env="craft", curriculum=CurriculumConfig(values=(0, 4))),
            "building_cost=4 must lie in 0..3 (0: free buildings, 3: the whole share)",
        ),
    ],
)
def test_invalid_curricula_name_the_value_and_the_fix(build, message):
    with pytest.raises(ConfigError) as refusal:
        build()
    assert str(refusal.value) == message


def test_command_line_and_config_json_carry_the_curriculum(tmp_path):
    args = ["ippo", "--curriculum.values", "5", "10", "15", "--curriculum.patience", "3"]
    args += ["--curriculum.min-improvement", "0.1", "--curriculum.mix", "0.25"]
    config = tyro.cli(with_env_options(TrainConfig, args), args=args)
    assert config.curriculum == CurriculumConfig(
        values=(5, 10, 15), patience=3, min_improvement=0.1, mix=0.25
    )
    # The scheduled option is the largest value; the environment's shapes fit it.
    assert config.options == alemlite.spec("dining").options(num_agents=15)
    env = make_env(config)
    assert (env.config.num_philosophers, env.config.max_philosophers) == (15, 15)
    assert str(config.output_dir) == "runs/ippo-dining-5-10-15"
    config.save(tmp_path / "config.json")
    # The command line's config is a subclass that types `options` for tyro: equal as settings.
    loaded = TrainConfig.load(tmp_path / "config.json")
    assert type(loaded) is TrainConfig and loaded.to_dict() == config.to_dict()
    assert loaded == TrainConfig(**{f.name: getattr(config, f.name) for f in fields(config)})


def test_craft_s_curriculum_raises_the_building_cost_on_the_target_world():
    config = TrainConfig(env="craft", curriculum=CurriculumConfig(values=(0, 2, 3)))
    assert config.options == alemlite.spec("craft").options(building_cost=3)
    assert config.options.label() == alemlite.spec("craft").options().label()
    assert alemlite.spec("craft").options(building_cost=0).label().endswith("_cost0")
    scheduled = alemlite.spec("craft").curriculum
    env = alemlite.make("craft", **{**scheduled.make_kwargs(config.options, 3), "map_size": 16})
    batch = scheduled.params(env, np.array([0, 2, 3], np.int32))
    assert batch.building_share.shape == (3, *env.default_params.building_share.shape)
    assert np.asarray(batch.building_share[0]).sum() == 0
    np.testing.assert_array_equal(batch.building_share[2], env.default_params.building_share)
    assert batch.alpha.shape == ()  # only the cost varies over the batch


def test_an_environment_without_a_curriculum_trains_on_a_fixed_setting():
    config = TrainConfig(env="matrix", num_envs=4)
    schedule = make_schedule(config.curriculum, config.env, None, None, 4, 1)
    assert isinstance(schedule, FixedSetting)
    assert schedule.summary(config.evaluation_config(), schedule.start(), None, None, {}) == {}
    assert schedule.checkpoint_entries(schedule.start()) == {}


# ---- a short curriculum run on dining 3 -> 5 ------------------------------------------------
CONFIG = TrainConfig(
    algorithm="ippo",
    env="dining",
    options=alemlite.spec("dining").options(max_steps=8),
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
    curriculum=CurriculumConfig(values=(3, 5), patience=1, min_improvement=1e9, mix=0.5),
)


@pytest.fixture(scope="module")
def env():
    return make_env(CONFIG)


@pytest.fixture(scope="module")
def curriculum_run(env, tmp_path_factory):
    config = replace(CONFIG, out=str(tmp_path_factory.mktemp("curriculum")))
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
    run_dir = Path(config.out)
    evals = records(run_dir, "eval")
    assert [r["curriculum/stage"] for r in evals] == [0, 0, 1]
    assert [r["curriculum/value"] for r in evals] == [3, 3, 5]
    assert [r["curriculum/advanced"] for r in evals] == [False, True, False]
    assert [r["curriculum/value"] for r in records(run_dir, "train")] == [3, 3, 3, 3, 5, 5]
    # Agent steps count seats in play (the tables' sizes), never the inert seats up to 5.
    per_update = [
        config.num_steps * stage_values(config.curriculum, stage, config.num_envs).sum()
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
    assert summary["curriculum"]["final_value"] == 5
    written = json.loads((run_dir / "summary.json").read_text())
    curriculum = written["curriculum"]
    assert {key: curriculum[key] for key in ("option", "values", "final_stage", "final_value")} == {
        "option": "num_agents",
        "values": [3, 5],
        "final_stage": 1,
        "final_value": 5,
    }
    for value in ("3", "5"):
        for name in ("final", "best"):
            assert len(curriculum["per_value"][value][name]["return_per_seed"]) == config.num_seeds
    # The largest value's reports are the run's own; the smaller table is evaluated apart.
    assert curriculum["per_value"]["5"]["final"] == written["final"]
    assert curriculum["per_value"]["3"]["final"] != written["final"]


def test_the_exported_policy_records_the_largest_value_and_fits_its_environment(
    curriculum_run, env
):
    config, _ = curriculum_run
    policy = baselines.load(str(Path(config.out) / "policy" / "best"))
    assert policy.description["env"]["options"]["num_agents"] == 5
    made = policy.make_env()
    assert (made.num_agents, made.observation_shape) == (env.num_agents, env.observation_shape)
    policy.check_fits(env)
    with pytest.raises(ConfigError) as refusal:
        policy.check_fits(alemlite.make("dining", num_philosophers=3))
    assert "trained with num_agents=5, but this dining environment has num_agents=3" in str(
        refusal.value
    )


def test_one_batch_mixes_table_sizes_and_the_tables_play_them(curriculum_run):
    config, _ = curriculum_run
    runner = latest_state(Path(config.out))["runner"]
    tables = np.asarray(runner["env_params"]["num_philosophers"])
    assert tables.shape == (config.num_seeds, config.num_envs)
    np.testing.assert_array_equal(tables[0], stage_values(config.curriculum, 1, config.num_envs))
    assert set(tables[0].tolist()) == {3, 5}
    # Seats in play per table follow that table's size (the rest are inert).
    active = np.asarray(runner["rollout"]["view"]["active"])
    np.testing.assert_array_equal(active.sum(-1), tables)


def test_advancing_reuses_the_compiled_update(curriculum_run, env):
    config, _ = curriculum_run
    program = compiled_program(config, env)
    # Stage 0 and stage 1 chunks ran through one compiled update; the restart compiled once.
    assert program.run_chunk._cache_size() == 1
    assert program.schedule.restart._cache_size() == 1


def test_resumed_curriculum_equals_uninterrupted_run(curriculum_run, env, tmp_path):
    config, summary = curriculum_run
    # Interrupted right at the advance: the checkpoint holds the new stage and fresh tables.
    interrupted = replace(config, out=str(tmp_path / "resumed"), num_updates=4)
    train(interrupted, env=env)
    resumed = train(replace(interrupted, num_updates=6, resume=True), env=env)

    expected_state = latest_state(Path(config.out))
    actual_state = latest_state(tmp_path / "resumed")
    chex.assert_trees_all_close(actual_state, expected_state, rtol=1e-5, atol=1e-6)
    assert int(actual_state["curriculum"]["stage"]) == 1
    assert resumed["final"]["return_per_seed"] == pytest.approx(summary["final"]["return_per_seed"])
    assert resumed["agent_steps_per_seed"] == summary["agent_steps_per_seed"]
    assert [r["curriculum/value"] for r in records(tmp_path / "resumed", "train")] == [
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
    grpo = GRPO(env, config.algorithm_config())
    schedule = make_schedule(
        config.curriculum, config.env, env, grpo, config.num_envs, config.num_seeds
    )
    assert isinstance(schedule, StagedCurriculum)
    tables = schedule.batch_params(1)
    np.testing.assert_array_equal(tables.num_philosophers, [5, 5, 3, 3])  # one replayed group

    @jax.jit
    def grouped_rollout(key):
        runner = restart(grpo, grpo.init(key), tables)
        return grpo.group_rollout(runner.params["actor"], runner.rollout, key, runner.env_params)

    _, batch, statistics = grouped_rollout(jax.random.PRNGKey(0))
    # Every member of a group starts from its group's table: seats in play follow the size.
    active = np.asarray(batch["transitions"].view.active)  # (E, T, N)
    np.testing.assert_array_equal(active.sum(-1), np.broadcast_to([[5], [5], [3], [3]], (4, 8)))
    assert np.isfinite(np.asarray(batch["advantages"])).all()
    assert np.isfinite(float(statistics["group/return"]))


def test_the_learning_curve_marks_stages_that_start_at_zero(tmp_path):
    # Craft's curriculum starts at building_cost 0: every later stage is marked in data
    # coordinates (a falsy first value once put a label a million axes widths away).
    records = [
        {
            "kind": "train",
            "agent_steps": 1_000_000 * (index + 1),
            "episode/return_per_seed": [float(index)],
            "curriculum/value": value,
        }
        for index, value in enumerate([0, 0, 1, 1, 3])
    ]
    records.append(
        {
            "kind": "eval",
            "agent_steps": 5_000_000,
            "validation_return": [1.0],
            "stage_validation_return": [2.0],
        }
    )
    path = tmp_path / "curve.png"
    plot_learning_curve(records, {"team": 3.0}, path, "craft", stage_name="building_cost")
    assert path.stat().st_size > 0
