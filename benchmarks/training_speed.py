"""Training speed: agent steps per second of the whole update against an env-only rollout.

The published runs' command line (`alemlite bench training --env NAME` is the same benchmark
for any environment, with the environment's own option names): for each batch size, times
the environment alone and one whole update of each algorithm, and reports their ratio
(`benchmarks/engine/training.py`). Writes `benchmarks/results/training_speed_<env>_<platform>.json`
and a plot.

    python -m benchmarks.training_speed --env dining --num-agents 5
    python -m benchmarks.training_speed --env craft --num-agents 3 --map-size 32 --max-steps 500 \
        --network.hidden-size 32 --log2-envs 4 6 8

Two or more Craft observation encodings (`--obs-encodings dense symbolic`) are timed in one
run, in alternation (`engine/training.py: measure_variants`), with the observation's cost
beside them (unused, summed on device, copied to the host step by step), into
`training_speed_craft_obs_encodings_<platform>.json`. Every update figure carries the
projected hours for one billion agent steps.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import alemlite
from alemlite.core.spec import EnvOptions
from baselines.common.config import NetworkConfig
from benchmarks.engine import training
from benchmarks.harness import ResultsFolder, write_results
from benchmarks.script import run_script


@dataclass(frozen=True)
class TrainingSpeedConfig(ResultsFolder):
    """Time whole training updates against env-only rollouts (JSON and plot in results/)."""

    env: Literal["dining", "craft"] = "dining"
    num_agents: int | None = None
    """Philosophers at the table, or Craft's team size; None: the environment's default."""
    map_size: int = 16
    """craft: side of the square map."""
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
    obs_encodings: tuple[str, ...] = ("dense",)
    """craft: observation encodings; two or more are timed in alternation."""
    rounds: int = 7
    """Alternating rounds when several encodings are timed (medians over the rounds)."""
    observation_log2_envs: tuple[int, ...] = (8,)
    """Batch sizes at which, with several encodings, the observation's cost is timed too."""

    def __post_init__(self):
        for encoding in self.obs_encodings:
            self.benchmark(encoding)

    @property
    def alternating(self) -> bool:
        return self.env == "craft" and len(self.obs_encodings) > 1

    def options(self, obs_encoding: str = "dense") -> EnvOptions:
        """The environment these flags describe (each environment's are checked)."""
        given = {
            name: value
            for name, value in (("num_agents", self.num_agents), ("max_steps", self.max_steps))
            if value is not None
        }
        dining = alemlite.spec("dining").options(**given)
        craft = alemlite.spec("craft").options(
            map_size=self.map_size, difficulty=self.difficulty, obs_encoding=obs_encoding, **given
        )
        return dining if self.env == "dining" else craft

    def benchmark(self, obs_encoding: str = "dense") -> training.TrainingSpeedConfig:
        return training.TrainingSpeedConfig(
            env=self.env,
            options=self.options(obs_encoding),
            algorithms=self.algorithms,
            log2_envs=self.log2_envs,
            num_steps=self.num_steps,
            network=self.network,
            repeats=self.repeats,
        )


def main(config: TrainingSpeedConfig) -> None:
    if config.alternating:
        return main_alternating(config)
    out_dir, provenance = config.begin("training_speed")
    result = training.measure(config.benchmark())
    path = write_results(f"training_speed_{config.env}", result, out_dir, provenance)
    training.plot(result, config.algorithms, path.with_suffix(".png"))
    print(f"wrote {path}")


def main_alternating(config: TrainingSpeedConfig) -> None:
    out_dir, provenance = config.begin("training_speed")
    variants = {encoding: config.benchmark(encoding) for encoding in config.obs_encodings}
    result = training.measure_variants(variants, config.rounds, config.observation_log2_envs)
    name = f"training_speed_{config.env}_obs_encodings"
    path = write_results(name, result, out_dir, provenance)
    training.plot_variants(result, config.algorithms, path.with_suffix(".png"))
    print(f"wrote {path}")


if __name__ == "__main__":
    run_script(TrainingSpeedConfig, main)
