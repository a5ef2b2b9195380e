"""One run of the study: train, evaluate its checkpoints, and reuse it once finished."""

from __future__ import annotations

import json
import math
import shutil
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jax
import numpy as np

import alemlite
from alemlite.core.errors import ConfigError
from alemlite.evaluation import evaluate
from baselines.common.checkpoints import RunCheckpoints
from baselines.common.config import CurriculumConfig, PPOConfig, TrainConfig
from baselines.common.reporting import MetricsLog, to_json
from baselines.common.trainer import compiled_program, make_env, train
from baselines.train import reference_policies
from benchmarks.study.config import ENV, EPISODE_METRICS, Budget
from benchmarks.study.statistics import comparison, run_result


def run_directory(runs_dir: Path, method: str, reward: str, suffix: int | str) -> Path:
    """A run's directory: `METHOD-REWARD-N`, or `METHOD-REWARD-curriculum`."""
    return runs_dir / f"{method}-{reward}-{suffix}"


def train_config(
    budget: Budget,
    method: str,
    size: int,
    reward: str,
    run_dir: Path,
    ppo: PPOConfig,
    curriculum: CurriculumConfig | None = None,
) -> TrainConfig:
    """The run's `TrainConfig`; TeamTR's updates are divided by N (one rollout per seat)."""
    rollouts = size if method == "teamtr" else 1
    num_updates = max(1, round(budget.num_updates / rollouts))
    interval = max(1, num_updates // budget.num_checkpoints)
    chunk = math.gcd(num_updates, interval)  # divides both, as the trainer requires
    return TrainConfig(
        algorithm=method,
        env=ENV,
        options=alemlite.spec(ENV).options(num_agents=size, reward=reward),
        curriculum=curriculum or CurriculumConfig(),
        ppo=ppo,
        num_envs=budget.num_envs,
        num_steps=budget.num_steps,
        num_updates=num_updates,
        updates_per_chunk=chunk,
        eval_interval=interval,
        num_seeds=budget.num_seeds,
        eval_episodes=budget.eval_episodes,
        test_episodes=budget.test_episodes,
        progress=False,
        out=run_dir,
    )


def _kept(per_episode: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    return {name: np.asarray(per_episode[name]) for name in EPISODE_METRICS}


def train_and_evaluate(config: TrainConfig) -> tuple[dict, dict[str, dict[str, np.ndarray]]]:
    """Train one run, then evaluate its untrained start, final and best actors per episode.

    The untrained actors are the trainer's own initial parameters (same seed keys); the
    final and best ones come from the last checkpoint, and must reproduce the trainer's
    own test returns.
    """
    env = make_env(config)
    start = time.perf_counter()
    summary = train(config, env=env)
    wall_s = time.perf_counter() - start
    program = compiled_program(config, env)  # the trainer's, from the cache
    seed_keys = jax.random.split(jax.random.PRNGKey(config.seed), config.num_seeds)
    initial = program.init(seed_keys).params["actor"]
    checkpoints = RunCheckpoints(config.output_dir / "checkpoints")
    state, _ = checkpoints.restore(checkpoints.latest_update(), None)
    checkpoints.close()
    actors = {
        "initial": initial,
        "final": state["runner"]["params"]["actor"],
        "best": state["best"]["actor_params"],
    }
    episodes = {
        name: _kept(program.evaluator(params, config.test_episodes, config.test_seed))
        for name, params in actors.items()
    }
    for name in ("final", "best"):
        np.testing.assert_allclose(
            episodes[name]["episode_return"].mean(axis=1),
            summary[name]["return_per_seed"],
            rtol=1e-5,
            atol=1e-5,
        )
    initial_validation = program.evaluator(initial, config.eval_episodes, config.validation_seed)
    evals = [
        r for r in MetricsLog(config.output_dir / "metrics.jsonl").read() if r["kind"] == "eval"
    ]
    curve = [(0, initial_validation["episode_return"].mean(axis=1).tolist())] + [
        (record["agent_steps"], record["validation_return"]) for record in evals
    ]
    info = {
        "algorithm": config.algorithm,
        "reward": config.options.reward,
        "num_philosophers": config.options.num_agents,
        "num_seeds": config.num_seeds,
        "num_envs": config.num_envs,
        "num_updates": config.num_updates,
        # Table steps: a curriculum's smaller tables play fewer agent steps per table step.
        "env_steps_per_seed": config.num_updates
        * config.num_envs
        * config.num_steps
        * program.algorithm.rollouts_per_update,
        "agent_steps_per_seed": summary["agent_steps_per_seed"],
        "wall_s": wall_s,
        "best_update_per_seed": summary["best"]["update_per_seed"],
        "validation_curve": curve,
    }
    if "curriculum" in summary:
        # The study's results name the scheduled option (the table size) as sizes.
        curriculum = summary["curriculum"]
        info["curriculum"] = {
            "sizes": curriculum["values"],
            "final_stage": curriculum["final_stage"],
            "final_size": curriculum["final_value"],
            "stage_per_checkpoint": [
                (record["agent_steps"], record["curriculum/value"]) for record in evals
            ],
        }
    return info, episodes


def study_run(
    config: TrainConfig, references: Mapping[str, Mapping[str, np.ndarray]], reuse: bool
) -> dict[str, Any]:
    """One run's result, from its finished run directory when `reuse` allows."""
    run_dir = config.output_dir
    done = run_dir / "study.json"
    if reuse and done.exists():
        saved = json.loads(done.read_text())
        if _same_run(saved["config"], config):
            return saved["result"]
    shutil.rmtree(run_dir, ignore_errors=True)
    info, episodes = train_and_evaluate(config)
    np.savez_compressed(
        run_dir / "episodes.npz",
        **{
            f"{which}/{name}": values
            for which, kept in episodes.items()
            for name, values in kept.items()
        },
    )
    result = run_result(episodes, references, info)
    done.write_text(to_json({"config": config.to_dict(), "result": result}))
    return result


def _same_run(saved: dict[str, Any], config: TrainConfig) -> bool:
    """Whether a finished run was trained with `config` (fields added since take their
    defaults; a config older code wrote, with settings that no longer exist, is not)."""
    try:
        return TrainConfig.from_dict(saved) == config
    except ConfigError:
        return False


def reference_episodes(
    size: int, reward: str, budget: Budget, cache: Path
) -> dict[str, dict[str, np.ndarray]]:
    """The scripted policies on the study's test episodes, per episode `(1, episodes)`."""
    path = cache / f"references-{reward}-{size}-{budget.test_episodes}.npz"
    if path.exists():
        stored = np.load(path)
        names = {key.split("/")[0] for key in stored.files}
        return {n: {m: stored[f"{n}/{m}"] for m in EPISODE_METRICS} for n in names}
    table = alemlite.spec(ENV)
    env = table.build(table.options(num_agents=size, reward=reward))
    test_seed = TrainConfig().test_seed
    episodes = {
        name: {
            metric: np.asarray(values)[None]
            for metric, values in evaluate(
                env, policy, env.default_params, budget.test_episodes, test_seed
            ).items()
            if metric in EPISODE_METRICS
        }
        for name, policy in reference_policies(ENV, env).items()
    }
    cache.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(
        path, **{f"{n}/{m}": values for n, kept in episodes.items() for m, values in kept.items()}
    )
    return episodes


def curriculum_comparisons(runs_dir: Path, method: str, reward: str, size: int) -> dict:
    """Curriculum against direct training, final and best, on the test episodes at `size`."""
    returns = {
        name: np.load(path / "episodes.npz")
        for name, path in (
            ("direct", run_directory(runs_dir, method, reward, size)),
            ("curriculum", run_directory(runs_dir, method, reward, "curriculum")),
        )
    }
    return {
        f"{which}_curriculum_vs_direct": comparison(
            returns["curriculum"][f"{which}/episode_return"],
            returns["direct"][f"{which}/episode_return"],
        )
        for which in ("final", "best")
    }
