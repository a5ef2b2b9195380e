"""The coordination layer: the enabled parts in order, and what they share.

Parts, in the order every hook runs (each also appends, in this order, its actions, its
window channels, own features and features per teammate):
- `Roles` (`specialisation`): role checks on gated actions, warriors' damage, foragers'
  food and reserves; each agent's role (one-hot) between its facing and daylight, shown
  with the part off too (`Part.identity`), so the observation's layout stays put.
- `Tasks` (`tasks`): sync and handover tasks on resource tiles; window channels for the
  task kind, the quorum and the handover window left.
- `Elites` (`elites`): elite mobs and large cows; window channels soft and hard elite.
- `Trading` (`trading`): requests and gives; each teammate's open request.
- `Signals` (`num_message_tokens > 0`): message tokens; each teammate's last token.
- `Construction` (`construction`): sites, buildings and diamond swords; window channels
  of the sites, whether the agent holds a diamond sword, and the site table after every
  agent's observation in the global state; the sprites of its blocks (site, shelter,
  forge, beacon: the material codes after the world's, `L.MATERIALS`).

What the parts share, while any part is on: the episode's difficulty alpha (drawn at
reset if `sampled`, an own feature after daylight), reviving a downed teammate (the
world's DO revives; the layer credits `revive_teammate`), the coordination reward
(weights of newly unlocked coordination achievements), and the layer's metrics. Each
part's numbers are in `constants.py` and its options in `config.py`, beside it.
`coordination=False` switches every part off, which leaves the base world.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from alemlite.core import threefry
from alemlite.envs.craft import constants as C
from alemlite.envs.craft.config import CraftConfig, CraftParams
from alemlite.envs.craft.coordination import constants as L
from alemlite.envs.craft.coordination.construction import Construction
from alemlite.envs.craft.coordination.elites import Elites
from alemlite.envs.craft.coordination.part import Draws, Part, Turn
from alemlite.envs.craft.coordination.roles import Roles
from alemlite.envs.craft.coordination.signals import Signals
from alemlite.envs.craft.coordination.state import CoordinationState
from alemlite.envs.craft.coordination.tasks import Tasks
from alemlite.envs.craft.coordination.trading import Trading
from alemlite.envs.craft.world.achievements import shared
from alemlite.envs.craft.world.gathering import agent_blocking, facing_target
from alemlite.envs.craft.world.observation import Extras, teammates, window_grid
from alemlite.envs.craft.world.randomness import draw_uniforms
from alemlite.envs.craft.world.rendering import MATERIAL_SPRITES, Marks
from alemlite.envs.craft.world.rules import DoRules, LifeRules
from alemlite.envs.craft.world.state import CraftState

PARTS: tuple[type[Part], ...] = (Roles, Tasks, Elites, Trading, Signals, Construction)
COUNTERS = ("syncs", "handovers", "lapsed", "failed_solo", "gives", "revives")


class Layer:
    """The parts of `PARTS` that `config` switches on, run in that order."""

    def __init__(self, config: CraftConfig):
        self.config = config
        self.parts = tuple(kind(config) for kind in PARTS if kind.enabled(config))

    @property
    def on(self) -> bool:
        return bool(self.parts)

    @property
    def action_names(self) -> tuple[str, ...]:
        return tuple(name for part in self.parts for name in part.action_names)

    def in_play(self) -> np.ndarray:
        """`(C,)` bool: the coordination achievements the enabled parts make reachable."""
        reachable = {"revive_teammate"} if self.on else set()
        reachable.update(name for part in self.parts for name in part.achievements)
        return np.array([name in reachable for name in L.COORDINATION_ACHIEVEMENTS])

    # ---- randomness and generation ---------------------------------------------------
    def draw(self, key: jax.Array) -> Draws:
        """This step's uniforms for the parts, by name.

        The parts of one stream cut one draw from the step key folded with the stream,
        in the order of PARTS whether each part is on or not, so switching a part off
        leaves the others' numbers as they are.
        """
        streams = sorted({part.stream for part in self.parts if part.random_shapes(self.config)})
        draws: Draws = {}
        for stream in streams:
            shapes = {
                name: shape
                for kind in PARTS
                if kind.stream == stream
                for name, shape in kind.random_shapes(self.config).items()
            }
            draws.update(draw_uniforms(threefry.fold_in(key, stream), shapes))
        return draws

    def lay(
        self,
        key: jax.Array,
        material: jax.Array,
        centre: jax.Array,
        coordination: CoordinationState,
    ) -> tuple[jax.Array, CoordinationState]:
        for part in self.parts:
            material, coordination = part.lay(key, material, centre, coordination)
        return material, coordination

    def generate(self, key: jax.Array, state: CraftState) -> CraftState:
        for part in self.parts:
            state = part.generate(key, state)
        return state

    def reset(self, key: jax.Array, state: CraftState, params: CraftParams) -> CraftState:
        """This episode's alpha: the params' alpha, or one drawn from SAMPLED_ALPHA."""
        if not self.on:
            return state
        low, high = L.SAMPLED_ALPHA
        sampled = threefry.uniform(key, (), minval=low, maxval=high)
        alpha = jnp.where(params.sample_alpha, sampled, params.alpha).astype(jnp.float32)
        return state.replace(coordination=state.coordination.replace(alpha=alpha))

    # ---- a step ----------------------------------------------------------------------
    def gate(self, state: CraftState, params: CraftParams, actions: jax.Array, draws: Draws):
        for part in self.parts:
            actions = part.gate(state, params, actions, draws)
        return actions

    def before_do(
        self, state: CraftState, params: CraftParams, doing: jax.Array, draws: Draws
    ) -> tuple[CraftState, jax.Array]:
        if self.on:
            state = credit_revives(state, doing)
        for part in self.parts:
            state, doing = part.before_do(state, params, doing, draws)
        return state, doing

    def do_rules(self, state: CraftState, params: CraftParams) -> DoRules:
        rules = DoRules()
        for part in self.parts:
            rules = part.do_rules(state, params, rules)
        return rules

    def after_do(self, turn: Turn, state: CraftState, params: CraftParams, draws: Draws):
        for part in self.parts:
            state = part.after_do(turn, state, params, draws)
        return state

    def life_rules(self, state: CraftState, params: CraftParams) -> LifeRules:
        rules = LifeRules()
        for part in self.parts:
            rules = part.life_rules(state, params, rules)
        return rules

    def after_spawn(self, state: CraftState, spawned: jax.Array, draws: Draws) -> CraftState:
        for part in self.parts:
            state = part.after_spawn(state, spawned, draws)
        return state

    def tick(self, state: CraftState) -> CraftState:
        for part in self.parts:
            state = part.tick(state)
        return state

    def reward(
        self, before: CraftState, after: CraftState, params: CraftParams, rewards: jax.Array
    ) -> jax.Array:
        """`rewards` plus the weights of newly unlocked coordination achievements."""
        if not self.on:
            return rewards
        new = after.coordination.achievements & ~before.coordination.achievements
        return rewards + shared(new.astype(jnp.float32) @ params.coordination_weights, params)

    # ---- actions -----------------------------------------------------------------------
    def action_mask(self, state: CraftState, params: CraftParams, mask: jax.Array) -> jax.Array:
        """The base world's action `mask` narrowed by the parts, then the parts' actions."""
        for part in self.parts:
            mask = part.restrict(state, params, mask)
        extra = [part.action_mask(state, params) for part in self.parts if part.action_names]
        return jnp.concatenate([mask, *extra], axis=1) if extra else mask

    # ---- observation and rendering ---------------------------------------------------
    @property
    def window_channels(self) -> int:
        return sum(part.window_channels for part in self.parts)

    @property
    def own_features(self) -> int:
        identity = sum(kind.identity_features for kind in PARTS)
        return identity + int(self.on) + sum(part.own_features for part in self.parts)

    @property
    def teammate_features(self) -> int:
        return sum(part.teammate_features for part in self.parts)

    @property
    def global_features(self) -> int:
        return sum(part.global_features for part in self.parts)

    def observation(self, state: CraftState, params: CraftParams) -> Extras:
        """What the parts add to each agent's observation (every part's identity, on or off)."""
        identity = tuple(kind.identity(self.config) for kind in PARTS if kind.identity_features)
        if not self.on:
            return Extras(identity=identity)
        num_agents = self.config.num_agents
        mates = teammates(num_agents)
        alpha = jnp.broadcast_to(state.coordination.alpha, (num_agents, 1))
        return Extras(
            lit=self.lit(state, params, window_grid(self.config, state)),
            identity=identity,
            planes=tuple(
                part.window_planes(state, params) for part in self.parts if part.window_channels
            ),
            own=(alpha, *(part.own(state) for part in self.parts if part.own_features)),
            teammates=tuple(
                part.about_teammates(state, mates) for part in self.parts if part.teammate_features
            ),
        )

    def global_parts(self, state: CraftState) -> tuple[jax.Array, ...]:
        """What the parts add to the global state, after every agent's observation."""
        return tuple(part.global_part(state) for part in self.parts if part.global_features)

    def lit(self, state: CraftState, params: CraftParams, position: jax.Array) -> jax.Array | None:
        lit = None
        for part in self.parts:
            part_lit = part.lit(state, params, position)
            if part_lit is not None:
                lit = part_lit if lit is None else lit | part_lit
        return lit

    def material_sprites(self) -> np.ndarray:
        """The world's material sprites with the enabled parts' blocks drawn in."""
        sprites = MATERIAL_SPRITES.copy()
        for part in self.parts:
            for code, sprite in part.sprites().items():
                sprites[code] = sprite
        return sprites

    def marks(self, state: CraftState, rows: jax.Array, cols: jax.Array) -> Marks | None:
        if not self.on:
            return None
        marks = Marks.none(rows.shape)
        for part in self.parts:
            marks = part.marks(state, rows, cols, marks)
        return marks

    # ---- score -------------------------------------------------------------------------
    def metrics(
        self, state: CraftState, params: CraftParams, earned: jax.Array, maximum: jax.Array
    ) -> tuple[dict[str, jax.Array], jax.Array, jax.Array]:
        """The layer's episode metrics, and the achievement reward `earned` `(P,)` and its
        `maximum` with the coordination achievements in play added.

        The coordination achievement % (any agent, over those in play), the episode
        counters (zero for a part that is off), alpha, the parts' own metrics, and each
        coordination achievement (any agent).
        """
        if not self.on:
            return {}, earned, maximum
        coordination = state.coordination
        in_play = jnp.asarray(self.in_play())
        weights = params.coordination_weights * in_play
        earned = earned + coordination.achievements.astype(jnp.float32) @ weights
        maximum = maximum + jnp.sum(weights)
        team = jnp.any(coordination.achievements, axis=0) & in_play
        metrics = {
            "coordination_achievement_percent": (
                100.0 * jnp.sum(team) / jnp.maximum(jnp.sum(in_play), 1)
            )
        }
        for name in COUNTERS:
            metrics[f"coordination/{name}"] = getattr(coordination, name).astype(jnp.float32)
        metrics["coordination/task_completions"] = (
            coordination.syncs + coordination.handovers
        ).astype(jnp.float32)
        metrics["alpha"] = coordination.alpha
        for part in self.parts:
            metrics.update(part.metrics(state))
        for index, name in enumerate(L.COORDINATION_ACHIEVEMENTS):
            metrics[f"achievement/{name}"] = team[index].astype(jnp.float32)
        return metrics, earned, maximum


def credit_revives(state: CraftState, doing: jax.Array) -> CraftState:
    """`revive_teammate` for each DO `(P,)` facing a downed teammate, and the revive count.

    The world's DO does the reviving; this runs before it, while the downed are down.
    """
    target = facing_target(state)
    downed = state.agents.status == C.DOWNED
    facing_downed = agent_blocking(state, target) & downed[None, :]
    revivers = doing & jnp.any(facing_downed, axis=1)
    revived = jnp.any(facing_downed & revivers[:, None], axis=0)
    coordination = state.coordination
    return state.replace(
        coordination=coordination.replace(
            achievements=coordination.achievements.at[
                :, L.COORDINATION_INDEX["revive_teammate"]
            ].max(revivers),
            revives=coordination.revives + jnp.sum(revived).astype(jnp.int16),
        )
    )
