"""The hooks a part of the coordination layer may fill in, and what each one sees.

A part is one mechanism on top of the base world (roles, tasks, elites, trading, signals,
construction) with its own switch (`enabled`). The environment builds the enabled parts
once per config (static Python, chosen at trace time) and the layer (`layer.py`) calls
each hook of each part in the layer's order at a fixed point of generation, of a step,
of the observation, of the frames and of the score. Every hook defaults to changing
nothing, so a part overrides only those it needs, and a world with every part off is the
base world. A part's numbers are its section of `constants.py` and its options its class
in `config.py`; what it adds to the world (features, marks, the sprites of the blocks it
lays) comes through these hooks, so the world never names a part.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import numpy as np

from alemlite.envs.craft.config import CraftConfig, CraftParams
from alemlite.envs.craft.coordination.state import CoordinationState
from alemlite.envs.craft.world.rendering import Marks
from alemlite.envs.craft.world.rules import DoRules, LifeRules
from alemlite.envs.craft.world.state import CraftState

Draws = dict[str, jax.Array]


class Turn(NamedTuple):
    """One step's DO as the parts see it after the world's DO."""

    actions: jax.Array  # (P,) int32, the actions in effect (after role checks)
    doing: jax.Array  # (P,) bool, the DOs the world carried out
    target: jax.Array  # (P, 2) int32, the tile each agent faces
    rules: DoRules  # the rules the world's DO followed
    before: CraftState  # the state just before the world's DO


class Part:
    """One part of the coordination layer; see the module docstring."""

    # Random numbers: each step the layer draws `random_shapes` for the parts of one
    # `stream` at once (see `Layer.draw`).
    stream: int = 1
    # Sizes of what the part adds to the observation and the global state.
    window_channels: int = 0
    own_features: int = 0
    # Features of who each agent is, shown whether the part is on or off, so that the
    # observation's layout does not hang on the switch (`identity`).
    identity_features: int = 0
    teammate_features: int = 0
    global_features: int = 0
    # Coordination achievements the part makes reachable.
    achievements: tuple[str, ...] = ()
    # Actions the part appends after those of the parts before it.
    action_names: tuple[str, ...] = ()

    def __init__(self, config: CraftConfig):
        self.config = config

    @staticmethod
    def enabled(config: CraftConfig) -> bool:
        """Whether the config switches this part on."""
        raise NotImplementedError

    @staticmethod
    def random_shapes(config: CraftConfig) -> dict[str, tuple[int, ...]]:
        """Uniforms the part needs per step, by name."""
        return {}

    # ---- generation ------------------------------------------------------------------
    def lay(
        self,
        key: jax.Array,
        material: jax.Array,
        centre: jax.Array,
        coordination: CoordinationState,
    ) -> tuple[jax.Array, CoordinationState]:
        """Change the terrain before the world places its mobs (`centre`: the start)."""
        return material, coordination

    def generate(self, key: jax.Array, state: CraftState) -> CraftState:
        """Finish a generated world."""
        return state

    # ---- a step, in order ------------------------------------------------------------
    def gate(self, state: CraftState, params: CraftParams, actions: jax.Array, draws: Draws):
        """Change the actions `(P,)` before anything acts."""
        return actions

    def before_do(
        self, state: CraftState, params: CraftParams, doing: jax.Array, draws: Draws
    ) -> tuple[CraftState, jax.Array]:
        """Act before the world's DO; return the DOs `(P,)` left to the world."""
        return state, doing

    def do_rules(self, state: CraftState, params: CraftParams, rules: DoRules) -> DoRules:
        """Change the rules of the world's DO."""
        return rules

    def after_do(self, turn: Turn, state: CraftState, params: CraftParams, draws: Draws):
        """Act after the world's DO (before placing, making and moving)."""
        return state

    def life_rules(self, state: CraftState, params: CraftParams, rules: LifeRules) -> LifeRules:
        """Change the rules of survival and of the mobs (after the agents moved)."""
        return rules

    def after_spawn(self, state: CraftState, spawned: jax.Array, draws: Draws) -> CraftState:
        """Act on the mob slots `(N,)` that filled this step."""
        return state

    def tick(self, state: CraftState) -> CraftState:
        """The end of the step: timers run down."""
        return state

    # ---- actions -----------------------------------------------------------------------
    def restrict(self, state: CraftState, params: CraftParams, mask: jax.Array) -> jax.Array:
        """Narrow the base world's action mask `(P, NUM_ACTIONS)`."""
        return mask

    def action_mask(self, state: CraftState, params: CraftParams) -> jax.Array:
        """`(P, len(action_names))` bool: the part's actions that would do something."""
        raise NotImplementedError

    # ---- observation and rendering ---------------------------------------------------
    def window_planes(self, state: CraftState, params: CraftParams) -> jax.Array:
        """`(P, H, W, window_channels)` after the base channels."""
        raise NotImplementedError

    @staticmethod
    def identity(config: CraftConfig) -> jax.Array:
        """`(P, identity_features)` after the agent's facing, before daylight."""
        raise NotImplementedError

    def own(self, state: CraftState) -> jax.Array:
        """`(P, own_features)` after the base features."""
        raise NotImplementedError

    def about_teammates(self, state: CraftState, mates: np.ndarray) -> jax.Array:
        """`(P, P - 1, teammate_features)` for the teammates `mates` `(P, P - 1)`."""
        raise NotImplementedError

    def global_part(self, state: CraftState) -> jax.Array:
        """`(global_features,)` after every agent's observation in the global state."""
        raise NotImplementedError

    def lit(self, state: CraftState, params: CraftParams, position: jax.Array) -> jax.Array | None:
        """`(...)` bool for `(..., 2)` positions: lit whatever the daylight (None: none)."""
        return None

    def marks(self, state: CraftState, rows: jax.Array, cols: jax.Array, marks: Marks) -> Marks:
        """Flags and frames on a `(R, W)` grid of map tiles in rendered frames."""
        return marks

    def sprites(self) -> dict[int, np.ndarray]:
        """`(TILE, TILE, 3)` uint8 sprites of the blocks the part lays, by material code."""
        return {}

    # ---- score -------------------------------------------------------------------------
    def metrics(self, state: CraftState) -> dict[str, jax.Array]:
        """Episode metrics of the part."""
        return {}
