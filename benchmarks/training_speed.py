"""Training speed: agent steps per second of the whole update against an env-only rollout.

For each batch size, times (a) the environment alone, `num_steps` auto-reset steps
of `VecEnv(LogWrapper(env))` (with the same start-state pool as training) driven by
hashed actions, and (b) one whole update of each algorithm (the same rollout
through the networks, GAE, and every epoch and minibatch of PPO), both compiled
ahead of time, and reports their ratio. Writes
`benchmarks/results/training_speed_<env>_<platform>.json` and a plot.

    python -m benchmarks.training_speed --env dining --philosophers 5
    python -m benchmarks.training_speed --env craft --agents 3 --map-size 32 --max-steps 500 \
        --network.hidden-size 32 --log2-envs 4 6 8
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import jax
import tyro

import alemlite
from alemlite.core import LogWrapper
from alemlite.core.errors import named_as, require_at_least
from alemlite.envs.craft.config import CraftConfig, parse_difficulty
from alemlite.envs.dining.config import DiningConfig
from baselines.common.config import NetworkConfig, TrainConfig
from baselines.common.trainer import build_algorithm, run_updates
from benchmarks.harness import ResultsFolder, time_compiled, vec_rollout, write_results


@dataclass(frozen=True)
class TrainingSpeedConfig(ResultsFolder):
    """Time whole training updates against env-only rollouts (JSON and plot in results/)."""

    env: Literal["dining", "craft"] = "dining"
    philosophers: int = 5
    map_size: int = 16
    """craft: side of the square map."""
    agents: int = 2
    """craft: number of agents."""
    max_steps: int | None = None
    """Episode length; None: the environment's default."""
    difficulty: str = "medium"
    """craft: coordination difficulty."""
    algorithms: tuple[str, ...] = ("ippo", "mappo")
    log2_envs: tuple[int, ...] = (4, 6, 8, 10)
    """Batch sizes num_envs = 2**k."""
    num_steps: int = 32
    network: NetworkConfig = field(default_factory=NetworkConfig)
    repeats: int = 5

    def __post_init__(self):
        require_at_least(0, log2_envs=self.log2_envs)
        require_at_least(1, num_steps=self.num_steps, repeats=self.repeats)
        with named_as(num_philosophers="philosophers", num_agents="agents"):
            DiningConfig(num_philosophers=self.philosophers, max_steps=self.max_steps or 30)
            CraftConfig(
                num_agents=self.agents,
                map_size=self.map_size,
                max_steps=self.max_steps or 10_000,
                difficulty=parse_difficulty(self.difficulty),
            )


def measure(config: TrainingSpeedConfig) -> dict:
    base = TrainConfig(
        env=config.env,
        philosophers=config.philosophers,
        map_size=config.map_size,
        agents=config.agents,
        max_steps=config.max_steps,
        difficulty=config.difficulty,
        num_steps=config.num_steps,
        network=config.network,
        updates_per_chunk=1,
        num_updates=1,
        eval_interval=1,
    )
    env = alemlite.make(base.env, **base.env_kwargs())
    key = jax.random.PRNGKey(0)
    points = []
    for log2 in config.log2_envs:
        num_envs = 2**log2
        agent_steps = num_envs * config.num_steps * env.num_agents
        pool = dataclasses.replace(base, num_envs=num_envs)
        env_only = vec_rollout(
            LogWrapper(env),
            num_envs,
            config.num_steps,
            random_policy=False,
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
            train_config = dataclasses.replace(base, algorithm=name, num_envs=num_envs)
            algorithm = build_algorithm(train_config, env)
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
        "env": base.env_kwargs() | {"name": base.env},
        "num_steps": config.num_steps,
        "network": dataclasses.asdict(config.network),
        "points": points,
    }


def plot(result: dict, algorithms: tuple[str, ...], path: Path) -> None:
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


def main(config: TrainingSpeedConfig) -> None:
    out_dir, provenance = config.begin("training_speed")
    result = measure(config)
    name = f"training_speed_{config.env}"
    path = write_results(name, result, out_dir, provenance)
    plot(result, config.algorithms, path.with_suffix(".png"))
    print(f"wrote {path}")


if __name__ == "__main__":
    main(tyro.cli(TrainingSpeedConfig))
