"""`DiningEnv`: the dining table behind the `Environment` contract."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from alemlite.core.environment import Environment, StepResult, TimeLimit
from alemlite.envs.dining import observation, rewards, rules
from alemlite.envs.dining.config import DiningConfig, DiningParams, make_params
from alemlite.envs.dining.max_meals import lookup_max_meals, max_meals_table
from alemlite.envs.dining.state import (
    GRAB_LEFT,
    GRAB_RIGHT,
    MOVE_NAMES,
    NUM_MOVES,
    WAIT,
    DiningState,
    Ring,
    initial_state,
)
from alemlite.metrics import fairness, jain_index


class DiningEnv(Environment[DiningState, DiningParams]):
    name = "dining"

    def __init__(self, config: DiningConfig):
        self.config = config

    # ---- static description -------------------------------------------------
    @property
    def num_agents(self) -> int:
        return self.config.max_philosophers

    @property
    def action_names(self) -> tuple[str, ...]:
        tokens = range(self.config.num_message_tokens + 1)
        return tuple(
            move if token == 0 else f"{move}+MSG_{token}" for token in tokens for move in MOVE_NAMES
        )

    @property
    def observation_shape(self) -> tuple[int, ...]:
        return (observation.observation_size(self.config.num_message_tokens),)

    @property
    def global_state_shape(self) -> tuple[int, ...]:
        size = observation.global_state_size(
            self.config.max_philosophers, self.config.num_message_tokens
        )
        return (size,)

    @property
    def default_params(self) -> DiningParams:
        return make_params(self.config)

    @property
    def time_limit(self) -> TimeLimit:
        # The horizon is fixed, observed (steps left) and both rewards pay at its end.
        return TimeLimit.TASK

    @property
    def needs_step_key(self) -> bool:
        return self.config.has_backoff  # backoff's coin flips are the step's only randomness

    @property
    def needs_reset_key(self) -> bool:
        return False  # every episode starts from the same empty table

    def make_params(self, **overrides) -> DiningParams:
        """Params from the config's defaults with `overrides` (scalars or per-table arrays)."""
        return make_params(self.config, **overrides)

    def ring(self, params: DiningParams) -> Ring:
        return Ring.of(self.config.max_philosophers, params.num_philosophers)

    def max_meals(self, params: DiningParams) -> jax.Array:
        """Most meals a table of `num_philosophers` can eat in `max_steps` (see `max_meals.py`)."""
        return lookup_max_meals(self._max_meals_table, params.num_philosophers, params.max_steps)

    @functools.cached_property
    def _max_meals_table(self) -> np.ndarray:
        # Built on first use: only the `paper` reward needs it (a host array, so that a
        # first use inside a traced step leaves no tracer behind).
        return max_meals_table(self.config.max_philosophers)

    # ---- dynamics ------------------------------------------------------------
    def generate(self, key: jax.Array, params: DiningParams) -> DiningState:
        return initial_state(self.config.max_philosophers)

    def step(
        self, key: jax.Array, state: DiningState, actions: jax.Array, params: DiningParams
    ) -> StepResult:
        ring = self.ring(params)
        actions = jnp.asarray(actions, jnp.int32)
        # Out-of-range actions count as invalid and act as a silent WAIT.
        in_range = ring.active & (actions >= 0) & (actions < self.num_actions)
        moves = jnp.where(in_range, actions % NUM_MOVES, WAIT)
        tokens = jnp.where(in_range, actions // NUM_MOVES, 0)
        table_step = rules.sequential_step if self.config.sequential else rules.simultaneous_step
        table = table_step(state.fork_holder, state.eating, moves, ring)
        valid = in_range & rules.allowed(table.legal, moves)
        failed = ((moves == GRAB_LEFT) | (moves == GRAB_RIGHT)) & ~table.acquired
        meals = state.meals + table.ate
        hungry_streak = jnp.where(ring.active & ~table.ate, state.hungry_streak + 1, 0)

        hands = table.hands
        one_fork = rules.one_fork(hands, table.eating)
        one_fork_streak = jnp.where(one_fork, state.one_fork_streak + 1, 0)
        if self.config.has_backoff:
            drops = rules.backoff_drops(
                key, one_fork_streak, params.backoff_steps, params.backoff_prob
            )
            # Only one-fork seats drop, and they then hold nothing.
            hands = hands.drop(drops, ring)
            one_fork &= ~drops
            one_fork_streak = jnp.where(drops, 0, one_fork_streak)
        deadlock_now = rules.is_deadlocked(one_fork, ring)
        force_release = deadlock_now & params.release_on_deadlock
        hands = hands.release_all_if(force_release)
        one_fork_streak = jnp.where(force_release, 0, one_fork_streak)

        step = state.step + 1
        first_deadlock = deadlock_now & ~state.deadlocked
        state = DiningState(
            fork_holder=hands.fork_holder(ring),
            eating=table.eating,
            meals=meals,
            last_message=tokens,
            step=step,
            deadlocked=state.deadlocked | deadlock_now,
            deadlock_step=jnp.where(first_deadlock, step, state.deadlock_step),
            deadlock_events=state.deadlock_events + deadlock_now,
            failed_grabs=state.failed_grabs + failed,
            valid_actions=state.valid_actions + valid,
            hungry_streak=hungry_streak,
            longest_hungry_streak=jnp.maximum(state.longest_hungry_streak, hungry_streak),
            one_fork_streak=one_fork_streak,
        )
        terminated = deadlock_now & ~params.release_on_deadlock
        truncated = (step >= params.max_steps) & ~terminated
        done = terminated | truncated
        reward = self._reward(state, params, ring, table.ate, deadlock_now, done)
        info = {
            "terminated": terminated,
            "truncated": truncated,
            "step_meals": table.ate.sum(dtype=jnp.int32),
            "step_failed_grabs": failed.sum(dtype=jnp.int32),
            "step_valid_actions": valid.sum(dtype=jnp.int32),
            "step_deadlock": deadlock_now,
        }
        # Observed from the step's own per-seat facts: looking the new fork holders up
        # again would make XLA recompute the whole step inside the observation.
        obs = observation.observe_seats(
            state,
            params,
            ring,
            self.config.num_message_tokens,
            hands.holds_left,
            hands.holds_right,
            hands.left_available,
            hands.right_available,
        )
        return obs, state, reward, done, info

    def _reward(self, state, params, ring, ate, deadlock_now, done) -> jax.Array:
        table_fairness = fairness(state.meals, ring.active)
        if self.config.reward == "paper":
            score = rewards.paper_score(
                state.meals.sum(),
                self.max_meals(params),
                state.deadlocked,
                table_fairness,
                self._valid_action_rate(state, params),
                params,
            )
            reward = rewards.paper_rewards(score, done, ring.active)
        else:
            reward = rewards.shaped_rewards(
                ate, state.meals, deadlock_now, done, table_fairness, ring.active, params
            )
        return rewards.share_if(params.shared, reward, ring.active)

    # ---- views ---------------------------------------------------------------
    def observe(self, state: DiningState, params: DiningParams) -> jax.Array:
        return observation.observe(state, params, self.ring(params), self.config.num_message_tokens)

    def global_state(self, state: DiningState, params: DiningParams) -> jax.Array:
        return observation.global_state(
            state, params, self.ring(params), self.config.num_message_tokens
        )

    def action_mask(self, state: DiningState, params: DiningParams) -> jax.Array:
        """Legal moves (see `rules.move_mask`), each with any message token; inert seats: WAIT."""
        ring = self.ring(params)
        legal = rules.move_mask(state.fork_holder, state.eating, ring, self.config.sequential)
        mask = jnp.tile(legal, (1, self.config.num_message_tokens + 1))
        wait_only = jnp.arange(self.num_actions) == WAIT
        return mask & (ring.active[:, None] | wait_only[None, :])

    def agent_active(self, state: DiningState, params: DiningParams) -> jax.Array:
        return self.ring(params).active

    # ---- metrics -------------------------------------------------------------
    def _valid_action_rate(self, state: DiningState, params: DiningParams) -> jax.Array:
        chances = params.num_philosophers * state.step
        return jnp.where(
            chances > 0, state.valid_actions.sum() / jnp.maximum(chances, 1), 1.0
        ).astype(jnp.float32)

    def episode_metrics(self, state: DiningState, params: DiningParams) -> dict[str, jax.Array]:
        active = self.ring(params).active
        meals_total = state.meals.sum()

        def as_float(value) -> jax.Array:
            return jnp.asarray(value, jnp.float32)

        return {
            "meals": state.meals,
            "meals_total": as_float(meals_total),
            "throughput": as_float(meals_total / jnp.maximum(state.step, 1)),
            "fairness": as_float(fairness(state.meals, active)),
            "jain_index": as_float(jain_index(state.meals, active)),
            "starvation": as_float((active & (state.meals == 0)).sum()),
            # Who got to eat at all: sharing the forks, which an idle table cannot fake.
            "fed_share": as_float((active & (state.meals > 0)).sum() / active.sum()),
            "deadlock": state.deadlocked,  # a boolean outcome: reported as a rate
            "deadlock_step": as_float(state.deadlock_step),
            "deadlock_events": as_float(state.deadlock_events),
            "failed_grabs": as_float(state.failed_grabs.sum()),
            "longest_hungry_streak": as_float(state.longest_hungry_streak.max()),
            "valid_action_rate": self._valid_action_rate(state, params),
        }
