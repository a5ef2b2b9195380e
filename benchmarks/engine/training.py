"""Agent steps per second of whole updates against the environment alone (`alemlite bench
training --env NAME` in `alemlite_app/bench.py`, and `benchmarks/training_speed.py`).

For each batch size, times (a) the environment alone, `num_steps` auto-reset steps of
`VecEnv(LogWrapper(env))` (with the same start-state pool as training) driven by hashed
actions, and (b) one whole update of each algorithm (the same rollout through the
networks, GAE, and every epoch and minibatch of PPO), both compiled ahead of time, and
reports their ratio (`measure`), with its plot (`plot`).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from tqdm.auto import tqdm

from alemlite.core import LogWrapper, VecEnv
from alemlite.core.errors import require_at_least
from alemlite.core.registry import DEFAULT_ENV, resolve_options
from alemlite.core.spec import EnvOptions
from baselines.common.config import NetworkConfig, TrainConfig
from baselines.common.trainer import build_algorithm, make_env, run_updates
from benchmarks.harness import ResultsFolder, time_compiled, vec_rollout
from benchmarks.peers.protocol import hash_actions

BILLION = 1e9


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
    env = make_env(config.train_config())
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
            point[f"{name}_hours_per_billion_agent_steps"] = hours_per_billion(
                point[f"{name}_agent_steps_per_s"]
            )
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


def hours_per_billion(agent_steps_per_s: float) -> float:
    """Projected wall time of one billion agent steps at a measured update throughput."""
    return BILLION / agent_steps_per_s / 3600


def observed_rollout(env: Any, num_envs: int, num_steps: int, pool_size: int, reading: str):
    """`run(key)`: `num_steps` auto-reset steps of hashed actions, the observation `reading`:
    "unused" (XLA never builds it), "on_device" (summed inside the compiled loop, as a learner
    consumes it) or "to_host" (one compiled step per call, each observation copied to the
    host, as a Python loop that reads it does)."""
    vec = VecEnv(LogWrapper(env), num_envs, pool_size=pool_size)
    params = env.default_params

    def step(state, key, t):
        actions = hash_actions(t, num_envs, env.num_agents, env.num_actions)
        observation, state, reward, _, _ = vec.step(key, state, actions, params)
        return observation, state, reward

    if reading == "to_host":
        reset, one = jax.jit(vec.reset), jax.jit(step)

        def run_on_host(key):
            _, state = reset(key, params)
            total = 0.0
            for t in range(num_steps):
                key, step_key = jax.random.split(key)
                observation, state, _ = one(state, step_key, t)
                total += float(np.asarray(observation).sum())  # the whole observation, read
            return total

        return run_on_host

    def run(key):
        _, state = vec.reset(key, params)

        def one_step(carry, t):
            state, key = carry
            key, step_key = jax.random.split(key)
            observation, state, reward = step(state, step_key, t)
            used = observation.sum() if reading == "on_device" else 0.0
            return (state, key), reward.sum() + used

        return jax.lax.scan(one_step, (state, key), jnp.arange(num_steps))[1].sum()

    return run


def measure_variants(
    variants: dict[str, TrainingSpeedConfig],
    rounds: int,
    observation_log2_envs: tuple[int, ...] = (8,),
    host_steps: int = 8,
) -> dict[str, Any]:
    """Like `measure`, for several settings of one environment (e.g. its observation
    encodings) timed in alternation: per batch size everything is compiled first, then each
    round times every variant's env-only rollout and whole updates once, in an order that
    reverses every round, so that a machine shared with other jobs loads every variant
    alike. At the batch sizes `observation_log2_envs` the observation's cost is timed too:
    env-only with the observation summed on device, and copied to the host step by step.
    Medians over the rounds; the 1-minute load average is recorded per round."""
    first = next(iter(variants.values()))
    key = jax.random.PRNGKey(0)
    points = []
    for log2 in first.log2_envs:
        num_envs = 2**log2
        timed: dict[tuple[str, str], Any] = {}
        compile_s: dict[tuple[str, str], float] = {}
        steps: dict[tuple[str, str], int] = {}
        for label, config in tqdm(variants.items(), desc=f"compile {num_envs} envs", leave=False):
            env = make_env(config.train_config())
            pool = config.train_config(num_envs=num_envs).resolved_pool_size
            agent_steps = num_envs * config.num_steps * env.num_agents
            readings = ("unused", "on_device") if log2 in observation_log2_envs else ("unused",)
            for reading in readings:
                run = observed_rollout(env, num_envs, config.num_steps, pool, reading)
                start = time.perf_counter()
                compiled = jax.jit(run).lower(key).compile()
                compile_s[label, f"env_only_{reading}"] = time.perf_counter() - start
                timed[label, f"env_only_{reading}"] = functools.partial(compiled, key)
                steps[label, f"env_only_{reading}"] = agent_steps
            if log2 in observation_log2_envs:
                host = observed_rollout(env, num_envs, host_steps, pool, "to_host")
                host(key)  # compiles its step
                timed[label, "env_only_to_host"] = functools.partial(host, key)
                steps[label, "env_only_to_host"] = num_envs * host_steps * env.num_agents
            for name in config.algorithms:
                algorithm = build_algorithm(config.train_config(name, num_envs), env)
                runner = jax.jit(jax.vmap(algorithm.init))(key[None])  # one seed
                update = functools.partial(run_updates, algorithm, 1)
                start = time.perf_counter()
                compiled = jax.jit(update).lower(runner).compile()
                compile_s[label, name] = time.perf_counter() - start
                timed[label, name] = functools.partial(compiled, runner)
                steps[label, name] = agent_steps
        for call in timed.values():
            jax.block_until_ready(call())  # warm-up
        durations: dict[tuple[str, str], list[float]] = {what: [] for what in timed}
        loads = []
        for round_index in tqdm(range(rounds), desc=f"time {num_envs} envs", leave=False):
            order = list(timed) if round_index % 2 == 0 else list(reversed(timed))
            for what in order:
                start = time.perf_counter()
                jax.block_until_ready(timed[what]())
                durations[what].append(time.perf_counter() - start)
            loads.append(os.getloadavg()[0])
        point: dict[str, Any] = {"num_envs": num_envs, "load_average_1min": loads}
        for (label, what), times in durations.items():
            rate = steps[label, what] / statistics.median(times)
            entry = {
                "agent_steps_per_s": rate,
                "median_s": statistics.median(times),
                "min_s": min(times),
                "max_s": max(times),
                "compile_s": compile_s.get((label, what)),
            }
            if what in first.algorithms:
                entry["hours_per_billion_agent_steps"] = hours_per_billion(rate)
            point.setdefault(label, {})[what] = entry
        print(
            f"num_envs={num_envs:6d} "
            + "  ".join(
                f"{label}: env {point[label]['env_only_unused']['agent_steps_per_s']:,.0f}"
                + "".join(
                    f", {name} {point[label][name]['agent_steps_per_s']:,.0f}"
                    for name in first.algorithms
                )
                for label in variants
            )
            + " agent steps/s"
        )
        points.append(point)
    return {
        "env": {
            label: {"name": config.env, "options": dataclasses.asdict(config.options)}
            for label, config in variants.items()
        },
        "num_steps": first.num_steps,
        "network": dataclasses.asdict(first.network),
        "rounds": rounds,
        "observation_log2_envs": list(observation_log2_envs),
        "host_steps": host_steps,
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


def plot_variants(result: dict[str, Any], algorithms: tuple[str, ...], path: Path) -> None:
    """Env-only and whole-update agent steps/s per batch size, one line style per variant."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    envs = [point["num_envs"] for point in result["points"]]
    figure, axis = plt.subplots(figsize=(6.5, 4.2))
    for style, label in zip(("o-", "s--", "^:"), result["env"], strict=False):
        for what, text in [
            ("env_only_unused", "env only"),
            *((name, f"{name} whole update") for name in algorithms),
        ]:
            rates = [point[label][what]["agent_steps_per_s"] for point in result["points"]]
            axis.plot(envs, rates, style, label=f"{label}: {text}")
    axis.set_xscale("log", base=2)
    axis.set_yscale("log")
    axis.set_xlabel("parallel environments")
    axis.set_ylabel("agent steps / s")
    env_name = next(iter(result["env"].values()))["name"]
    axis.set_title(f"training speed by observation encoding, {env_name}")
    axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
