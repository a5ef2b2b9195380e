"""The Craft world: a fast multi-agent Crafter-like survival world in pure JAX."""

from alemlite.envs.craft.config import CraftConfig, CraftParams, parse_difficulty
from alemlite.envs.craft.env import CraftEnv
from alemlite.envs.craft.spec import SPEC, CraftOptions, make_craft
from alemlite.envs.craft.world.state import CraftState

__all__ = [
    "SPEC",
    "CraftConfig",
    "CraftEnv",
    "CraftOptions",
    "CraftParams",
    "CraftState",
    "make_craft",
    "parse_difficulty",
]
