"""The training loop shared by every algorithm.

Updates run as compiled chunks (`lax.scan` over `updates_per_chunk` whole
updates, vmapped over seeds, environments sharded over devices); Python runs
between chunks for the progress bar, metrics, checkpoints and plots. Each
checkpoint is evaluated on validation seeds and the best actor per seed is
kept; at the end the final and the best actors are both evaluated on separate
held-out test seeds, so choosing the best checkpoint does not bias its report.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import importlib
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct
from tqdm.auto import tqdm

from alemlite.core.environment import Environment
from alemlite.core.errors import require
from alemlite.core.registry import spec
from alemlite.evaluation import Policy, evaluate
from alemlite.outputs import is_write_failure, writable_folder, write_failure
from baselines.common import distributed
from baselines.common.algorithm import Algorithm, Runner
from baselines.common.checkpoints import RunCheckpoints, env_record, export_policy, run_lock
from baselines.common.config import (
    ALGORITHMS,
    DistributedConfig,
    TrainConfig,
    algorithm_label,
)
from baselines.common.curriculum import Schedule, make_schedule
from baselines.common.evaluation import SeedEvaluator
from baselines.common.networks import observation_parts
from baselines.common.reporting import (
    MetricsLog,
    held_out_summary,
    plot_learning_curve,
    to_json,
    train_records,
)
from baselines.common.resume import check_resumable


@struct.dataclass
class BestActors:
    """Per seed: the actor with the highest validation return so far."""

    actor_params: Any  # leaves (S, ...)
    validation_return: jax.Array  # (S,)
    update: jax.Array  # (S,) int32, -1 before the first checkpoint


def make_env(config: TrainConfig) -> Environment:
    """The environment the run trains on; a curriculum's fits its largest value."""
    env_spec = spec(config.env)
    if not config.curriculum.enabled:
        return env_spec.build(config.options)
    largest = max(config.curriculum.values)
    return env_spec.make(**env_spec.curriculum.make_kwargs(config.options, largest))


def build_algorithm(config: TrainConfig, env: Environment) -> Algorithm:
    # The networks read the observation by its parts (e.g. ids to embed).
    network = dataclasses.replace(config.network, observation_parts=observation_parts(env))
    part = dataclasses.replace(config.algorithm_config(), network=network)
    module_name, class_name = ALGORITHMS[config.algorithm].split(":")
    return getattr(importlib.import_module(module_name), class_name)(env, part)


def run_updates(algorithm: Algorithm, length: int, runner: Runner):
    """`length` whole updates of a seed-vmapped `runner`; metrics gain leading `(length, S)`."""

    def one_update(runner, _):
        return jax.vmap(algorithm.update)(runner)

    return jax.lax.scan(one_update, runner, None, length=length)


def _with_shardings(abstract: Any, shardings: Any) -> Any:
    return jax.tree.map(
        lambda leaf, sharding: jax.ShapeDtypeStruct(leaf.shape, leaf.dtype, sharding=sharding),
        abstract,
        shardings,
    )


@dataclass(frozen=True)
class CompiledProgram:
    """The jitted functions of a run; shared by runs that differ only in seeds and outputs."""

    algorithm: Algorithm
    init: Any  # seed keys (S, 2) -> Runner, laid out by `shardings`
    run_chunk: Any  # Runner -> (Runner, metrics (updates_per_chunk, S))
    evaluator: SeedEvaluator
    abstract_runner: Any  # shapes, dtypes and shardings of the Runner
    schedule: Schedule  # how the environments change over the run (a curriculum's stages)


_PROGRAMS: dict[Any, CompiledProgram] = {}


def program_key(config: TrainConfig) -> TrainConfig:
    """`config` with every field that leaves the compiled functions unchanged reset."""
    defaults = TrainConfig()
    return dataclasses.replace(
        config,
        seed=0,
        init_actor="",
        num_updates=config.num_updates
        if config.ppo.anneal_learning_rate
        else config.updates_per_chunk,
        eval_interval=config.updates_per_chunk,
        validation_seed=defaults.validation_seed,
        test_seed=defaults.test_seed,
        test_episodes=defaults.test_episodes,
        out=defaults.out,
        resume=False,
        progress=False,
        distributed=DistributedConfig(),
    )


