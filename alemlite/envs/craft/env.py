"""The Craft environment: a multi-agent Crafter on one floor, pure and jittable.

The base world (`world/`) and the coordination layer's enabled parts (`coordination/`)
run in a fixed order. One step, every phase acting on all agents or mobs at once:
1. sleeping agents keep sleeping or wake up rested; downed and dead agents do nothing;
   the parts may refuse actions (role checks);
2. the parts act before DO (the layer credits revives, tasks take over DOs on task
   tiles); DO (revive, fight, collect, drink, eat) under the parts' rules; the parts
   act after it (elite kills, consumed task tiles, requests and gives, messages, builds
   and diamond swords); then placing, then making;
3. movement (see `world/movement.py` for collisions; lava kills);
4. hunger, thirst, fatigue and health recovery under the parts' rules (reserves,
   shelters);
5. mobs move and zombies attack, arrows fly, plants grow, populations are balanced;
   the parts act on mobs that spawned (elites);
6. the hurt wake up, agents at zero health go down, unrevived downed agents die;
   the parts' timers run down (handover windows, requests);
7. reward, step count, termination (every agent dead) and truncation (max_steps).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from alemlite.core.environment import Environment, StepResult, TimeLimit
from alemlite.core.spaces import Box
from alemlite.envs.craft import constants as C
from alemlite.envs.craft.config import CraftConfig, CraftParams
from alemlite.envs.craft.coordination.layer import Layer
from alemlite.envs.craft.coordination.part import Turn
from alemlite.envs.craft.coordination.state import empty_coordination
from alemlite.envs.craft.symbolic import (
    SymbolicLayout,
    observe_symbolic,
    symbolic_shape,
    symbolic_space,
)
from alemlite.envs.craft.world import mobs as mob_rules
from alemlite.envs.craft.world.achievements import achievement_score, episode_metrics, reward
from alemlite.envs.craft.world.gathering import (
    do_action,
    facing_target,
    legal_actions,
    make_action,
    place_action,
)
from alemlite.envs.craft.world.movement import move_agents
from alemlite.envs.craft.world.observation import (
    OWN_FEATURES,
    TEAMMATE_FEATURES,
    WINDOW_CHANNELS,
    observation_shape,
    observe,
)
from alemlite.envs.craft.world.randomness import draw_uniforms
from alemlite.envs.craft.world.state import CraftState
from alemlite.envs.craft.world.survival import settle_health, start_sleep_or_wake, update_life_stats
from alemlite.envs.craft.world.worldgen import lay_terrain, populate


class CraftEnv(Environment[CraftState, CraftParams]):
    """P agents in a procedurally generated Crafter world (see the module docstring)."""

    name = "craft"

    def __init__(self, config: CraftConfig):
        self.config = config
        self.layer = Layer(config)
        self.symbolic = SymbolicLayout.of(config, self.layer)
        self._random_shapes = {
            "sapling": (config.num_agents,),
            **mob_rules.random_shapes(config),
        }

    # ---- static description ------------------------------------------------------
    @property
    def num_agents(self) -> int:
        return self.config.num_agents

    @property
    def action_names(self) -> tuple[str, ...]:
        return C.ACTIONS + self.layer.action_names

    @property
    def window_channels(self) -> int:
        return WINDOW_CHANNELS + self.layer.window_channels

    @property
    def num_features(self) -> int:
        """Flat features of one agent: its own, then those of each teammate."""
        teammate = TEAMMATE_FEATURES + self.layer.teammate_features
        own = OWN_FEATURES + self.layer.own_features
        return own + teammate * (self.num_agents - 1)

    @property
    def observation_shape(self) -> tuple[int, ...]:
        if self.config.obs_encoding == "symbolic":
            return symbolic_shape(self.config, self.symbolic, self.num_features)
        return observation_shape(self.config, self.window_channels, self.num_features)

    @property
    def observation_space(self) -> Box | dict[str, Box]:
        """A Box, or the named parts whose flattened values the observation concatenates."""
        if self.config.obs_encoding == "symbolic":
            return symbolic_space(self.config, self.symbolic, self.num_features)
        return Box(-1.0, 1.0, self.observation_shape)

    @property
    def global_state_shape(self) -> tuple[int, ...]:
        dense = observation_shape(self.config, self.window_channels, self.num_features)
        observations = self.num_agents * int(np.prod(dense))
        return (observations + self.layer.global_features,)

    @property
    def default_params(self) -> CraftParams:
        return CraftParams.from_config(self.config)

    @property
    def time_limit(self) -> TimeLimit:
        # Survival is open-ended; `max_steps` only bounds the episode and is not observed.
        return TimeLimit.CUTOFF

    # ---- dynamics ------------------------------------------------------------------
    def generate(self, key: jax.Array, params: CraftParams) -> CraftState:
        terrain = lay_terrain(key, self.config)
        # The parts draw from keys of their own: the base world stays as it is.
        material, coordination = self.layer.lay(
            key, terrain.material, terrain.centre, empty_coordination(self.config)
        )
        state = populate(self.config, terrain._replace(material=material), coordination)
        return self.layer.generate(key, state)

    def reset_from(
        self, key: jax.Array, generated: CraftState, params: CraftParams
    ) -> tuple[jax.Array, CraftState]:
        state = self.layer.reset(key, generated, params)
        return self.observe(state, params), state

    def step(
        self, key: jax.Array, state: CraftState, actions: jax.Array, params: CraftParams
    ) -> StepResult:
        config, layer = self.config, self.layer
        draws = draw_uniforms(key, self._random_shapes)
        layer_draws = layer.draw(key)
        before = state
        actions = jnp.where(state.agents.status == C.ALIVE, actions.astype(jnp.int32), C.NOOP)
        agents, actions = start_sleep_or_wake(state.agents, actions)
        state = state.replace(agents=agents)
        actions = layer.gate(state, params, actions, layer_draws)

        state, doing = layer.before_do(state, params, actions == C.DO, layer_draws)
        rules = layer.do_rules(state, params)
        turn = Turn(actions, doing, facing_target(state), rules, state)
        state = do_action(config, state, doing, draws["sapling"], rules)
        state = layer.after_do(turn, state, params, layer_draws)
        state = place_action(config, state, actions)
        state = make_action(state, actions)
        state = move_agents(state, actions)

        life = layer.life_rules(state, params)
        state = state.replace(agents=update_life_stats(state.agents, life))
        state, shooting = mob_rules.move_and_attack(config, state, draws["mob"], life.harmless)
        state = mob_rules.fly_arrows(config, state, shooting)
        state = mob_rules.grow_plants(state)
        alive_before_balance = state.mobs.alive
        state = mob_rules.balance(config, state, params, draws, life.zombie_blocked)
        state = layer.after_spawn(state, state.mobs.alive & ~alive_before_balance, layer_draws)

        state = state.replace(
            agents=settle_health(state.agents, before.agents.stats[:, C.HEALTH], params),
            step=state.step + 1,
        )
        state = layer.tick(state)
        rewards = layer.reward(before, state, params, reward(before.agents, state.agents, params))
        terminated = jnp.all(state.agents.status == C.DEAD)
        truncated = (state.step >= params.max_steps) & ~terminated
        info = {"terminated": terminated, "truncated": truncated}
        return self.observe(state, params), state, rewards, terminated | truncated, info

    def observe(self, state: CraftState, params: CraftParams) -> jax.Array:
        if self.config.obs_encoding == "symbolic":
            return observe_symbolic(self.config, self.symbolic, self.layer, state, params)
        return self.dense_observation(state, params)

    def dense_observation(self, state: CraftState, params: CraftParams) -> jax.Array:
        return observe(self.config, state, params, self.layer.observation(state, params))

    def action_mask(self, state: CraftState, params: CraftParams) -> jax.Array:
        agents = state.agents
        acting = (agents.status == C.ALIVE) & ~agents.sleeping
        mask = self.layer.action_mask(state, params, legal_actions(self.config, state))
        mask &= acting[:, None]
        return mask.at[:, C.NOOP].set(True)

    def global_state(self, state: CraftState, params: CraftParams) -> jax.Array:
        """Every agent's dense observation, then the layer's tables (map-size free)."""
        observations = self.dense_observation(state, params).reshape(-1)
        return jnp.concatenate([observations, *self.layer.global_parts(state)])

    def episode_metrics(self, state: CraftState, params: CraftParams) -> dict[str, jax.Array]:
        earned, maximum = achievement_score(state, params)
        metrics, earned, maximum = self.layer.metrics(state, params, earned, maximum)
        return {**metrics, **episode_metrics(state, earned, maximum)}
