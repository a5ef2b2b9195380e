"""Prompts per second serialised from a batch of environments (dining and Craft).

A batch is played a few steps with a uniform-random policy so that states and
messages vary; then, per repetition, the batched state (with the action masks) is
copied to the host once (`jax.device_get`) and every agent's observation text is
built. The figure counts both the transfer and the text building, as the runner
does each step.

    python -m benchmarks.prompt_throughput [--dining-tables 2048] [--craft-worlds 256]
    alemlite bench prompts
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
import tyro

import alemlite
from alemlite.core.errors import named_as, require_at_least
from alemlite.core.prompting import PromptOptions
from alemlite.envs.craft.config import CraftConfig
from alemlite.envs.craft.prompting import CraftRenderer
from alemlite.envs.dining.config import DiningConfig
from alemlite.envs.dining.prompting import DiningRenderer
from benchmarks.harness import ResultsFolder, write_results

MESSAGE = "I will wait for you to eat first, then take the fork on my left."


def played_batch(env, num_envs: int, warm_steps: int):
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


def measure(env, renderer, options: PromptOptions, num_envs: int, repeats: int) -> dict:
    params, batch = played_batch(env, num_envs, warm_steps=3)
    host_params = jax.device_get(params)
    episodes = np.repeat(np.arange(num_envs), env.num_agents)
    seats = np.tile(np.arange(env.num_agents), num_envs)
    rng = np.random.default_rng(0)
    messages = np.where(rng.random((num_envs, env.num_agents)) < 0.5, MESSAGE, "").astype(object)
    timings = []
    for _ in range(repeats):
        batch = jax.block_until_ready(jax.tree.map(lambda leaf: leaf + jnp.zeros_like(leaf), batch))
        started = time.perf_counter()
        host_state, host_mask = jax.device_get(batch)
        texts = renderer.observations(
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


@dataclass(frozen=True)
class PromptBenchConfig(ResultsFolder):
    """Measure prompts per second serialised from a batch (JSON under benchmarks/results/)."""

    dining_tables: int = 2048
    philosophers: int = 5
    craft_worlds: int = 256
    craft_agents: int = 3
    repeats: int = 10

    def __post_init__(self):
        require_at_least(
            1,
            dining_tables=self.dining_tables,
            craft_worlds=self.craft_worlds,
            repeats=self.repeats,
        )
        with named_as(num_philosophers="philosophers", num_agents="craft_agents"):
            DiningConfig(num_philosophers=self.philosophers)
            CraftConfig(num_agents=self.craft_agents)


def run(config: PromptBenchConfig) -> dict:
    """Time the batched dining and Craft serialisers, transfer included."""
    out_dir, provenance = config.begin("prompt_throughput")
    dining = alemlite.make("dining", num_philosophers=config.philosophers)
    craft = alemlite.make("craft", num_agents=config.craft_agents)
    dining_renderer, craft_renderer = DiningRenderer.for_env(dining), CraftRenderer(craft)
    results = [
        measure(dining, dining_renderer, PromptOptions(), config.dining_tables, config.repeats),
        measure(
            craft, craft_renderer, PromptOptions(variant="collaborative"),
            config.craft_worlds, config.repeats,
        ),
    ]  # fmt: skip
    payload = {"config": {**config.__dict__, "out_dir": str(out_dir)}, "results": results}
    path = write_results("prompt_throughput", payload, out_dir, provenance)
    for result in results:
        print(
            f"{result['env']}: {result['prompts_per_s_median']:,.0f} prompts/s (median of "
            f"{result['repeats']}; {result['prompts_per_batch']} prompts per batch)"
        )
    print(f"wrote {path}")
    return payload


if __name__ == "__main__":
    run(tyro.cli(PromptBenchConfig))
