"""SRPO: setwise relative policy optimisation.

The actions that jointly cause one transition, the seats in play of one
environment at one step, form a set of `K` members. The set's ratio is
`exp((1 / sqrt(K)) * sum of member log-ratios)`, it gets one group-relative
advantage (its episode's team return against its group, as in GRPO) and is
clipped once. Minibatches hold whole environments, so a set is never split.
Everything else (grouped rollouts, entropy bonus, reference penalty) is GRPO's.
"""

from __future__ import annotations

import jax

from alemlite.core.environment import Environment
from alemlite.core.errors import require
from baselines.common.config import AlgorithmConfig, GroupConfig
from baselines.common.group import set_log_ratio
from baselines.common.ppo import clipped_surrogate
from baselines.grpo import GRPO


class SRPO(GRPO):
    def __init__(self, env: Environment, config: AlgorithmConfig, group: GroupConfig | None = None):
        super().__init__(env, config, group)
        require(
            self.group.returns == "team",
            f"returns={self.group.returns!r}: SRPO gives one advantage per set; use 'team'",
        )

    def policy_loss(
        self, log_ratio: jax.Array, advantages: jax.Array, weights: jax.Array
    ) -> tuple[jax.Array, dict[str, jax.Array]]:
        """One clipped term per set `(T, E)`; the members are the weighted seats of a step."""
        set_weights = weights.any(-1)
        # With team returns every seat of an environment holds the same advantage.
        set_advantages = advantages[None, :, 0]
        return clipped_surrogate(
            set_log_ratio(log_ratio, weights),
            set_advantages,
            self.config.ppo.clip_eps,
            set_weights,
        )
