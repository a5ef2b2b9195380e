"""Static configuration (shapes) and dynamic parameters (vmappable) of Craft: the world's
(`world/config.py`) and the coordination layer's, one class per part
(`coordination/config.py`), composed into one flat set of options."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
from flax import struct

from alemlite.envs.craft.coordination import constants as L
from alemlite.envs.craft.coordination.config import (
    ConstructionConfig,
    ElitesConfig,
    RolesConfig,
    SignalsConfig,
    TasksConfig,
    TradingConfig,
)
from alemlite.envs.craft.world.config import WorldConfig, WorldParams, world_params


@dataclass(frozen=True)
class CraftConfig(
    ConstructionConfig,
    SignalsConfig,
    TradingConfig,
    ElitesConfig,
    TasksConfig,
    RolesConfig,
    WorldConfig,
):
    """Everything that fixes array shapes, plus the defaults of `CraftParams`: the world's
    options and each part's, every one a keyword of its own (see the classes above)."""

    @property
    def has_layer(self) -> bool:
        """Whether any part is on."""
        return (
            self.has_specialisation
            or self.has_tasks
            or self.has_elites
            or self.has_trading
            or self.has_construction
            or self.message_tokens > 0
        )


@struct.dataclass
class CraftParams(WorldParams):
    """The world's dynamic parameters, then the layer's; any leaf may carry a leading batch
    axis in `VecEnv`."""

    alpha: jax.Array  # () float32 difficulty, used unless sample_alpha
    sample_alpha: jax.Array  # () bool, draw alpha ~ U[0.2, 0.85] at every reset
    hard_specialisation: jax.Array  # () bool, non-specialists never succeed
    coordination_weights: jax.Array  # (C,) float32, reward per coordination achievement
    give_range: jax.Array  # () int32, L1 distance of a give (0: unlimited)
    building_share: jax.Array  # (3, 12) int32, items each builder pays per building
    beacon_radius: jax.Array  # () int32, Chebyshev radius a beacon lights

    @classmethod
    def from_config(cls, config: CraftConfig) -> CraftParams:
        return cls(
            **world_params(config),
            alpha=jnp.float32(
                L.DIFFICULTY_PRESETS.get(config.difficulty, 0.5)
                if isinstance(config.difficulty, str)
                else config.difficulty
            ),
            sample_alpha=jnp.bool_(config.difficulty == "sampled"),
            hard_specialisation=jnp.bool_(config.hard_specialisation),
            coordination_weights=jnp.full(
                (L.NUM_COORDINATION_ACHIEVEMENTS,), L.COORDINATION_WEIGHT, jnp.float32
            ),
            give_range=jnp.int32(config.give_range),
            building_share=jnp.asarray(L.building_share(config.building_cost)),
            beacon_radius=jnp.int32(L.BEACON_RADIUS),
        )
