"""What a layer above the world may change in the world's rules for one step.

The base world follows Crafter's rules (every field None); the coordination layer's
parts fill in fields (`coordination/part.py`: `do_rules`, `life_rules`). The world
reads these and nothing else of the layer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import jax


@dataclass(frozen=True)
class DoRules:
    """Changes to DO (`gathering.do_action`)."""

    melee_floor: jax.Array | None = None  # (P,) int, the least melee damage (before the factor)
    melee_factor: jax.Array | None = None  # (P,) int, times each agent's melee damage
    food_share: jax.Array | None = None  # (P,) float, share of a cow's or a plant's food
    # `(hits (P, N), strength (P,)) -> damage (N,)` instead of the summed damage
    mob_damage: Callable[[jax.Array, jax.Array], jax.Array] | None = None


@dataclass(frozen=True)
class LifeRules:
    """Changes to survival (`survival.update_life_stats`) and to the mobs (`mobs.py`)."""

    reserve: jax.Array | None = None  # (P,) int, times the hunger and thirst limits
    rest_boost: jax.Array | None = None  # (P,) int, times a sleeper's rest and recovery
    harmless: jax.Array | None = None  # (P,) bool, zombie attacks on the agent do no damage
    # `(candidates (K, 2)) -> (K,)` bool: tiles where zombies may not spawn
    zombie_blocked: Callable[[jax.Array], jax.Array] | None = None
