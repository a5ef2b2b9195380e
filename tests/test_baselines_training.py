"""Training end to end on a toy game: smoke runs, checkpoints, resume, evaluation, devices."""

import dataclasses
import json
import os
import subprocess
import sys
import textwrap
from dataclasses import replace
from pathlib import Path

import chex
import jax
import numpy as np
import pytest

import alemlite
import baselines
from alemlite.core.errors import ConfigError
from alemlite.evaluation import evaluate
from baselines.common.checkpoints import RunCheckpoints
from baselines.common.config import NetworkConfig, PPOConfig, TrainConfig
from baselines.common.resume import differences_that_break_resume
from baselines.common.trainer import make_env, train
from baselines.train import reference_policies
from tests.baselines_toy_env import MatchingGame

REPO = Path(__file__).resolve().parents[1]

TINY = dict(
    num_envs=4,
    num_steps=8,
    num_updates=4,
    updates_per_chunk=2,
    eval_interval=2,
    num_seeds=2,
    eval_episodes=16,
    test_episodes=24,
    progress=False,
    network=NetworkConfig(hidden_size=8, num_layers=1),
    ppo=PPOConfig(num_epochs=2, num_minibatches=2),
)


def saved_state(run_dir: Path, like=None):
    """The latest checkpoint as saved (nested dicts); `like` gives the layout to restore into."""
    if like is not None:
        device = jax.sharding.SingleDeviceSharding(jax.devices()[0])
        like = jax.tree.map(
            lambda leaf: jax.ShapeDtypeStruct(leaf.shape, leaf.dtype, sharding=device), like
        )
    checkpoints = RunCheckpoints(run_dir / "checkpoints")
    state, meta = checkpoints.restore(checkpoints.latest_update(), like)
    checkpoints.close()
    return state, meta


