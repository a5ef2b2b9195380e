"""Training speed: agent steps per second of the whole update against an env-only rollout.

The published runs' command line (`alemlite bench training --env NAME` is the same benchmark
for any environment, with the environment's own option names): for each batch size, times
the environment alone and one whole update of each algorithm, and reports their ratio
(`benchmarks/bench/training.py`). Writes `benchmarks/results/training_speed_<env>_<platform>.json`
and a plot.

    python -m benchmarks.training_speed --env dining --philosophers 5
    python -m benchmarks.training_speed --env craft --agents 3 --map-size 32 --max-steps 500 \
        --network.hidden-size 32 --log2-envs 4 6 8
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import tyro

import alemlite
from alemlite.core.errors import named_as
from alemlite.core.spec import EnvOptions
from baselines.common.config import NetworkConfig
from benchmarks.bench import training
from benchmarks.harness import ResultsFolder, write_results


@dataclass(frozen=True)
class TrainingSpeedConfig(ResultsFolder):
    """Time whole training updates against env-only rollouts (JSON and plot in results/)."""

    env: Literal["dining", "craft"] = "dining"
    philosophers: int = 5
    map_size: int = 16
    """craft: side of the square map."""
    agents: int = 2
    """craft: number of agents."""
    max_steps: int | None = None
    """Episode length; None: the environment's default."""
    difficulty: str = "medium"
    """craft: coordination difficulty."""
    algorithms: tuple[str, ...] = ("ippo", "mappo")
    log2_envs: tuple[int, ...] = (4, 6, 8, 10)
    """Batch sizes num_envs = 2**k."""
    num_steps: int = 32
    network: NetworkConfig = field(default_factory=NetworkConfig)
    repeats: int = 5

    def __post_init__(self):
        self.benchmark()

    def options(self) -> EnvOptions:
        """The environment these flags describe (each environment's are checked)."""
        limit = {} if self.max_steps is None else {"max_steps": self.max_steps}
        with named_as(num_agents="philosophers"):
            dining = alemlite.spec("dining").options(num_agents=self.philosophers, **limit)
        with named_as(num_agents="agents"):
            craft = alemlite.spec("craft").options(
                num_agents=self.agents, map_size=self.map_size, difficulty=self.difficulty,
                **limit,
            )  # fmt: skip
        return dining if self.env == "dining" else craft

    def benchmark(self) -> training.TrainingSpeedConfig:
        return training.TrainingSpeedConfig(
            env=self.env,
            options=self.options(),
            algorithms=self.algorithms,
            log2_envs=self.log2_envs,
            num_steps=self.num_steps,
            network=self.network,
            repeats=self.repeats,
        )


def main(config: TrainingSpeedConfig) -> None:
    out_dir, provenance = config.begin("training_speed")
    result = training.measure(config.benchmark())
    path = write_results(f"training_speed_{config.env}", result, out_dir, provenance)
    training.plot(result, config.algorithms, path.with_suffix(".png"))
    print(f"wrote {path}")


if __name__ == "__main__":
    main(tyro.cli(TrainingSpeedConfig))
