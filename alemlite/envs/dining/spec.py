"""The dining table's spec: its command-line options, policies, prompts and curriculum."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from alemlite.core.errors import named_as
from alemlite.core.prompting import PromptOptions
from alemlite.core.spec import Curriculum, EnvOptions, EnvSpec, fixed
from alemlite.envs.dining.config import DiningConfig
from alemlite.envs.dining.env import DiningEnv
from alemlite.envs.dining.policies import DINING_POLICIES
from alemlite.envs.dining.render import render_rgb
from alemlite.envs.dining.state import WAIT


@dataclass(frozen=True)
class DiningOptions(EnvOptions):
    """A dining table as a person sets it up."""

    num_agents: int = 5
    """philosophers at the table (N)"""
    max_steps: int = 30
    reward: Literal["shaped", "paper"] = "shaped"
    mode: Literal["simultaneous", "sequential"] = "simultaneous"
    deadlock_mode: Literal["terminate", "release"] = "terminate"
    """terminate: a deadlock ends the episode; release: every fork is freed and play goes on"""

    def __post_init__(self) -> None:
        with named_as(num_philosophers="num_agents"):
            DiningConfig(**self.make_kwargs())

    def make_kwargs(self) -> dict[str, Any]:
        return {
            "num_philosophers": self.num_agents,
            "max_steps": self.max_steps,
            "reward": self.reward,
            "mode": self.mode,
            "deadlock_mode": self.deadlock_mode,
        }

    def label(self) -> str:
        return f"{self.num_agents}_{self.reward}"

    def describe(self) -> str:
        return f"N={self.num_agents}, reward={self.reward}"


def make_dining(**config: Any) -> DiningEnv:
    return DiningEnv(DiningConfig.from_kwargs(**config))


def _table_curriculum_kwargs(options: DiningOptions, largest: int) -> dict[str, Any]:
    # The largest table fixes the shapes and is the default (target) size.
    return {**options.make_kwargs(), "num_philosophers": largest, "max_philosophers": largest}


def _table_params(env: DiningEnv, sizes: np.ndarray) -> Any:
    return env.make_params(num_philosophers=sizes)


def _prompts(env: DiningEnv):
    from alemlite.envs.dining.prompting import DiningRenderer

    return DiningRenderer.for_env(env)


def render_text(env: DiningEnv, state: Any, params: Any) -> str:
    """One line per philosopher: eating or hungry, the forks it holds, its meals."""
    num_seats = int(np.asarray(params.num_philosophers))
    holder = np.asarray(state.fork_holder)
    lines = [f"step {int(state.step)}" + (" (deadlocked)" if bool(state.deadlocked) else "")]
    for seat in range(num_seats):
        held = [
            side
            for side, fork in (("left", seat), ("right", (seat + 1) % num_seats))
            if holder[fork] == seat
        ]
        status = "EATING" if bool(state.eating[seat]) else "hungry"
        forks = " and ".join(held) if held else "no"
        lines.append(
            f"P{seat}: {status:<6} holds {forks} fork{'s' if len(held) != 1 else ''}, "
            f"meals {int(state.meals[seat])}"
        )
    return "\n".join(lines)


SPEC = EnvSpec(
    name="dining",
    make=make_dining,
    options=DiningOptions,
    policies={name: fixed(policy) for name, policy in DINING_POLICIES.items()},
    default_policy="resource_ordering",
    reference_policies=tuple(DINING_POLICIES),
    metrics=(
        "meals_total",
        "throughput",
        "fairness",
        "fed_share",
        "deadlock",
        "starvation",
        "valid_action_rate",
    ),
    prompts=_prompts,
    prompt_defaults=PromptOptions(variant="default", history=5),
    render_rgb=render_rgb,
    render_text=render_text,
    # A forbidden grab (the fork is taken) fails: the philosopher waits.
    noop_action=WAIT,
    small_options={"num_agents": 3, "max_steps": 6},
    curriculum=Curriculum(
        option="num_agents",
        make_kwargs=_table_curriculum_kwargs,
        params=_table_params,
        minimum=2,
    ),
)