def records(run_dir: Path, kind: str):
    lines = (run_dir / "metrics.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["kind"] == kind]


@pytest.fixture(scope="module")
def ippo_run(tmp_path_factory):
    config = TrainConfig(algorithm="ippo", out=str(tmp_path_factory.mktemp("ippo")), **TINY)
    return config, train(config, env=MatchingGame())


@pytest.fixture(scope="module")
def mappo_recurrent_run(tmp_path_factory):
    config = TrainConfig(
        algorithm="mappo",
        out=str(tmp_path_factory.mktemp("mappo")),
        **{**TINY, "network": NetworkConfig(hidden_size=8, num_layers=1, recurrent=True)},
    )
    return config, train(config, env=MatchingGame())


@pytest.mark.parametrize("run", ["ippo_run", "mappo_recurrent_run"])
def test_smoke_training_has_finite_losses_and_writes_its_outputs(run, request):
    config, summary = request.getfixturevalue(run)
    run_dir = Path(config.out)
    train_records = records(run_dir, "train")
    assert [r["update"] for r in train_records] == [1, 2, 3, 4]
    for record in train_records:
        for name in ("loss/total", "loss/policy", "loss/value", "loss/entropy"):
            assert np.isfinite(record[name]), (name, record)
        # An illegal action would cost 10; the toy game's returns are never negative otherwise.
        assert record["episode/return"] >= 0
    assert [r["update"] for r in records(run_dir, "eval")] == [2, 4]
    for name in ("config.json", "learning_curve.png", "summary.json"):
        assert (run_dir / name).exists(), name
    assert TrainConfig.load(run_dir / "config.json") == config
    assert len(summary["final"]["return_per_seed"]) == config.num_seeds
    assert summary["best"]["update_per_seed"][0] in (2, 4)


@pytest.mark.parametrize("run", ["ippo_run", "mappo_recurrent_run"])
def test_checkpoint_and_exported_policy_round_trip(run, request):
    config, _ = request.getfixturevalue(run)
    run_dir = Path(config.out)
    state, meta = saved_state(run_dir)
    assert meta["update"] == config.num_updates
    assert int(np.asarray(state["runner"]["update_step"])[0]) == config.num_updates
    saved_actor = state["runner"]["params"]["actor"]

    policy = baselines.load(str(run_dir / "policy" / "final"))
    seed = policy.description["seed_index"]
    for exported, saved in zip(
        jax.tree.leaves(policy.params), jax.tree.leaves(saved_actor), strict=True
    ):
        np.testing.assert_array_equal(exported, np.asarray(saved)[seed])


def test_held_out_evaluation_follows_the_shared_seed_protocol(ippo_run):
    """`alemlite.evaluation.evaluate` on the exported policy reproduces the run's own report."""
    config, summary = ippo_run
    policy = baselines.load(str(Path(config.out) / "policy" / "final"))
    env = MatchingGame()
    shared = evaluate(
        env, policy.state_policy(env), env.default_params, config.test_episodes, config.test_seed
    )
    seed = policy.description["seed_index"]
    assert shared["episode_return"].mean() == pytest.approx(
        summary["final"]["return_per_seed"][seed], rel=1e-6
    )


def test_resumed_run_equals_uninterrupted_run(ippo_run, tmp_path):
    config, summary = ippo_run
    interrupted = replace(config, out=str(tmp_path / "resumed"), num_updates=2)
    train(interrupted, env=MatchingGame())
    resumed = train(replace(interrupted, num_updates=4, resume=True), env=MatchingGame())

    uninterrupted_state, _ = saved_state(Path(config.out))
    resumed_state, _ = saved_state(tmp_path / "resumed")
    chex.assert_trees_all_close(resumed_state, uninterrupted_state, rtol=1e-5, atol=1e-6)
    assert resumed["final"]["return_per_seed"] == pytest.approx(summary["final"]["return_per_seed"])
    assert [r["update"] for r in records(tmp_path / "resumed", "train")] == [1, 2, 3, 4]


def test_a_run_starts_from_the_actor_init_actor_names_and_refuses_one_that_does_not_fit(
    ippo_run, tmp_path
):
    config, _ = ippo_run
    start = str(Path(config.out) / "policy" / "final")
    still = replace(config, ppo=replace(config.ppo, learning_rate=1e-12), num_updates=2)
    train(replace(still, out=str(tmp_path / "from"), init_actor=start), env=MatchingGame())
    train(replace(still, out=str(tmp_path / "fresh")), env=MatchingGame())

    initial = jax.tree.leaves(baselines.load(start).params)
    for run, starts_there in (("from", True), ("fresh", False)):
        state, _ = saved_state(tmp_path / run)
        actors = jax.tree.leaves(state["runner"]["params"]["actor"])
        for seed in range(config.num_seeds):  # every seed starts from the policy
            close = all(
                np.allclose(np.asarray(a)[seed], b, atol=1e-6)
                for a, b in zip(actors, initial, strict=True)
            )
            assert close == starts_there, (run, seed)
    wider = replace(still, network=NetworkConfig(hidden_size=16, num_layers=1))
    with pytest.raises(ConfigError, match=r"init_actor=.*does not fit.*--network"):
        train(replace(wider, out=str(tmp_path / "wider"), init_actor=start), env=MatchingGame())


def test_resume_refuses_changed_settings_and_fresh_runs_refuse_old_checkpoints(ippo_run):
    config, _ = ippo_run
    with pytest.raises(ConfigError, match="num_envs"):
        train(replace(config, num_envs=8, resume=True), env=MatchingGame())
    with pytest.raises(ConfigError, match="--resume"):
        train(config, env=MatchingGame())


def test_two_forced_devices_match_one_device(ippo_run, tmp_path):
    """The data-parallel run (environments sharded, gradients averaged) equals one device."""
    config, _ = ippo_run
    script = textwrap.dedent(
        f"""
        import os
        os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
        import dataclasses, jax
        assert len(jax.devices()) == 2
        from baselines.common.config import TrainConfig
        from baselines.common.trainer import compiled_program, train
        from tests.baselines_toy_env import MatchingGame
        config = TrainConfig.load(__import__("pathlib").Path({str(config.out)!r}) / "config.json")
        train(dataclasses.replace(config, out={str(tmp_path / "two")!r}), env=MatchingGame())
        # Each device steps its own half of the environments.
        program = compiled_program(config, MatchingGame())
        keys = jax.random.split(jax.random.PRNGKey(0), config.num_seeds)
        runner, _ = program.run_chunk(program.init(keys))
        observation = runner.rollout.view.observation
        assert len(observation.sharding.device_set) == 2
        assert observation.sharding.shard_shape(observation.shape)[1] == config.num_envs // 2
        """
    )
    environment = {**os.environ, "PYTHONPATH": str(REPO), "JAX_PLATFORMS": "cpu"}
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, env=environment, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-3000:]
    one_device, _ = saved_state(Path(config.out))
    two_devices, _ = saved_state(tmp_path / "two", like=one_device)
    for expected, actual in zip(
        jax.tree.leaves(one_device), jax.tree.leaves(two_devices), strict=True
    ):
        np.testing.assert_allclose(np.asarray(actual), np.asarray(expected), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: TrainConfig(num_updates=5, updates_per_chunk=2),
            "num_updates=5 must be a multiple of updates_per_chunk=2",
        ),
        (
            lambda: TrainConfig(num_envs=6, ppo=PPOConfig(num_minibatches=4)),
            "num_envs=6 must be divisible by ppo.num_minibatches=4",
        ),
        (lambda: PPOConfig(gamma=1.5), "gamma=1.5 must lie in [0, 1]"),
        (lambda: PPOConfig(max_grad_norm=0.0), "max_grad_norm=0.0 must be positive"),
        (lambda: PPOConfig(entropy_coef=-0.1), "entropy_coef=-0.1 must be at least 0"),
        (
            lambda: TrainConfig(options=alemlite.spec("dining").options(num_agents=1)),
            "num_agents=1 is too small; a table needs at least 2",
        ),
        (
            lambda: TrainConfig(env="craft", options=alemlite.spec("dining").options()),
            "env='craft' takes CraftOptions, not DiningOptions; build the options with "
            "alemlite.spec('craft').options(...)",
        ),
        (
            lambda: TrainConfig(env="chess"),
            "unknown environment 'chess'; choose one of: "
            + ", ".join(alemlite.registered_environments()),
        ),
        (lambda: TrainConfig(pool_size=-1), "pool_size=-1 must be 0 (no pool) or positive"),
        (
            lambda: TrainConfig(env="craft", num_envs=4, refresh_per_step=5),
            "refresh_per_step=5 must be at least 1 and at most pool_size=4",
        ),
    ],
)
def test_invalid_configs_name_the_value_and_the_fix(build, message):
    """At construction (the command line's parse), as `field=VALUE must ...` in one line."""
    with pytest.raises(ConfigError) as refusal:
        build()
    assert str(refusal.value) == message


