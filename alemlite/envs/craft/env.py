"""The Craft environment: a multi-agent Crafter on one floor, pure and jittable.

Order of one step (every phase acts on all agents or mobs at once):
1. sleeping agents keep sleeping or wake up rested; downed and dead agents do nothing;
2. DO (revive, fight, collect, drink, eat), then placing, then making;
3. movement (see `movement.py` for collisions; lava kills);
4. hunger, thirst, fatigue and health recovery;
5. mobs move and zombies attack, arrows fly, plants grow, populations are balanced;
6. the hurt wake up, agents at zero health go down, unrevived downed agents die;
7. reward, step count, termination (every agent dead) and truncation (max_steps).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from alemlite.core.environment import Environment, StepResult
from alemlite.envs.craft import constants as C
from alemlite.envs.craft import mobs as mob_rules
from alemlite.envs.craft.achievements import episode_metrics, reward
from alemlite.envs.craft.config import CraftConfig, CraftParams
from alemlite.envs.craft.gathering import (
    do_action,
    make_action,
    make_valid,
    place_action,
    place_valid,
)
from alemlite.envs.craft.movement import move_agents
from alemlite.envs.craft.observation import observation_shape, observe
from alemlite.envs.craft.randomness import draw_uniforms
from alemlite.envs.craft.state import CraftState
from alemlite.envs.craft.survival import settle_health, start_sleep_or_wake, update_life_stats
from alemlite.envs.craft.worldgen import generate_world


class CraftEnv(Environment[CraftState, CraftParams]):
    """P agents in a procedurally generated Crafter world (see the module docstring)."""

    name = "craft"

    def __init__(self, config: CraftConfig):
        self.config = config
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
        return C.ACTIONS

    @property
    def observation_shape(self) -> tuple[int, ...]:
        return observation_shape(self.config)

    @property
    def global_state_shape(self) -> tuple[int, ...]:
        return (self.num_agents * int(np.prod(self.observation_shape)),)

    @property
    def default_params(self) -> CraftParams:
        return CraftParams.from_config(self.config)

    # ---- dynamics ------------------------------------------------------------------
    def generate(self, key: jax.Array, params: CraftParams) -> CraftState:
        return generate_world(key, self.config)

    def step(
        self, key: jax.Array, state: CraftState, actions: jax.Array, params: CraftParams
    ) -> StepResult:
        config = self.config
        draws = draw_uniforms(key, self._random_shapes)
        before = state.agents
        actions = jnp.where(before.status == C.ALIVE, actions.astype(jnp.int32), C.NOOP)
        agents, actions = start_sleep_or_wake(before, actions)
        state = state.replace(agents=agents)

        state = do_action(config, state, actions == C.DO, draws["sapling"])
        state = place_action(config, state, actions)
        state = make_action(state, actions)
        state = move_agents(state, actions)
        state = state.replace(agents=update_life_stats(state.agents))

        state, shooting = mob_rules.move_and_attack(config, state, draws["mob"])
        state = mob_rules.fly_arrows(config, state, shooting)
        state = mob_rules.grow_plants(state)
        state = mob_rules.balance(config, state, params, draws)
        state = state.replace(
            agents=settle_health(state.agents, before.stats[:, C.HEALTH], params),
            step=state.step + 1,
        )

        rewards = reward(before, state.agents, params)
        terminated = jnp.all(state.agents.status == C.DEAD)
        truncated = (state.step >= params.max_steps) & ~terminated
        info = {"terminated": terminated, "truncated": truncated}
        return self.observe(state, params), state, rewards, terminated | truncated, info

    def observe(self, state: CraftState, params: CraftParams) -> jax.Array:
        return observe(self.config, state, params)

    def action_mask(self, state: CraftState, params: CraftParams) -> jax.Array:
        agents = state.agents
        acting = (agents.status == C.ALIVE) & ~agents.sleeping
        always = (
            jnp.zeros((C.NUM_ACTIONS,), bool)
            .at[jnp.array([C.NOOP, C.MOVE_LEFT, C.MOVE_RIGHT, C.MOVE_UP, C.MOVE_DOWN, C.DO])]
            .set(True)
        )
        can_sleep = agents.stats[:, C.ENERGY] < C.STAT_MAX
        mask = jnp.concatenate(
            [
                jnp.broadcast_to(always[: C.SLEEP], (self.num_agents, C.SLEEP)),
                can_sleep[:, None],
                place_valid(self.config, state),
                make_valid(state),
            ],
            axis=1,
        )
        mask &= acting[:, None]
        return mask.at[:, C.NOOP].set(True)

    def global_state(self, state: CraftState, params: CraftParams) -> jax.Array:
        """Every agent's observation, concatenated (size independent of the map)."""
        return self.observe(state, params).reshape(-1)

    def episode_metrics(self, state: CraftState, params: CraftParams) -> dict[str, jax.Array]:
        return episode_metrics(state.agents, params)
