"""The matrix-game reference of one game (`benchmarks.references`): every algorithm trained on
the repeated game, the best on validation shipped as
`baselines/pretrained/matrix-{GAME}-{N}` (`baselines.load("matrix-climbing-2")`) with its
card, the results in `matrix_reference_{GAME}_{N}.json`. The scripted `optimal` team plays
the game's optimal joint action from the first round, so it is the ceiling a learned team
can only match.

    python -m benchmarks.matrix_references --game climbing --num-updates 200
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

import alemlite
from alemlite.core.spec import EnvOptions
from benchmarks import references
from benchmarks.script import run_script


@dataclass(frozen=True)
class MatrixReferencesConfig(references.ReferenceConfig):
    """Train every algorithm on one repeated matrix game; ship the best on validation seeds."""

    env_name: ClassVar[str] = "matrix"
    game: Literal["climbing", "penalty", "stag_hunt", "prisoners_dilemma"] = "climbing"
    num_agents: int = 2
    """players"""
    max_steps: int = 25
    """rounds"""
    algorithms: tuple[str, ...] = ("ippo", "mappo", "grpo", "srpo", "teamtr")
    num_seeds: int = 8
    runs_dir: Path = Path("runs/matrix_references")
    """Run directories (checkpoints inside: an interrupted run resumes with --reuse-runs)."""

    def options(self) -> EnvOptions:
        return alemlite.spec("matrix").options(
            game=self.game, num_agents=self.num_agents, max_steps=self.max_steps
        )

    @property
    def shipped_name(self) -> str:
        return f"matrix-{self.game.replace('_', '-')}-{self.num_agents}"

    @property
    def results_name(self) -> str:
        return f"matrix_reference_{self.game}_{self.num_agents}.json"

    @classmethod
    def trained_on(cls, config: dict[str, Any]) -> str:
        return (
            f"the repeated {config['game'].replace('_', ' ')} game, {config['num_agents']} "
            f"players, {config['max_steps']} rounds"
        )


def card(name: str, results: dict, results_file: str) -> str:
    """The card of a shipped matrix reference, from its results file."""
    trained_on = MatrixReferencesConfig.trained_on(results["config"])
    return references.card(name, results, results_file, trained_on)


if __name__ == "__main__":
    run_script(MatrixReferencesConfig, references.run)
