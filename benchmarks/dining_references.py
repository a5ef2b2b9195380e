"""The dining reference of one setting (`benchmarks.references`): IPPO and MAPPO trained on a
table of `num_agents` philosophers under `reward`, the best on validation shipped as
`baselines/pretrained/dining-{N}-{reward}` (`baselines.load("dining-5-shaped")`) with its
card, the results in `dining_reference_{N}_{reward}.json`.

    python -m benchmarks.dining_references --num-agents 5 --reward shaped --num-updates 200

The billion-step variant of N = 5 (`--label 1b`: `dining-5-shaped-1b`) is the same command
with `--algorithms mappo --num-seeds 1 --num-envs 256 --num-updates 24420` (256 tables x 32
steps x 5 seats = 40,960 agent steps an update; on a CPU the larger batch takes less time an
agent step than 64 tables). N = 10 for 250 M agent steps (`--label 250m`) is `--num-agents 10
--algorithms ippo mappo --num-seeds 1 --num-envs 256 --num-updates 3050`.
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
class DiningReferencesConfig(references.ReferenceConfig):
    """Train every algorithm on one dining setting; ship the best on validation seeds."""

    env_name: ClassVar[str] = "dining"
    num_agents: int = 5
    """philosophers at the table (N)"""
    reward: Literal["shaped", "paper"] = "shaped"
    runs_dir: Path = Path("runs/dining_references")
    """Run directories (checkpoints inside: an interrupted run resumes with --reuse-runs)."""
    label: str = ""
    """A variant of the setting's reference (e.g. `1b` for a billion-step budget), named by
    this suffix in its shipped name, results file and run directories, beside the reference."""

    def options(self) -> EnvOptions:
        return alemlite.spec("dining").options(num_agents=self.num_agents, reward=self.reward)

    @property
    def shipped_name(self) -> str:
        return f"dining-{self.num_agents}-{self.reward}" + (f"-{self.label}" if self.label else "")

    @property
    def results_name(self) -> str:
        suffix = f"_{self.label}" if self.label else ""
        return f"dining_reference_{self.num_agents}_{self.reward}{suffix}.json"

    @classmethod
    def trained_on(cls, config: dict[str, Any]) -> str:
        return f"dining N = {config['num_agents']}, reward {config['reward']}"


def card(name: str, results: dict, results_file: str) -> str:
    """The card of a shipped dining reference, from its results file."""
    trained_on = DiningReferencesConfig.trained_on(results["config"])
    return references.card(name, results, results_file, trained_on)


if __name__ == "__main__":
    run_script(DiningReferencesConfig, references.run)
