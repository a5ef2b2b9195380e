"""`MatrixEnv`: a repeated N-player matrix game behind the `Environment` contract."""

from __future__ import annotations

import jax
import jax.numpy as jnp

from alemlite.core.environment import Environment, StepResult, TimeLimit
from alemlite.envs.matrix import observation
from alemlite.envs.matrix.config import MatrixConfig, MatrixParams, make_params
from alemlite.envs.matrix.games import MAX_MOVES, MOVE_NAMES
from alemlite.envs.matrix.state import MatrixState, initial_state


class MatrixEnv(Environment[MatrixState, MatrixParams]):
    name = "matrix"

    def __init__(self, config: MatrixConfig):
        self.config = config
        # Place value of each player's move in the row index of the payoff table.
        self._place = jnp.asarray(
            [MAX_MOVES ** (config.num_agents - 1 - i) for i in range(config.num_agents)],
            jnp.int32,
        )

    # ---- static description -------------------------------------------------
    @property
    def num_agents(self) -> int:
        return self.config.num_agents

    @property
    def action_names(self) -> tuple[str, ...]:
        tokens = range(self.config.num_message_tokens + 1)
        return tuple(
            move if token == 0 else f"{move}+MSG_{token}" for token in tokens for move in MOVE_NAMES
        )

    @property
    def observation_shape(self) -> tuple[int, ...]:
        size = observation.observation_size(self.num_agents, self.config.num_message_tokens)
        return (size,)

    @property
    def global_state_shape(self) -> tuple[int, ...]:
        size = observation.global_state_size(self.num_agents, self.config.num_message_tokens)
        return (size,)

    @property
    def default_params(self) -> MatrixParams:
        return make_params(self.config)

    @property
    def time_limit(self) -> TimeLimit:
        # The number of rounds is fixed and observed: nothing follows the last round.
        return TimeLimit.TASK

    @property
    def needs_step_key(self) -> bool:
        return False

    @property
    def needs_reset_key(self) -> bool:
        return False

    def make_params(self, **overrides) -> MatrixParams:
        """Params of one game (`game`, `penalty`, `max_steps`, `reward`) for this player count."""
        return make_params(self.config, **overrides)

    # ---- dynamics ------------------------------------------------------------
    def generate(self, key: jax.Array, params: MatrixParams) -> MatrixState:
        return initial_state(self.num_agents)

    def step(
        self, key: jax.Array, state: MatrixState, actions: jax.Array, params: MatrixParams
    ) -> StepResult:
        actions = jnp.asarray(actions, jnp.int32)
        # An action the mask forbids (a move the game lacks, or out of range) plays PLAY_A,
        # silent, and counts as invalid.
        valid = (
            (actions >= 0) & (actions < self.num_actions) & (actions % MAX_MOVES < params.num_moves)
        )
        moves = jnp.where(valid, actions % MAX_MOVES, 0)
        tokens = jnp.where(valid, actions // MAX_MOVES, 0)
        joint = jnp.sum(moves * self._place)
        payoffs = params.payoffs[joint]
        optimal = params.optimal[joint]
        step = state.step + 1
        state = MatrixState(
            last_moves=moves,
            last_tokens=tokens,
            last_payoffs=payoffs,
            step=step,
            payoff_sum=state.payoff_sum + payoffs,
            optimal_rounds=state.optimal_rounds + optimal,
            split_rounds=state.split_rounds + jnp.any(moves != moves[0]),
            equilibrium_rounds=state.equilibrium_rounds + (params.nash[joint] & ~optimal),
            move_counts=state.move_counts + jnp.bincount(moves, length=MAX_MOVES),
            valid_actions=state.valid_actions + valid,
        )
        truncated = step >= params.max_steps
        info = {
            "terminated": jnp.zeros((), bool),
            "truncated": truncated,
            "step_optimal": optimal,
        }
        obs = self.observe(state, params)
        return obs, state, payoffs * params.reward_scale, truncated, info

    # ---- views ---------------------------------------------------------------
    def observe(self, state: MatrixState, params: MatrixParams) -> jax.Array:
        return observation.observe(state, params, self.config.num_message_tokens)

    def global_state(self, state: MatrixState, params: MatrixParams) -> jax.Array:
        return observation.global_state(state, params, self.config.num_message_tokens)

    def action_mask(self, state: MatrixState, params: MatrixParams) -> jax.Array:
        """The game's moves, each with any token, for every player."""
        legal = jnp.arange(self.num_actions) % MAX_MOVES < params.num_moves
        return jnp.broadcast_to(legal, (self.num_agents, self.num_actions))

    # ---- metrics -------------------------------------------------------------
    def episode_metrics(self, state: MatrixState, params: MatrixParams) -> dict[str, jax.Array]:
        """Rates over the rounds played so far (0 before the first round); see the package
        docstring for the definitions."""
        rounds = jnp.maximum(state.step, 1).astype(jnp.float32)
        moves_played = rounds * self.num_agents

        def rate(count, total=rounds) -> jax.Array:
            return jnp.asarray(count / total, jnp.float32)

        return {
            "payoff": state.payoff_sum / rounds,  # per player, per round
            "mean_payoff": rate(state.payoff_sum.sum(), moves_played),
            "optimal_joint_action_rate": rate(state.optimal_rounds),
            "miscoordination_rate": rate(state.split_rounds),
            "suboptimal_equilibrium_rate": rate(state.equilibrium_rounds),
            "cooperation_rate": rate(state.move_counts[params.cooperate_move], moves_played),
            **{
                f"{name.lower()}_rate": rate(state.move_counts[move], moves_played)
                for move, name in enumerate(MOVE_NAMES)
            },
            "valid_action_rate": rate(state.valid_actions.sum(), moves_played),
        }
