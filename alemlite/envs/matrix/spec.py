"""The matrix games' spec: command-line options, scripted teams, prompts and text rendering.

No curriculum: the payoff table's shape is fixed by the player count, so a larger team is
another compiled environment, not a parameter one batch could raise stage by stage.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from alemlite.core.prompting import PromptOptions
from alemlite.core.spec import EnvOptions, EnvSpec, fixed
from alemlite.envs.matrix.config import MatrixConfig
from alemlite.envs.matrix.env import MatrixEnv
from alemlite.envs.matrix.policies import MATRIX_POLICIES
from alemlite.envs.matrix.prompting import MatrixRenderer, render_text


@dataclass(frozen=True)
class MatrixOptions(EnvOptions):
    """A repeated matrix game as a person sets it up."""

    num_agents: int = 2
    """players"""
    max_steps: int = 25
    """rounds"""
    game: Literal["climbing", "penalty", "stag_hunt", "prisoners_dilemma"] = "climbing"
    penalty: float = -10.0
    """the penalty game's miscoordination payoff k (<= 0)"""
    num_message_tokens: int = 0
    """message tokens a move may carry (action = move + 3 * token), shown to all next round"""
    reward: Literal["payoff", "normalised"] = "payoff"
    """payoff: the payoff itself; normalised: divided by the game's largest |payoff|"""

    def __post_init__(self) -> None:
        MatrixConfig(**self.make_kwargs())

    def label(self) -> str:
        penalty = f"_k{self.penalty:g}" if self.game == "penalty" else ""
        tokens = f"_c{self.num_message_tokens}" if self.num_message_tokens else ""
        reward = "_normalised" if self.reward == "normalised" else ""
        return f"{self.game}{penalty}_{self.num_agents}{tokens}{reward}"

    def describe(self) -> str:
        penalty = f" (k={self.penalty:g})" if self.game == "penalty" else ""
        return f"{self.game}{penalty}, N={self.num_agents}, {self.max_steps} rounds"


def make_matrix(**config: Any) -> MatrixEnv:
    return MatrixEnv(MatrixConfig.from_kwargs(**config))


SPEC = EnvSpec(
    name="matrix",
    make=make_matrix,
    options=MatrixOptions,
    policies={name: fixed(policy) for name, policy in MATRIX_POLICIES.items()},
    default_policy="optimal",
    reference_policies=("uniform", "tit_for_tat", "optimal"),
    metrics=(
        "mean_payoff",
        "optimal_joint_action_rate",
        "miscoordination_rate",
        "suboptimal_equilibrium_rate",
        "cooperation_rate",
        "valid_action_rate",
    ),
    prompts=MatrixRenderer.for_env,
    prompt_defaults=PromptOptions(variant="default", history=5),
    render_text=render_text,
    small_options={"num_agents": 3, "num_message_tokens": 1},
)