def compiled_program(config: TrainConfig, env: Environment) -> CompiledProgram:
    """Build (or reuse, within this process) the compiled functions for `config` on `env`."""
    cache_key = (program_key(config), env)
    try:
        return _PROGRAMS[cache_key]
    except KeyError:
        pass
    except TypeError:  # an unhashable environment is simply not cached
        cache_key = None
    algorithm = build_algorithm(config, env)
    mesh = distributed.data_mesh(config.num_envs)
    seed_keys = jax.ShapeDtypeStruct((config.num_seeds, 2), jnp.uint32)
    schedule = make_schedule(
        config.curriculum, config.env, env, algorithm, config.num_envs, config.num_seeds
    )

    def init_one(key):
        return schedule.first_batch(algorithm.init(key))

    # Seeds are initialised one after another (`lax.map`): the vmapped form of some inits
    # (MAPPO on dining N = 15, several seeds) compiles to a program that hangs on XLA:CPU.
    init_seeds = functools.partial(jax.lax.map, init_one)
    abstract_runner = jax.eval_shape(init_seeds, seed_keys)
    shardings = distributed.runner_shardings(mesh, abstract_runner)
    evaluator = SeedEvaluator(env, algorithm.actor, batch_size=config.eval_episodes)
    program = CompiledProgram(
        algorithm=algorithm,
        init=jax.jit(init_seeds, out_shardings=shardings),
        run_chunk=jax.jit(
            functools.partial(run_updates, algorithm, config.updates_per_chunk),
            in_shardings=(shardings,),
            out_shardings=(shardings, distributed.replicated(mesh)),
            donate_argnums=0,
        ),
        evaluator=evaluator,
        abstract_runner=_with_shardings(abstract_runner, shardings),
        schedule=schedule.compile(shardings, evaluator),
    )
    if cache_key is not None:
        _PROGRAMS[cache_key] = program
    return program


def evaluate_references(
    env: Environment, policies: Mapping[str, Policy], num_episodes: int, base_seed: int
) -> dict[str, dict[str, Any]]:
    """Held-out summaries of scripted policies on the same test episodes as the agents."""
    return {
        name: held_out_summary(
            {
                k: v[None]
                for k, v in evaluate(
                    env, policy, env.default_params, num_episodes, base_seed
                ).items()
            }
        )
        for name, policy in policies.items()
    }


def run_title(config: TrainConfig, env: Environment) -> str:
    """The learning curve's title: algorithm, environment and its setting."""
    return f"{algorithm_label(config.algorithm)} on {env.name} ({config.options.describe()})"


