"""Prompts per second serialised from a batch of environments (dining and Craft).

A batch is played a few steps with a uniform-random policy so that states and
messages vary; then, per repetition, the batched state (with the action masks) is
copied to the host once (`jax.device_get`) and every agent's observation text is
built. The figure counts both the transfer and the text building, as the runner
does each step.

    python -m benchmarks.prompt_throughput [--dining-tables 2048] [--craft-worlds 256]
    python -m benchmarks.prompt_throughput --dining.num-agents 10 --craft.num-agents 4

`alemlite bench prompts --env NAME` times one environment's builder the same way.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import alemlite
from alemlite.core.errors import require_at_least
from alemlite.core.prompting import PromptOptions
from alemlite.core.spec import EnvOptions
from benchmarks.engine.prompts import measure, print_result
from benchmarks.harness import ResultsFolder, write_results
from benchmarks.script import run_script

# Each environment's options, as flags under its name (--dining.num-agents, --craft.map-size).
DiningOptions = alemlite.spec("dining").options
CraftOptions = alemlite.spec("craft").options


@dataclass(frozen=True)
class PromptBenchConfig(ResultsFolder):
    """Measure prompts per second serialised from a batch (JSON under benchmarks/results/)."""

    dining_tables: int = 2048
    craft_worlds: int = 256
    repeats: int = 10
    dining: DiningOptions = field(default_factory=DiningOptions)
    craft: CraftOptions = field(default_factory=CraftOptions)

    def __post_init__(self):
        require_at_least(
            1,
            dining_tables=self.dining_tables,
            craft_worlds=self.craft_worlds,
            repeats=self.repeats,
        )
        self.settings()

    def settings(self) -> list[tuple[str, EnvOptions, int, PromptOptions]]:
        """Per environment: its options, batch size and prompt switches."""
        return [
            ("dining", self.dining, self.dining_tables, PromptOptions()),
            ("craft", self.craft, self.craft_worlds, PromptOptions(variant="collaborative")),
        ]


def run(config: PromptBenchConfig) -> dict:
    """Time the batched dining and Craft serialisers, transfer included."""
    out_dir, provenance = config.begin("prompt_throughput")
    results = []
    for name, options, num_envs, prompts in config.settings():
        env_spec = alemlite.spec(name)
        env = env_spec.build(options)
        results.append(measure(env, env_spec.prompts(env), prompts, num_envs, config.repeats))
    payload = {"config": {**asdict(config), "out": str(out_dir)}, "results": results}
    path = write_results("prompt_throughput", payload, out_dir, provenance)
    for result in results:
        print_result(result)
    print(f"wrote {path}")
    return payload


if __name__ == "__main__":
    run_script(PromptBenchConfig, run)
