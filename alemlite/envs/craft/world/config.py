"""The base world's options (shapes and the defaults of its dynamic parameters) and its
dynamic parameters. `CraftConfig` and `CraftParams` (craft/config.py) add the coordination
layer's to these; the world reads only its own."""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from flax import struct

from alemlite.core.errors import require
from alemlite.envs.craft import constants as C

OBSERVATION_LAYOUTS = ("flat", "image")
# "dense": one-hot window channels and flat features (laid out by `observation`);
# "symbolic": integer ids per window tile and the same flat features (`symbolic.py`).
OBS_ENCODINGS = ("dense", "symbolic")


@dataclass(frozen=True)
class WorldConfig:
    """The world's shapes, plus the defaults of `WorldParams`.

    Mob counts are slot counts: populations live in fixed-size tables and spawning
    keeps them near daylight-dependent targets no larger than the slots.
    """

    num_agents: int = 3
    map_size: int = 48
    view_width: int = 9
    view_height: int = 7
    zombie_slots: int = 4
    skeleton_slots: int = 2
    cow_slots: int = 4
    arrow_slots: int = 4
    plant_slots: int = 8
    observation: str = "flat"
    obs_encoding: str = "dense"
    # Defaults of the dynamic parameters.
    max_steps: int = 10000
    revive_window: int = 30
    day_length: int = 300
    shared_reward: bool = False
    health_reward_scale: float = 0.1

    def __post_init__(self) -> None:
        require(
            1 <= self.num_agents <= 8,
            f"num_agents={self.num_agents} must lie in 1..8; pass e.g. num_agents=3",
        )
        require(
            16 <= self.map_size <= 128,
            f"map_size={self.map_size} must lie in 16..128; pass e.g. map_size=48",
        )
        for name in ("view_width", "view_height"):
            value = getattr(self, name)
            require(
                value >= 3 and value % 2 == 1 and value <= self.map_size,
                f"{name}={value} must be odd, at least 3 and at most map_size",
            )
        for name in ("zombie_slots", "skeleton_slots", "cow_slots"):
            value = getattr(self, name)
            require(0 <= value <= 32, f"{name}={value} must lie in 0..32")
        require(self.num_mobs >= 1, "zombie_slots + skeleton_slots + cow_slots must be >= 1")
        require(1 <= self.arrow_slots <= 32, f"arrow_slots={self.arrow_slots} must lie in 1..32")
        require(1 <= self.plant_slots <= 64, f"plant_slots={self.plant_slots} must lie in 1..64")
        require(
            self.observation in OBSERVATION_LAYOUTS,
            f"observation={self.observation!r} must be one of {OBSERVATION_LAYOUTS}",
        )
        require(
            self.obs_encoding in OBS_ENCODINGS,
            f"obs_encoding={self.obs_encoding!r} must be one of {OBS_ENCODINGS}",
        )
        require(
            self.obs_encoding == "dense" or self.observation == "flat",
            f"observation={self.observation!r} lays out the dense encoding only; "
            "pass observation='flat' with obs_encoding='symbolic'",
        )
        require(self.max_steps >= 1, f"max_steps={self.max_steps} must be positive")
        require(self.revive_window >= 0, f"revive_window={self.revive_window} must be >= 0")
        require(self.day_length >= 1, f"day_length={self.day_length} must be positive")

    @property
    def num_mobs(self) -> int:
        """Slots of the mob table: zombies, then skeletons, then cows."""
        return self.zombie_slots + self.skeleton_slots + self.cow_slots

    def mob_kinds(self) -> np.ndarray:
        """Kind of each mob slot (static layout: zombies, skeletons, cows)."""
        return np.array(
            [C.ZOMBIE] * self.zombie_slots
            + [C.SKELETON] * self.skeleton_slots
            + [C.COW] * self.cow_slots,
            dtype=np.int32,
        )


@struct.dataclass
class WorldParams:
    """The world's dynamic parameters; any leaf may carry a leading batch axis in `VecEnv`."""

    achievement_weights: jax.Array  # (22,) float32, reward per newly unlocked achievement
    health_reward_scale: jax.Array  # () float32, reward per unit change of health
    shared_reward: jax.Array  # () bool, every agent gets the team mean
    max_steps: jax.Array  # () int32, truncation
    revive_window: jax.Array  # () int32, steps a downed agent waits for a revive
    day_length: jax.Array  # () int32
    # Spawning (probability per step that one candidate tile is tried, per kind).
    zombie_spawn_probability: jax.Array
    skeleton_spawn_probability: jax.Array
    cow_spawn_probability: jax.Array
    despawn_probability: jax.Array


def world_params(config: WorldConfig) -> dict[str, jax.Array]:
    """The defaults of every `WorldParams` leaf, by name."""
    return {
        "achievement_weights": jnp.ones((C.NUM_ACHIEVEMENTS,), jnp.float32),
        "health_reward_scale": jnp.float32(config.health_reward_scale),
        "shared_reward": jnp.bool_(config.shared_reward),
        "max_steps": jnp.int32(config.max_steps),
        "revive_window": jnp.int32(config.revive_window),
        "day_length": jnp.int32(config.day_length),
        # Crafter balances 12x12 chunks each step with 0.3 (zombie), 0.1 (skeleton), 0.01
        # (cow) spawn and 0.4 / 0.1 / 0.1 despawn chances; one candidate per kind per step
        # on the whole map gives similar densities at the default map size.
        "zombie_spawn_probability": jnp.float32(0.3),
        "skeleton_spawn_probability": jnp.float32(0.1),
        "cow_spawn_probability": jnp.float32(0.05),
        "despawn_probability": jnp.float32(0.2),
    }