@pytest.mark.parametrize(
    ("args", "label", "num_agents"),
    [
        (["--env", "dining", "--num-agents", "10"], "dining-10_shaped", 10),
        (["--env", "craft", "--num-agents", "2", "--map-size", "16"], "craft-2_16_medium", 2),
        (["--env", "matrix", "--game", "stag_hunt"], "matrix-stag_hunt_2", 2),
    ],
)
def test_command_line_parses_into_the_typed_config(args, label, num_agents):
    """The environment's options are the command's flags; the run is named by them."""
    import typing

    import tyro

    from alemlite_app.cli import COMMANDS, _load, with_env_options

    main = _load(COMMANDS[("train",)])
    config_type = typing.get_type_hints(main)["config"]
    args = ["mappo", *args, "--network.recurrent"]
    config = tyro.cli(with_env_options(config_type, args), args=args)
    assert (config.algorithm, config.network.recurrent) == ("mappo", True)
    assert config.options.num_agents == num_agents
    assert make_env(config).num_agents == num_agents
    assert str(config.output_dir) == f"runs/mappo-{label}"
    # A run's config.json reads back as the same settings.
    assert TrainConfig.from_dict(config.to_dict()).to_dict() == config.to_dict()


def test_resume_names_each_changed_setting_by_its_flag():
    saved = TrainConfig(env="craft", num_envs=4)
    changed = TrainConfig(
        env="craft",
        options=alemlite.spec("craft").options(max_steps=50),
        num_envs=8,
        ppo=PPOConfig(gamma=0.9),
        num_updates=400,
        out="elsewhere",
    )
    assert differences_that_break_resume(changed, saved) == ["max_steps", "ppo.gamma", "num_envs"]
    assert differences_that_break_resume(saved, saved) == []


