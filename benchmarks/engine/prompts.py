"""Prompts per second serialised from a batch (`alemlite bench prompts --env NAME` in
`alemlite_app/bench.py`, and `benchmarks/prompt_throughput.py`).

A batch is played a few steps with a uniform-random policy so that states and messages
vary; then, per repetition, the batched state (with the action masks) is copied to the
host once (`jax.device_get`) and every agent's observation text is built by the
environment's prompt builder (its spec's `prompts`) with the given prompt switches. The
figure counts both the transfer and the text building, as the LLM runner does each step.
"""

from __future__ import annotations

import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from alemlite.core.environment import Environment
from alemlite.core.prompting import PromptBuilder, PromptOptions

# Half the agents carry this last message (the published figures used it).
MESSAGE = "I will wait for you to eat first, then take the fork on my left."


def played_batch(env: Environment, num_envs: int, warm_steps: int):
    """`num_envs` states after `warm_steps` uniform-random steps, and their action masks."""
    params = env.default_params

    def one(key):
        _, state = env.reset(key, params)

        def body(step, state):
            policy_key, env_key = jax.random.split(jax.random.fold_in(key, step))
            actions = jax.random.randint(policy_key, (env.num_agents,), 0, env.num_actions)
            return env.step(env_key, state, actions, params)[1]

        state = jax.lax.fori_loop(0, warm_steps, body, state)
        return state, env.action_mask(state, params)

    batch = jax.jit(jax.vmap(one))(jax.random.split(jax.random.PRNGKey(0), num_envs))
    return params, jax.block_until_ready(batch)


def measure(
    env: Environment, builder: PromptBuilder, options: PromptOptions, num_envs: int, repeats: int
) -> dict[str, Any]:
    """Prompts per second of `builder` over a batch of `num_envs`, the transfer included."""
    params, batch = played_batch(env, num_envs, warm_steps=3)
    host_params = jax.device_get(params)
    episodes = np.repeat(np.arange(num_envs), env.num_agents)
    seats = np.tile(np.arange(env.num_agents), num_envs)
    rng = np.random.default_rng(0)
    messages = np.where(rng.random((num_envs, env.num_agents)) < 0.5, MESSAGE, "").astype(object)
    # A fresh device copy each repeat, so the timed transfer is never served from an array's
    # host cache; jitted, the copy is one program (eagerly, one per leaf shape).
    fresh = jax.jit(lambda tree: jax.tree.map(jnp.copy, tree))
    timings = []
    for _ in range(repeats):
        batch = jax.block_until_ready(fresh(batch))
        started = time.perf_counter()
        host_state, host_mask = jax.device_get(batch)
        texts = builder.observations(
            host_state, host_params, episodes, seats, messages, host_mask, options
        )
        timings.append(time.perf_counter() - started)
    return {
        "env": env.name,
        "envs": num_envs,
        "agents_per_env": env.num_agents,
        "prompts_per_batch": len(texts),
        "repeats": repeats,
        "prompts_per_s_median": len(texts) / float(np.median(timings)),
        "prompts_per_s_best": len(texts) / min(timings),
        "mean_prompt_chars": float(np.mean([len(text) for text in texts])),
    }


def print_result(result: dict[str, Any]) -> None:
    print(
        f"{result['env']}: {result['prompts_per_s_median']:,.0f} prompts/s (median of "
        f"{result['repeats']}; {result['prompts_per_batch']} prompts per batch)"
    )
