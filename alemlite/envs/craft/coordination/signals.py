"""Signals: message tokens, actions after trading's (`message_<m>`, m < num_message_tokens).

A message sets the sender's last token, which teammates see from the next step (one-hot
per teammate). It takes the agent's whole turn and changes nothing else.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from alemlite.envs.craft import constants as C
from alemlite.envs.craft.config import CraftConfig, CraftParams
from alemlite.envs.craft.coordination import trading
from alemlite.envs.craft.coordination.part import Draws, Part, Turn
from alemlite.envs.craft.world.state import CraftState


def first_message(config: CraftConfig) -> int:
    """Id of `message_0` (after Crafter's actions and trading's)."""
    trading_actions = len(trading.action_names(config)) if config.has_trading else 0
    return C.NUM_ACTIONS + trading_actions


class Signals(Part):
    """Message tokens that teammates see."""

    @staticmethod
    def enabled(config: CraftConfig) -> bool:
        return config.message_tokens > 0

    @property
    def teammate_features(self) -> int:
        return self.config.message_tokens

    @property
    def action_names(self) -> tuple[str, ...]:
        return tuple(f"message_{m}" for m in range(self.config.message_tokens))

    def after_do(self, turn: Turn, state: CraftState, params: CraftParams, draws: Draws):
        coordination = state.coordination
        token = turn.actions - first_message(self.config)
        sending = (token >= 0) & (token < self.config.message_tokens)
        last_message = jnp.where(sending, token, coordination.last_message).astype(jnp.int8)
        return state.replace(coordination=coordination.replace(last_message=last_message))

    def action_mask(self, state: CraftState, params: CraftParams) -> jax.Array:
        return jnp.ones((self.config.num_agents, self.config.message_tokens), bool)

    def about_teammates(self, state: CraftState, mates: np.ndarray) -> jax.Array:
        message = state.coordination.last_message.astype(jnp.int32)[mates]
        return jax.nn.one_hot(message, self.config.message_tokens)
