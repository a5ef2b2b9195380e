"""`alemlite bench training --env NAME`: agent steps per second of whole updates against the
environment alone.

For each batch size, times (a) the environment alone, `num_steps` auto-reset steps of
`VecEnv(LogWrapper(env))` (with the same start-state pool as training) driven by hashed
actions, and (b) one whole update of each algorithm (the same rollout through the
networks, GAE, and every epoch and minibatch of PPO), both compiled ahead of time, and
reports their ratio. Writes `training_speed_<env>_<platform>.json` and a plot.

    alemlite bench training --env craft --num-agents 3 --map-size 32 --log2-envs 4 6 8
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax

from alemlite.core import LogWrapper
from alemlite.core.errors import require_at_least
from alemlite.core.registry import DEFAULT_ENV, resolve_options
from alemlite.core.spec import EnvOptions
from baselines.common.config import NetworkConfig, TrainConfig
from baselines.common.trainer import build_algorithm, run_updates
from benchmarks.harness import ResultsFolder, time_compiled, vec_rollout, write_results


@dataclass(frozen=True)
class TrainingSpeedConfig(ResultsFolder):
    """Time whole training updates against env-only rollouts (JSON and plot)."""

    env: str = DEFAULT_ENV
    """the environment (alemlite.registered_environments())"""
    options: EnvOptions | None = None
    """the environment's options; `--env NAME --help` lists them"""
    algorithms: tuple[str, ...] = ("ippo", "mappo")
    log2_envs: tuple[int, ...] = (4, 6, 8, 10)
    """Batch sizes num_envs = 2**k."""
    num_steps: int = 32
    network: NetworkConfig = field(default_factory=NetworkConfig)
    repeats: int = 5

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", resolve_options(self.env, self.options))
        require_at_least(0, log2_envs=self.log2_envs)
        require_at_least(1, num_steps=self.num_steps, repeats=self.repeats)

    def train_config(self, algorithm: str = "ippo", num_envs: int = 64) -> TrainConfig:
        """One update of `algorithm` on `num_envs` environments, as training runs it."""
        return TrainConfig(
            algorithm=algorithm,
            env=self.env,
            options=self.options,
            num_envs=num_envs,
            num_steps=self.num_steps,
            network=self.network,
            updates_per_chunk=1,
            num_updates=1,
            eval_interval=1,
        )


def measure(config: TrainingSpeedConfig) -> dict[str, Any]:
    """Per batch size: env-only agent steps/s and each algorithm's, with their ratio."""
    env = config.train_config().make_env()
    key = jax.random.PRNGKey(0)
    points = []
    for log2 in config.log2_envs:
        num_envs = 2**log2
        agent_steps = num_envs * config.num_steps * env.num_agents
        pool = config.train_config(num_envs=num_envs)
        env_only = vec_rollout(
            LogWrapper(env),
            num_envs,
            config.num_steps,
            "hashed",
            pool_size=pool.resolved_pool_size,
            refresh_per_step=pool.refresh_per_step,
        )
        timing = time_compiled(env_only, key)
        point = {
            "num_envs": num_envs,
            "pool_size": pool.resolved_pool_size,
            "agent_steps_per_call": agent_steps,
            "env_only": timing,
            "env_only_agent_steps_per_s": agent_steps / timing.median_s,
        }
        for name in config.algorithms:
            algorithm = build_algorithm(config.train_config(name, num_envs), env)
            runner = jax.jit(jax.vmap(algorithm.init))(key[None])  # one seed
            update = functools.partial(run_updates, algorithm, 1)
            timing = time_compiled(update, runner, repeats=config.repeats)
            point[name] = timing
            point[f"{name}_agent_steps_per_s"] = agent_steps / timing.median_s
            point[f"{name}_fraction_of_env_only"] = (
                point[f"{name}_agent_steps_per_s"] / point["env_only_agent_steps_per_s"]
            )
        print(
            f"num_envs={num_envs:6d}  env only {point['env_only_agent_steps_per_s']:12,.0f}"
            + "".join(
                f"  {name} {point[f'{name}_agent_steps_per_s']:10,.0f}"
                f" ({point[f'{name}_fraction_of_env_only']:.0%})"
                for name in config.algorithms
            )
            + " agent steps/s"
        )
        points.append(point)
    return {
        "env": {"name": config.env, "options": dataclasses.asdict(config.options)},
        "num_steps": config.num_steps,
        "network": dataclasses.asdict(config.network),
        "points": points,
    }


def plot(result: dict[str, Any], algorithms: tuple[str, ...], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    envs = [point["num_envs"] for point in result["points"]]
    figure, axis = plt.subplots(figsize=(6, 4))
    axis.plot(
        envs,
        [p["env_only_agent_steps_per_s"] for p in result["points"]],
        "o-",
        label="env only (hashed actions)",
    )
    for name in algorithms:
        axis.plot(
            envs,
            [p[f"{name}_agent_steps_per_s"] for p in result["points"]],
            "o-",
            label=f"{name} whole update",
        )
    axis.set_xscale("log", base=2)
    axis.set_yscale("log")
    axis.set_xlabel("parallel environments")
    axis.set_ylabel("agent steps / s")
    axis.set_title(f"training speed, {result['env']['name']}")
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def run(config: TrainingSpeedConfig) -> dict[str, Any]:
    """Time whole updates against the environment alone; write the JSON and the plot."""
    name = f"training_speed_{config.env}"
    out, provenance = config.begin(name)
    result = measure(config)
    path = write_results(name, result, out, provenance)
    plot(result, config.algorithms, path.with_suffix(".png"))
    print(f"wrote {path}")
    return result