def test_an_old_config_json_is_refused_in_one_line():
    old = {**TrainConfig().to_dict(), "philosophers": 5, "run_dir": "runs/x"}
    old.pop("options")
    with pytest.raises(ConfigError) as refusal:
        TrainConfig.from_dict(old)
    assert str(refusal.value) == (
        "settings ['philosophers', 'run_dir'] are not training settings (a config.json written "
        "by an older alemlite?); start the run afresh in a new --out"
    )


# ---- every registered environment, from its spec alone ---------------------------------------
@pytest.mark.parametrize("env_name", alemlite.registered_environments())
def test_every_registered_environment_trains_from_its_spec(env_name, tmp_path):
    """The trainer, its references and the exported policy need nothing but the spec: a new
    environment (one folder and a registry line) trains without a line of `baselines/`."""
    spec = alemlite.spec(env_name)
    options = replace(spec.options(**spec.small_options), max_steps=6)  # episodes end in T=8
    config = TrainConfig(
        env=env_name,
        options=options,
        out=str(tmp_path),
        **{
            **TINY,
            **dict(num_updates=2, updates_per_chunk=1, eval_interval=1, num_seeds=1),
            **dict(eval_episodes=4, test_episodes=4),
        },
    )
    env = make_env(config)
    # The references are the spec's, built for this environment (evaluating them would only
    # compile the environment again: `alemlite.evaluation` and its tests cover that).
    references = reference_policies(env_name, env)
    assert list(references) == list(spec.reference_policies)
    assert all(callable(policy) for policy in references.values())
    summary = train(config, env)
    assert summary["env"] == {"name": env_name, "options": dataclasses.asdict(options)}
    for record in records(tmp_path, "train"):
        for name in ("loss/total", "loss/policy", "loss/value", "loss/entropy"):
            assert np.isfinite(record[name]), (name, record)
        assert record["episode/count"] >= 1
    assert [r["update"] for r in records(tmp_path, "eval")] == [1, 2]
    policy = baselines.load(str(tmp_path / "policy" / "best"))
    assert policy.description["env"] == summary["env"]
    made = policy.make_env()
    assert (made.name, made.num_agents, made.observation_shape) == (
        env.name,
        env.num_agents,
        env.observation_shape,
    )
    policy.check_fits(made)
    assert TrainConfig.load(tmp_path / "config.json") == config


def test_the_run_directory_is_out_or_named_by_the_environment(tmp_path):
    assert TrainConfig(out=str(tmp_path)).output_dir == tmp_path  # a string, as JSON keeps it
    assert TrainConfig(out=tmp_path).to_dict()["out"] == str(tmp_path)
    assert TrainConfig(out="").out is None
    assert TrainConfig(algorithm="grpo").output_dir == Path("runs/grpo-dining-5_shaped")
    TrainConfig(out=tmp_path).save(tmp_path / "config.json")
    assert TrainConfig.load(tmp_path / "config.json") == TrainConfig(out=tmp_path)
