"""The coordination layer's options: those every part shares, then one class per part (in
the layer's order) with its switch, its sizes and their checks.

`CraftConfig` (craft/config.py) inherits the world's `WorldConfig` and every class here,
so each option stays one flat keyword (`make("craft", site_slots=2)`). Each class checks
its own options after those it builds on (`super().__post_init__()` first), the world's
first of all.
"""

from __future__ import annotations

from dataclasses import dataclass

from alemlite.core.errors import require
from alemlite.envs.craft.coordination import constants as L


def parse_difficulty(text: str) -> str | float:
    """A difficulty given as text (a command line): a number is an alpha, anything else a
    preset name, which `CraftConfig` checks and names the choices of."""
    try:
        return float(text)
    except ValueError:
        return text


def is_difficulty(value: str | float) -> bool:
    """A preset name, `sampled`, or an alpha in [0, 1]."""
    if isinstance(value, str):
        return value in (*L.DIFFICULTY_PRESETS, "sampled")
    return 0.0 <= float(value) <= 1.0


@dataclass(frozen=True)
class LayerConfig:
    """The switch of the whole layer and the difficulty every part reads."""

    # False turns every part off and leaves the base world.
    coordination: bool = True
    # Default of the difficulty parameters: a preset name, "sampled" or an alpha in [0, 1].
    difficulty: str | float = "medium"

    def __post_init__(self) -> None:
        super().__post_init__()  # the world's checks (see `CraftConfig`)
        require(
            is_difficulty(self.difficulty),
            f"difficulty={self.difficulty!r} must be one of "
            f"{(*L.DIFFICULTY_PRESETS, 'sampled')} or an alpha in [0, 1]",
        )


@dataclass(frozen=True)
class RolesConfig(LayerConfig):
    """Roles (roles.py)."""

    specialisation: bool = True
    # Default of the parameter: non-specialists never succeed (their gated actions masked).
    hard_specialisation: bool = False

    @property
    def has_specialisation(self) -> bool:
        return self.coordination and self.specialisation


@dataclass(frozen=True)
class TasksConfig(LayerConfig):
    """Tasks (tasks.py): the share of resource tiles that hold a task, and the slots of
    the table of pending handovers."""

    tasks: bool = True
    task_slots: int = 8
    task_probability: float = 0.25

    def __post_init__(self) -> None:
        super().__post_init__()
        require(0 <= self.task_slots <= 64, f"task_slots={self.task_slots} must lie in 0..64")
        require(
            0.0 <= self.task_probability <= 1.0,
            f"task_probability={self.task_probability} must lie in [0, 1]",
        )
        require(
            not self.has_tasks or self.task_slots >= 1,
            f"task_slots={self.task_slots} must be >= 1 while tasks are on; pass tasks=False",
        )

    @property
    def has_tasks(self) -> bool:
        return self.coordination and self.tasks


@dataclass(frozen=True)
class ElitesConfig(LayerConfig):
    """Elite mobs (elites.py)."""

    elites: bool = True

    @property
    def has_elites(self) -> bool:
        return self.coordination and self.elites


@dataclass(frozen=True)
class TradingConfig(LayerConfig):
    """Trading (trading.py)."""

    trading: bool = True
    # Default of the parameter: the L1 distance a give reaches (0: unlimited).
    give_range: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        require(self.give_range >= 0, f"give_range={self.give_range} must be >= 0 (0: unlimited)")

    @property
    def has_trading(self) -> bool:
        return self.coordination and self.trading


@dataclass(frozen=True)
class SignalsConfig(LayerConfig):
    """Signals (signals.py): the number of message tokens, 0 switching them off."""

    num_message_tokens: int = 4

    def __post_init__(self) -> None:
        super().__post_init__()
        require(
            0 <= self.num_message_tokens <= 16,
            f"num_message_tokens={self.num_message_tokens} must lie in 0..16 (0 disables)",
        )

    @property
    def message_tokens(self) -> int:
        return self.num_message_tokens if self.coordination else 0


@dataclass(frozen=True)
class ConstructionConfig(LayerConfig):
    """Construction (construction.py): the sites laid at generation."""

    construction: bool = True
    site_slots: int = 4
    # Default of the parameter: the items of each building's share a builder pays, first in
    # inventory order (L.building_share); below the full count a training curriculum's stage.
    building_cost: int = L.FULL_BUILDING_COST

    def __post_init__(self) -> None:
        super().__post_init__()
        require(0 <= self.site_slots <= 16, f"site_slots={self.site_slots} must lie in 0..16")
        require(
            0 <= self.building_cost <= L.FULL_BUILDING_COST,
            f"building_cost={self.building_cost} must lie in 0..{L.FULL_BUILDING_COST} "
            f"(0: free buildings, {L.FULL_BUILDING_COST}: the whole share)",
        )
        require(
            not self.has_construction or self.site_slots >= 1,
            f"site_slots={self.site_slots} must be >= 1 while construction is on; "
            "pass construction=False",
        )

    @property
    def has_construction(self) -> bool:
        return self.coordination and self.construction
