"""The Craft world: a fast multi-agent Crafter-like survival world in pure JAX."""

from __future__ import annotations

from typing import Any

from alemlite.envs.craft.config import CraftConfig, CraftParams, parse_difficulty
from alemlite.envs.craft.env import CraftEnv
from alemlite.envs.craft.state import CraftState


def make_craft(**config: Any) -> CraftEnv:
    """Build a Craft environment from `CraftConfig` keyword arguments."""
    return CraftEnv(CraftConfig(**config))


__all__ = ["CraftConfig", "CraftEnv", "CraftParams", "CraftState", "make_craft", "parse_difficulty"]
