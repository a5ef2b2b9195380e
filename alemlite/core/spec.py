"""An environment's spec: what every command, trainer and the LLM bridge need to know about
it, declared once in the environment's own folder and found through the registry.

Nothing above `alemlite` names an environment: `alemlite train`, `eval`, `eval-llm`,
`bench`, `render` and `study` read a spec, so a new environment is one folder (with a
`SPEC`) plus one line in `alemlite.core.registry`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from alemlite.core.environment import Environment
from alemlite.core.errors import ConfigError
from alemlite.core.prompting import PromptBuilder, PromptOptions

# policy(key, state, params) -> actions (num_agents,) int32, jittable (alemlite.evaluation)
Policy = Callable[[Any, Any, Any], Any]
# An environment's scripted policies are built for the environment they act in.
PolicyFactory = Callable[[Environment], Policy]


@dataclass(frozen=True)
class SharedOption:
    """One concept that several environments or commands share: one flag, one type."""

    type: Any
    help: str
    default: Any = None  # the same in every command; None: each environment (command) sets it


# The options that mean the same everywhere. An environment's options and every command use
# these names (and so these flags) for these concepts, and no other name for them;
# `tests/test_options.py` checks both.
SHARED_OPTIONS: dict[str, SharedOption] = {
    "env": SharedOption(str, "the environment (alemlite.registered_environments())", "dining"),
    "num_agents": SharedOption(int, "agent seats: philosophers at the table, team size, players"),
    "map_size": SharedOption(int, "side of a square map"),
    "max_steps": SharedOption(int, "the episode's time limit in steps"),
    "reward": SharedOption(str, "the reward's name"),
    "difficulty": SharedOption(str, "a named difficulty (or a number where the env takes one)"),
    "seed": SharedOption(int, "base seed: episode i of an evaluation uses seed + i", 0),
    "episodes": SharedOption(int, "evaluation episodes", 32),
    "out": SharedOption(Path, "where the command writes (default: a folder under runs/)"),
    "team": SharedOption(
        tuple[str, ...],
        "one spec per seat, or one for every seat: NAME or policy:NAME (a scripted policy), "
        "checkpoint:NAME (a trained agent), llm or llm:MODEL",
    ),
}


@dataclass(frozen=True)
class EnvOptions:
    """Base of an environment's options: the settings a person picks on a command line.

    Subclasses are frozen dataclasses with a default for every field, using the names of
    `SHARED_OPTIONS` for shared concepts; their `__post_init__` checks every value (a
    `ConfigError` naming the field), so a bad value is refused before anything is built.
    """

    def make_kwargs(self) -> dict[str, Any]:
        """Keyword arguments of the spec's `make` (`alemlite.make(name, **kwargs)`)."""
        return dataclasses.asdict(self)

    def label(self) -> str:
        """A short name of the setting for files and run folders, e.g. `5_shaped`."""
        return "_".join(str(value) for value in dataclasses.asdict(self).values())

    def describe(self) -> str:
        """The setting in words, for titles of tables and plots."""
        return ", ".join(f"{name}={value}" for name, value in dataclasses.asdict(self).items())


@dataclass(frozen=True)
class Curriculum:
    """An option the trainer may raise stage by stage inside one compiled program.

    The environment is built once for the largest value (`make_kwargs`); every
    environment of a training batch then carries its own value in its dynamic params
    (`params`), so a new stage swaps an array and restarts the episodes.
    """

    option: str
    """The option it schedules (e.g. `num_agents`: the table size)."""
    make_kwargs: Callable[[EnvOptions, int], dict[str, Any]]
    """`(options, largest)` -> `make` keyword arguments whose shapes fit every value."""
    params: Callable[[Environment, np.ndarray], Any]
    """`(env, values)` -> params batched over environments, one value each."""
    minimum: int = 1
    """The smallest value the environment accepts."""


@dataclass(frozen=True)
class EnvSpec:
    """Everything above the environment layer needs to know about one environment."""

    name: str
    make: Callable[..., Environment]
    """Build from static config keyword arguments (`alemlite.make(name, **kwargs)`)."""
    options: type[EnvOptions]
    """The command-line options (a frozen dataclass with defaults)."""
    policies: Mapping[str, PolicyFactory]
    """Scripted policies by name, each built for the environment it acts in."""
    default_policy: str
    """The team `alemlite eval` plays when none is named."""
    reference_policies: tuple[str, ...] = ()
    """Policies drawn beside trained agents on learning curves and in summaries."""
    metrics: tuple[str, ...] = ()
    """The headline evaluation metrics, in table order (keys of `episode_metrics`)."""
    prompts: Callable[[Environment], PromptBuilder] | None = None
    """The LLM bridge's prompt builder for an environment; None: not playable by models."""
    prompt_defaults: PromptOptions = field(default_factory=PromptOptions)
    """The prompt switches a run uses unless told otherwise (variant, history, ...)."""
    render_rgb: Callable[[Environment, Any, Any], Any] | None = None
    """`(env, state, params)` -> `(H, W, 3)` uint8 frame, jittable; None: no pictures."""
    render_agent_rgb: Callable[[Environment, Any, Any, Any], Any] | None = None
    """`(env, state, params, agent)` -> `(H, W, 3)` uint8 view of one agent, jittable (the
    image observations of vision-language models): centred on the agent, which is outlined,
    with a tick on the side it faces; None: no such view."""
    seat_colours: Callable[[Environment], Any] | None = None
    """`(env)` -> `(num_agents, 3)` uint8: the colour `render_rgb` draws each seat in (the
    viewer's legend); None: seats are not told apart by colour."""
    render_text: Callable[[Environment, Any, Any], str] | None = None
    """`(env, state, params)` -> the state in words for a person (host side)."""
    curriculum: Curriculum | None = None
    """The option a training curriculum may schedule; None: no curriculum."""
    noop_action: int | None = None
    """The action every state allows and that changes nothing, which is also what an action
    the mask forbids amounts to (imitation relabels a scripted policy's forbidden actions
    as it); None: no such action."""
    pooled_resets: bool = False
    """Resets are expensive (e.g. world generation): trainers keep a pool of start states."""
    small_options: Mapping[str, Any] = field(default_factory=dict)
    """Options of a small, quick instance (the contract tests and smoke runs use it);
    empty: the defaults are small already."""

    def build(self, options: EnvOptions) -> Environment:
        """The environment of `options` (which must be this spec's options)."""
        if not isinstance(options, self.options):
            raise ConfigError(
                f"options of type {type(options).__name__} given to env={self.name!r}, "
                f"which takes {self.options.__name__}"
            )
        return self.make(**options.make_kwargs())

    def policy(self, name: str, env: Environment) -> Policy:
        """The scripted policy `name` built for `env`; refuses an unknown name in one line."""
        if name not in self.policies:
            known = ", ".join(sorted(self.policies)) or "(none)"
            raise ConfigError(f"unknown {self.name} policy {name!r}; choose one of: {known}")
        return self.policies[name](env)


def fixed(policy: Policy) -> PolicyFactory:
    """A policy that needs nothing from the environment, as a factory."""
    return lambda env: policy