def train(
    config: TrainConfig,
    env: Environment | None = None,
    references: Mapping[str, Policy] | None = None,
    reference_summaries: Mapping[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """Train (or resume) the run in `config.output_dir`; returns the summary also written there.

    `references` are scripted policies evaluated on the run's test episodes beside it;
    runs that share an environment and test episodes may pass their `evaluate_references`
    summaries once evaluated as `reference_summaries` instead. The run directory is
    locked while the run trains (`run_lock`): a second run into it is refused.
    """
    distributed.initialise(config.distributed)
    env = env or make_env(config)
    run_dir = writable_folder(config.output_dir)  # before anything compiles
    lock = run_lock(run_dir) if jax.process_index() == 0 else contextlib.nullcontext()
    with lock:
        try:
            return _train(config, env, references, reference_summaries)
        except OSError as error:
            if not is_write_failure(error):
                raise
            raise write_failure(
                run_dir,
                error,
                "its metrics and every whole checkpoint are kept: free space and rerun it with "
                "--resume to continue from the last checkpoint",
            ) from error


def _train(config, env, references, reference_summaries) -> dict[str, Any]:
    is_main = jax.process_index() == 0
    run_dir = config.output_dir
    checkpoints = RunCheckpoints(run_dir / "checkpoints")
    log = MetricsLog(run_dir / "metrics.jsonl")
    if config.resume:
        update = check_resumable(config, run_dir, checkpoints)
    else:
        update = 0
        require(
            checkpoints.latest_update() is None,
            f"out={str(run_dir)!r} already holds checkpoints; pass --resume to continue it "
            "or choose a new --out",
        )
    # a resumed run restores its own actor
    initial_actor = _initial_actor(config, env) if config.init_actor and not config.resume else None
    program = compiled_program(config, env)
    algorithm, evaluator, schedule = program.algorithm, program.evaluator, program.schedule

    runner = program.init(jax.random.split(jax.random.PRNGKey(config.seed), config.num_seeds))
    if initial_actor is not None:
        runner = _with_initial_actor(runner, initial_actor)
    best = BestActors(
        actor_params=jax.tree.map(jnp.copy, runner.params["actor"]),  # runner is donated
        validation_return=jnp.full((config.num_seeds,), -jnp.inf),
        update=jnp.full((config.num_seeds,), -1, jnp.int32),
    )
    progress = schedule.start()
    if config.resume:
        abstract_state = distributed.global_layout(
            {
                "runner": program.abstract_runner,
                "best": jax.eval_shape(lambda: best),
                **schedule.checkpoint_entries(jax.eval_shape(lambda: progress)),
            }
        )
        update, state, _, notes = checkpoints.restore_newest(
            abstract_state, run_dir / "damaged_checkpoints"
        )
        runner, best = state["runner"], state["best"]
        progress = schedule.from_checkpoint(state)
        if is_main:
            for note in notes:
                print(note, file=sys.stderr, flush=True)
            log.truncate_after(update)
    elif is_main:
        log.truncate_after(0)
    if is_main:  # on a resume: the raised num_updates (and test_episodes) are the run's now
        _write_replacing(run_dir / "config.json", dataclasses.replace(config, resume=False).save)

    if reference_summaries is None:
        reference_summaries = (
            evaluate_references(env, references, config.test_episodes, config.test_seed)
            if references
            else {}
        )
    reference_returns = {
        name: summary["return_across_seeds"]["mean"]
        for name, summary in reference_summaries.items()
    }
    # Counted from the rollouts (seats in play), so a curriculum's padded tables count their size.
    agent_steps = max(
        (record["agent_steps"] for record in log.read() if record["update"] <= update), default=0
    )
    title = run_title(config, env)

    bar = tqdm(
        total=config.num_updates,
        initial=update,
        disable=not (config.progress and is_main),
        desc=config.algorithm,
        unit="update",
    )
    while update < config.num_updates:
        runner, metrics = program.run_chunk(runner)
        metrics = jax.device_get(metrics)
        records = train_records(metrics, update, agent_steps)
        agent_steps = records[-1]["agent_steps"]
        schedule.label(progress, records)  # the stage this chunk trained at
        update += config.updates_per_chunk
        bar.update(config.updates_per_chunk)
        bar.set_postfix(episode_return=records[-1]["episode/return"])
        checkpoint = None  # (state, meta) when this chunk ends at a checkpoint
        if update % config.eval_interval == 0 or update == config.num_updates:
            validation = evaluator(
                runner.params["actor"], config.eval_episodes, config.validation_seed
            )
            validation_return = validation["episode_return"].mean(axis=1)
            best = _keep_best(best, runner.params["actor"], validation_return, update)
            eval_record = {
                "kind": "eval",
                "update": update,
                "agent_steps": agent_steps,
                "validation_return": validation_return,
                "best_validation_return": np.asarray(best.validation_return),
            }
            # A curriculum may advance: the checkpoint holds the next stage's environments.
            progress, runner, stage_record = schedule.at_checkpoint(
                config.evaluation_config(), progress, runner, validation_return
            )
            eval_record.update(stage_record)
            state = distributed.global_arrays(
                {"best": best, **schedule.checkpoint_entries(progress), "runner": runner}
            )
            checkpoint = state, {"update": update, "validation_return": validation_return.tolist()}
            records.append(eval_record)
        # The records go to the log before their checkpoint is saved, so that a run stopped
        # at any point resumes with every record up to its checkpoint (later ones are dropped).
        if is_main:
            log.append(records)
        if checkpoint is not None:
            checkpoints.save(update, *checkpoint)
        if is_main:
            plot_learning_curve(
                log.read(),
                reference_returns,
                run_dir / "learning_curve.png",
                title,
                schedule.value_name,
            )
    bar.close()
    checkpoints.close()

    summary = _final_summary(config, evaluator, runner, best, agent_steps)
    summary.update(
        schedule.summary(config.evaluation_config(), progress, runner, best.actor_params, summary)
    )
    summary["references"] = reference_summaries
    # Every process takes part in the export: orbax saves collectively.
    _export_policies(run_dir, env, config, algorithm, runner, best)
    if is_main:
        _write_replacing(run_dir / "summary.json", lambda path: path.write_text(to_json(summary)))
    return summary


def _initial_actor(config: TrainConfig, env: Environment) -> Any:
    """The actor parameters of the policy `config.init_actor`, refused in one line (before
    anything compiles) where it does not fit the run's environment or network."""
    import baselines  # the loader of shipped and exported policies

    policy = baselines.load(config.init_actor)
    policy.check_fits(env)
    network = dataclasses.replace(config.network, observation_parts=observation_parts(env))
    require(
        policy.actor.network == network,
        f"init_actor={config.init_actor!r}: its actor ({policy.actor.network}) does not fit "
        f"this run's network ({network}); give the --network options it was trained with",
    )
    return policy.params


def _with_initial_actor(runner: Runner, actor_params: Any) -> Runner:
    """`runner` with every seed's actor parameters `actor_params` (and so is a frozen
    reference of the initial actor, where the algorithm keeps one)."""

    def per_seed(leaf, like):
        leaf = jnp.broadcast_to(jnp.asarray(leaf, like.dtype), like.shape)
        return jax.device_put(leaf, like.sharding)

    params = jax.tree.map(per_seed, actor_params, runner.params["actor"])
    initial = {name: params for name in ("actor", "reference") if name in runner.params}
    return runner.replace(params={**runner.params, **initial})


def _write_replacing(path: Path, write: Callable[[Path], None]) -> None:
    """Write `path` through a partial file: a run stopped meanwhile leaves the old file whole."""
    partial = path.with_name(f".{path.name}.partial")
    write(partial)
    partial.replace(path)


def _keep_best(best: BestActors, actor_params, validation_return: np.ndarray, update: int):
    improved = jnp.asarray(validation_return) > best.validation_return

    def choose(new, old):
        return jnp.where(improved.reshape(-1, *([1] * (new.ndim - 1))), new, old)

    return BestActors(
        actor_params=jax.tree.map(choose, actor_params, best.actor_params),
        validation_return=jnp.where(
            improved, jnp.asarray(validation_return), best.validation_return
        ),
        update=jnp.where(improved, update, best.update),
    )


def _final_summary(config, evaluator, runner, best, agent_steps: int) -> dict[str, Any]:
    final = evaluator(runner.params["actor"], config.test_episodes, config.test_seed)
    best_test = evaluator(best.actor_params, config.test_episodes, config.test_seed)
    return {
        "algorithm": config.algorithm,
        "env": env_record(config.env, config.options),
        "num_seeds": config.num_seeds,
        "num_updates": config.num_updates,
        "agent_steps_per_seed": agent_steps,
        "test_seed": config.test_seed,
        "test_episodes": config.test_episodes,
        "final": held_out_summary(final),
        "best": {
            **held_out_summary(best_test),
            "update_per_seed": np.asarray(best.update).tolist(),
            "validation_return_per_seed": np.asarray(best.validation_return).tolist(),
        },
    }


def _export_policies(run_dir: Path, env, config, algorithm, runner, best) -> None:
    """Export the final and the best actor of the seed with the best validation return."""
    seed = int(np.argmax(np.asarray(best.validation_return)))
    info = {
        "algorithm": config.algorithm,
        "env": env_record(env.name, config.options),
        "seed_index": seed,
        **({"init_actor": config.init_actor} if config.init_actor else {}),
    }
    pick = functools.partial(jax.tree.map, lambda leaf: leaf[seed])
    export_policy(run_dir / "policy" / "final", algorithm.actor, pick(runner.params["actor"]), info)
    export_policy(
        run_dir / "policy" / "best",
        algorithm.actor,
        pick(best.actor_params),
        {**info, "update": int(best.update[seed])},
    )
