"""The Craft environment: a multi-agent Crafter on one floor, pure and jittable.

Order of one step (every phase acts on all agents or mobs at once):
1. sleeping agents keep sleeping or wake up rested; downed and dead agents do nothing;
2. DO (revive, fight, collect, drink, eat), then placing, then making;
3. movement (see `movement.py` for collisions; lava kills);
4. hunger, thirst, fatigue and health recovery;
5. mobs move and zombies attack, arrows fly, plants grow, populations are balanced;
6. the hurt wake up, agents at zero health go down, unrevived downed agents die;
7. reward, step count, termination (every agent dead) and truncation (max_steps).

With the coordination layer on, role checks turn failed gated actions into noops
before phase 2, DOs on task tiles are resolved in `tasks.py` before the ordinary DO,
requests, gives and messages act after it, then builds and diamond swords
(`construction.py`); shelters protect sleepers from zombies and speed their
recovery, beacons block zombie spawns; handover windows (tasks and sites) and requests
tick at the end. With every part off the step is exactly the base world's.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from alemlite.core.environment import Environment, StepResult, TimeLimit
from alemlite.envs.craft import constants as C
from alemlite.envs.craft.config import CraftConfig, CraftParams
from alemlite.envs.craft.coordination import construction, elites, roles, tasks, trading
from alemlite.envs.craft.world import mobs as mob_rules
from alemlite.envs.craft.world.achievements import coordination_reward, episode_metrics, reward
from alemlite.envs.craft.world.gathering import (
    agent_blocking,
    do_action,
    facing_target,
    make_action,
    make_valid,
    mob_at,
    place_action,
    place_valid,
)
from alemlite.envs.craft.world.movement import move_agents
from alemlite.envs.craft.world.observation import (
    global_state,
    global_state_size,
    observation_shape,
    observe,
)
from alemlite.envs.craft.world.randomness import draw_uniforms
from alemlite.envs.craft.world.state import CraftState
from alemlite.envs.craft.world.survival import settle_health, start_sleep_or_wake, update_life_stats
from alemlite.envs.craft.world.worldgen import generate_world


class CraftEnv(Environment[CraftState, CraftParams]):
    """P agents in a procedurally generated Crafter world (see the module docstring)."""

    name = "craft"

    def __init__(self, config: CraftConfig):
        self.config = config
        self._random_shapes = {
            "sapling": (config.num_agents,),
            **mob_rules.random_shapes(config),
        }
        self._layer_shapes = {
            "role": (config.num_agents,),
            "task": (config.num_agents, tasks.RANDOM_DRAWS),
            "elite": (config.num_mobs, elites.RANDOM_DRAWS),
        }
        self._build_shapes = {"window": (config.num_agents,)}

    # ---- static description ------------------------------------------------------
    @property
    def num_agents(self) -> int:
        return self.config.num_agents

    @property
    def action_names(self) -> tuple[str, ...]:
        return (
            C.ACTIONS
            + trading.extra_action_names(self.config)
            + construction.action_names(self.config)
        )

    @property
    def observation_shape(self) -> tuple[int, ...]:
        return observation_shape(self.config)

    @property
    def global_state_shape(self) -> tuple[int, ...]:
        return (global_state_size(self.config),)

    @property
    def default_params(self) -> CraftParams:
        return CraftParams.from_config(self.config)

    @property
    def time_limit(self) -> TimeLimit:
        # Survival is open-ended; `max_steps` only bounds the episode and is not observed.
        return TimeLimit.CUTOFF

    # ---- dynamics ------------------------------------------------------------------
    def generate(self, key: jax.Array, params: CraftParams) -> CraftState:
        return generate_world(key, self.config)

    def reset_from(
        self, key: jax.Array, generated: CraftState, params: CraftParams
    ) -> tuple[jax.Array, CraftState]:
        if self.config.has_layer:
            low, high = C.SAMPLED_ALPHA
            sampled = jax.random.uniform(key, (), minval=low, maxval=high)
            alpha = jnp.where(params.sample_alpha, sampled, params.alpha).astype(jnp.float32)
            generated = generated.replace(coordination=generated.coordination.replace(alpha=alpha))
        return self.observe(generated, params), generated

    def step(
        self, key: jax.Array, state: CraftState, actions: jax.Array, params: CraftParams
    ) -> StepResult:
        config = self.config
        draws = draw_uniforms(key, self._random_shapes)
        if config.has_layer:
            # The layer draws from a key of its own, so the base world's draws stay as they are.
            layer_draws = draw_uniforms(jax.random.fold_in(key, 1), self._layer_shapes)
        before, before_coordination = state.agents, state.coordination
        actions = jnp.where(before.status == C.ALIVE, actions.astype(jnp.int32), C.NOOP)
        agents, actions = start_sleep_or_wake(before, actions)
        state = state.replace(agents=agents)

        if config.has_layer:
            state, actions = self._coordinate(state, actions, params, draws["sapling"], layer_draws)
            if config.has_construction:
                # Draws of their own, so the other parts' draws stay as they are.
                build = draw_uniforms(jax.random.fold_in(key, 2), self._build_shapes)
                state = construction.apply(config, state, params, actions, build["window"])
        else:
            state = do_action(config, state, actions == C.DO, draws["sapling"])
        state = place_action(config, state, actions)
        state = make_action(state, actions)
        state = move_agents(state, actions)
        sheltered = construction.sheltered(state) if config.has_construction else None
        reserve = roles.reserve_factor(self.num_agents) if config.has_specialisation else None
        state = state.replace(agents=update_life_stats(state.agents, reserve, sheltered))

        protected = sheltered & state.agents.sleeping if config.has_construction else None
        state, shooting = mob_rules.move_and_attack(config, state, draws["mob"], protected)
        state = mob_rules.fly_arrows(config, state, shooting)
        state = mob_rules.grow_plants(state)
        alive_before_balance = state.mobs.alive
        zombie_blocked = (
            construction.beacon_blocker(state.coordination.sites, params.beacon_radius)
            if config.has_construction
            else None
        )
        state = mob_rules.balance(config, state, params, draws, zombie_blocked)
        if config.has_elites:
            state = self._spawn_elites(state, alive_before_balance, layer_draws["elite"])
        state = state.replace(
            agents=settle_health(state.agents, before.stats[:, C.HEALTH], params),
            step=state.step + 1,
        )

        if config.has_tasks:
            state = state.replace(coordination=tasks.tick_handovers(state.coordination))
        if config.has_construction:
            coordination = state.coordination
            state = state.replace(
                coordination=coordination.replace(sites=construction.tick_sites(coordination.sites))
            )
        if config.has_trading:
            state = trading.tick_requests(state)

        rewards = reward(before, state.agents, params)
        if config.has_layer:
            rewards = rewards + coordination_reward(before_coordination, state.coordination, params)
        terminated = jnp.all(state.agents.status == C.DEAD)
        truncated = (state.step >= params.max_steps) & ~terminated
        info = {"terminated": terminated, "truncated": truncated}
        return self.observe(state, params), state, rewards, terminated | truncated, info

    def _coordinate(
        self,
        state: CraftState,
        actions: jax.Array,
        params: CraftParams,
        sapling: jax.Array,
        draws: dict[str, jax.Array],
    ) -> tuple[CraftState, jax.Array]:
        """Role checks, task tiles, DO, revive credit, trading and messages."""
        config, num_agents = self.config, self.num_agents
        if config.has_specialisation:
            actions = roles.gate_actions(config, state, params, actions, draws["role"])
        doing = actions == C.DO
        target = facing_target(state)
        downed = state.agents.status == C.DOWNED
        facing_downed = agent_blocking(state, target) & downed[None, :]
        revivers = doing & jnp.any(facing_downed, axis=1)
        revived = jnp.any(facing_downed & revivers[:, None], axis=0)
        if config.has_tasks:
            state, passthrough = tasks.resolve_tasks(config, state, doing, draws["task"])
            doing &= passthrough
        world_before, mobs_before = state.map, state.mobs
        state = do_action(
            config,
            state,
            doing,
            sapling,
            melee_factor=roles.melee_factor(num_agents) if config.has_specialisation else None,
            food_share=roles.food_share(num_agents) if config.has_specialisation else None,
            mob_damage=elites.damage_rule(state.coordination.mob_elite)
            if config.has_elites
            else None,
            melee_floor=construction.melee_floor(state) if config.has_construction else None,
        )
        if config.has_elites:
            state = self._credit_elite_kills(state, mobs_before, target, doing)
        coordination = state.coordination
        if config.has_tasks:
            coordination = tasks.clear_consumed(coordination, world_before, state.map, target)
        coordination = coordination.replace(
            achievements=coordination.achievements.at[
                :, C.COORDINATION_INDEX["revive_teammate"]
            ].max(revivers),
            revives=coordination.revives + jnp.sum(revived).astype(jnp.int16),
        )
        state = trading.apply(config, state.replace(coordination=coordination), params, actions)
        return state, actions

    def _credit_elite_kills(
        self, state: CraftState, mobs_before, target: jax.Array, doing: jax.Array
    ) -> CraftState:
        """`defeat_elite` / `eat_large_cow` for every hitter of a killed elite; more food."""
        config = self.config
        elite = state.coordination.mob_elite != C.ELITE_NONE
        killed = mobs_before.alive & ~state.mobs.alive & elite
        hits = mob_at(state.replace(mobs=mobs_before), target) & doing[:, None]
        cow = jnp.asarray(config.mob_kinds()) == C.COW
        ate_large = jnp.any(hits & (killed & cow)[None, :], axis=1)
        defeated = jnp.any(hits & (killed & ~cow)[None, :], axis=1)
        share = roles.food_share(self.num_agents) if config.has_specialisation else 1.0
        extra = jnp.floor(C.FOOD_PER_COW * share * ate_large).astype(jnp.int32)
        agents = state.agents
        stats = agents.stats.at[:, C.FOOD].set(
            jnp.minimum(agents.stats[:, C.FOOD] + extra, C.STAT_MAX)
        )
        coordination = state.coordination
        achievements = (
            coordination.achievements.at[:, C.COORDINATION_INDEX["defeat_elite"]]
            .max(defeated)
            .at[:, C.COORDINATION_INDEX["eat_large_cow"]]
            .max(ate_large)
        )
        return state.replace(
            agents=agents.replace(stats=stats),
            coordination=coordination.replace(achievements=achievements),
        )

    def _spawn_elites(
        self, state: CraftState, alive_before: jax.Array, uniform: jax.Array
    ) -> CraftState:
        """Draw the elite kind (and boost the health) of mobs that spawned this step."""
        filled = state.mobs.alive & ~alive_before
        mob_elite, health = elites.refill(
            self.config, state.coordination.mob_elite, state.mobs.health, filled, uniform
        )
        return state.replace(
            mobs=state.mobs.replace(health=health),
            coordination=state.coordination.replace(mob_elite=mob_elite),
        )

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
        if self.config.has_specialisation:
            mask &= roles.gated_action_mask(self.config, params)
        if self.config.has_trading or self.config.message_tokens:
            mask = jnp.concatenate(
                [mask, trading.extra_action_mask(self.config, state, params)], axis=1
            )
        if self.config.has_construction:
            mask = jnp.concatenate(
                [mask, construction.action_mask(self.config, state, params)], axis=1
            )
        mask &= acting[:, None]
        return mask.at[:, C.NOOP].set(True)

    def global_state(self, state: CraftState, params: CraftParams) -> jax.Array:
        """Every agent's observation, then the site table (size independent of the map)."""
        return global_state(self.config, state, params)

    def episode_metrics(self, state: CraftState, params: CraftParams) -> dict[str, jax.Array]:
        return episode_metrics(self.config, state, params)
