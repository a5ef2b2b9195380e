"""The timing protocol, standalone (no alemlite import) so that peer virtual environments
can run it too; `benchmarks/harness.py` times alemlite with the same functions.

AOT compile timed apart, one warm-up, the median of `repeats` runs with min and max, and
hashed actions of (step, env, agent), so that the environment is timed, not the RNG.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import jax
import jax.numpy as jnp


def time_compiled(function, *args, repeats: int = 5) -> dict:
    start = time.perf_counter()
    compiled = jax.jit(function).lower(*args).compile()
    compile_s = time.perf_counter() - start
    jax.block_until_ready(compiled(*args))
    durations = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(compiled(*args))
        durations.append(time.perf_counter() - start)
    return {
        "compile_s": compile_s,
        "median_s": statistics.median(durations),
        "min_s": min(durations),
        "max_s": max(durations),
        "repeats": repeats,
    }


def hash_actions(step, num_envs: int, num_agents: int, num_actions: int):
    env = jnp.arange(num_envs, dtype=jnp.uint32)[:, None]
    agent = jnp.arange(num_agents, dtype=jnp.uint32)[None, :]
    mixed = (step.astype(jnp.uint32) * jnp.uint32(0x9E3779B1)) ^ (env * jnp.uint32(0x85EBCA77))
    mixed = mixed ^ (agent * jnp.uint32(0xC2B2AE3D))
    mixed = mixed ^ (mixed >> 15)
    mixed = mixed * jnp.uint32(0x2C1B3C6D)
    mixed = mixed ^ (mixed >> 12)
    return (mixed % jnp.uint32(num_actions)).astype(jnp.int32)


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--num-envs", type=int, default=64)
    parser.add_argument("--steps", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--num-agents", type=int, default=3)
    return parser.parse_args()


def report(
    peer: str,
    mode: str,
    num_envs: int,
    steps: int,
    num_agents: int,
    timing: dict,
    map_size: tuple[int, int],
):
    """One JSON line on stdout, read by the main benchmark; `map_size` is the peer's world
    (rows, columns), which sets its step's cost as much as the batch does."""
    env_steps = num_envs * steps / timing["median_s"]
    print(
        json.dumps(
            {
                "peer": peer,
                "mode": mode,
                "num_envs": num_envs,
                "num_agents": num_agents,
                "env_steps_per_s": env_steps,
                "agent_steps_per_s": env_steps * num_agents,
                "timing": timing,
                "map_size": [int(side) for side in map_size],
                "jax_version": jax.__version__,
                "device_kind": jax.devices()[0].device_kind,
            }
        ),
        flush=True,
    )
