"""A sample prompt of any environment that language models can play: one agent's
observation (and, with --system, the system prompt before it) in the state reached after
a few steps of the environment's default team, on the seed protocol.

    python -m llm_bridge.example_prompt --env craft [--steps 40] [--seat 1] [--system]

The environment is built with its default options. Nothing is asked of a model: the
prompt is what the agent would be shown, with no messages from its teammates yet.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import jax
import numpy as np
import tyro

import alemlite
from alemlite.core.errors import require
from alemlite.core.registry import DEFAULT_ENV, resolve_options
from alemlite.core.spec import EnvOptions
from alemlite.evaluation import step_keys
from llm_bridge.sweep import env_with_prompts


@dataclass(frozen=True)
class ExamplePromptConfig:
    """Print one agent's prompt in a state of the environment's default team's play."""

    env: str = DEFAULT_ENV
    """the environment (alemlite.registered_environments())"""
    options: tyro.conf.Suppress[EnvOptions | None] = None
    """the environment's options (its defaults here)"""
    seed: int = 0
    """the episode's seed (the protocol's episode 0 of base seed `seed`)"""
    steps: int = 0
    """steps the environment's default policy plays before the prompt (it stops where the
    episode ends)"""
    seat: int = 0
    """the agent whose prompt is printed"""
    variant: str | None = None
    """the prompt variant (default: the environment's)"""
    system: bool = False
    """print the system prompt too"""

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", resolve_options(self.env, self.options))
        require(self.steps >= 0, f"steps={self.steps} must be 0 or more")
        require(self.seat >= 0, f"seat={self.seat} must be 0 or more")


def main(config: ExamplePromptConfig) -> str:
    """Print (and return) the prompt `config` asks for."""
    env_spec = alemlite.spec(config.env)
    env, builder = env_with_prompts(env_spec, config.options)
    require(
        config.seat < env.num_agents,
        f"seat={config.seat} must be below the {env.num_agents} seats of this {config.env}",
    )
    params = env.default_params
    policy = env_spec.policy(env_spec.default_policy, env)

    @jax.jit
    def advance(state, play_key, step):
        policy_key, env_key = step_keys(play_key, step)
        _, state, _, done, _ = env.step(env_key, state, policy(policy_key, state, params), params)
        return state, done

    reset_key, play_key = jax.random.split(jax.random.PRNGKey(config.seed))
    _, state = jax.jit(env.reset)(reset_key, params)
    for step in range(config.steps):
        next_state, done = advance(state, play_key, step)
        if bool(done):  # the prompt of a finished episode is never asked: keep the last one
            break
        state = next_state
    batch = jax.device_get(jax.tree.map(lambda leaf: leaf[None], state))
    mask = np.asarray(jax.jit(env.action_mask)(state, params))[None]
    options = env_spec.prompt_defaults
    if config.variant is not None:
        options = dataclasses.replace(options, variant=config.variant)
    require(
        options.variant in builder.variants,
        f"variant={options.variant} must be one of: {', '.join(builder.variants)}",
    )
    messages = np.full((1, env.num_agents), "", dtype=object)
    (text,) = builder.observations(
        batch, jax.device_get(params), np.array([0]), np.array([config.seat]), messages, mask,
        options,
    )  # fmt: skip
    if config.system:
        text = builder.system_prompt(options) + "\n\n---\n\n" + text
    print(text)
    return text


if __name__ == "__main__":
    main(tyro.cli(ExamplePromptConfig))
