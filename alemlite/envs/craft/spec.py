"""The Craft world's spec: its command-line options, teams, prompts and rendering."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax.numpy as jnp
import numpy as np

from alemlite.core.prompting import PromptOptions
from alemlite.core.spec import Curriculum, EnvOptions, EnvSpec
from alemlite.envs.craft import constants as C
from alemlite.envs.craft.agent_view import render_agent_rgb
from alemlite.envs.craft.config import CraftConfig
from alemlite.envs.craft.coordination import constants as L
from alemlite.envs.craft.coordination.config import parse_difficulty
from alemlite.envs.craft.env import CraftEnv
from alemlite.envs.craft.policies import POLICIES


@dataclass(frozen=True)
class CraftOptions(EnvOptions):
    """A Craft world as a person sets it up."""

    num_agents: int = 3
    """team size"""
    map_size: int = 48
    max_steps: int = 10_000
    difficulty: str = "medium"
    """easy, medium, hard, sampled (an alpha drawn per episode) or an alpha in [0, 1]"""
    coordination: bool = True
    """False (--no-coordination): the plain multi-agent Crafter world, without roles, tasks,
    elites, trading, signals or construction"""
    obs_encoding: str = "dense"
    """what each agent observes: dense (one-hot window channels; 2,455 floats per agent for 3
    agents with the whole layer on) or symbolic (integer ids per window tile, embedded by the
    networks, and the same features; 565 values)"""
    building_cost: int = L.FULL_BUILDING_COST
    """items of each building's share a builder pays, first in inventory order (wood, stone,
    coal, iron): 3 the whole share, 0 free buildings; a training curriculum raises it
    (--curriculum.values 0 1 2 3)"""

    def __post_init__(self) -> None:
        CraftConfig(**self.make_kwargs())

    def make_kwargs(self) -> dict[str, Any]:
        return {
            "num_agents": self.num_agents,
            "map_size": self.map_size,
            "max_steps": self.max_steps,
            "difficulty": parse_difficulty(self.difficulty),
            "coordination": self.coordination,
            "obs_encoding": self.obs_encoding,
            "building_cost": self.building_cost,
        }

    def label(self) -> str:
        layer = "" if self.coordination else "_plain"
        encoding = "" if self.obs_encoding == "dense" else f"_{self.obs_encoding}"
        cost = "" if self.full_cost else f"_cost{self.building_cost}"
        return f"{self.num_agents}_{self.map_size}_{self.difficulty}{layer}{encoding}{cost}"

    @property
    def full_cost(self) -> bool:
        return self.building_cost == L.FULL_BUILDING_COST

    def describe(self) -> str:
        layer = "" if self.coordination else ", no coordination layer"
        encoding = "" if self.obs_encoding == "dense" else f", {self.obs_encoding} observation"
        cost = "" if self.full_cost else f", building cost {self.building_cost}"
        return (
            f"P={self.num_agents}, {self.map_size}x{self.map_size}, "
            f"difficulty={self.difficulty}{layer}{encoding}{cost}"
        )


def make_craft(**config: Any) -> CraftEnv:
    """Build a Craft environment from `CraftConfig` keyword arguments."""
    return CraftEnv(CraftConfig(**config))


def _prompts(env: CraftEnv):
    from alemlite.envs.craft.prompting import CraftRenderer

    return CraftRenderer(env)


def _cost_curriculum_kwargs(options: CraftOptions, largest: int) -> dict[str, Any]:
    # The cost is a parameter only: every stage shares the shapes of the target world.
    return {**options.make_kwargs(), "building_cost": largest}


def _cost_params(env: CraftEnv, costs: np.ndarray) -> Any:
    return env.default_params.replace(building_share=jnp.asarray(L.building_share(costs)))


def render_rgb(env: CraftEnv, state: Any, params: Any) -> Any:
    """The whole map, agents and mobs drawn in."""
    from alemlite.envs.craft.world.rendering import render_map

    return render_map(env.config, state, params, env.layer)


SPEC = EnvSpec(
    name="craft",
    make=make_craft,
    options=CraftOptions,
    policies=POLICIES,
    default_policy="team",
    reference_policies=("random", "team"),
    metrics=(
        "team_achievement_percent",
        "coordination_achievement_percent",
        "normalised_return",
        "agents_alive",
    ),
    prompts=_prompts,
    prompt_defaults=PromptOptions(variant="specific", history=8),
    render_rgb=render_rgb,
    render_agent_rgb=render_agent_rgb,
    seat_colours=lambda env: C.AGENT_COLOURS[: env.num_agents],
    noop_action=C.NOOP,
    pooled_resets=True,
    small_options={"num_agents": 2, "map_size": 16, "max_steps": 6},
    # Free buildings first: agents learn to meet at a site before carrying its materials.
    curriculum=Curriculum(
        option="building_cost",
        make_kwargs=_cost_curriculum_kwargs,
        params=_cost_params,
        minimum=0,
    ),
)
