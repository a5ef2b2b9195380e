"""Craft throughput, the published preset of the throughput engine (`benchmarks/engine/
throughput.py`): steps per second over batch sizes with auto-reset from a pool of worlds,
`craftax` Classic symbolic and `alem-env` timed beside alemlite where their virtual
environments are given (ratios at 64 environments, the median of 3 rounds, and at each side's
best), 5 fresh compiles, and `step` alone on 16, 48 and 128 maps. Writes
`craft_throughput_<platform>.json` and a plot beside it.

    python -m benchmarks.craft_throughput --max-log2-envs 12
    python -m benchmarks.craft_throughput --craftax-python /tmp/peer-craftax/bin/python \\
        --alem-python /tmp/peer-alem/bin/python
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import alemlite
from benchmarks.engine.throughput import UNIFORM_POLICIES, Subject, ThroughputOptions, run_one
from benchmarks.script import run_script


@dataclass(frozen=True)
class CraftBenchConfig(ThroughputOptions):
    """Measure Craft throughput (JSON + plot under benchmarks/results/)."""

    num_agents: int = 3
    map_size: int = 48
    craftax_python: Path | None = None
    """python of a virtual environment with craftax==1.6.1 (None: skip the peer)"""
    alem_python: Path | None = None
    """python of a virtual environment with alem-env==0.2.1 (None: skip the peer)"""
    peer_envs: tuple[int, ...] = (16, 32, 64, 128, 256, 512, 1024)
    ratio_rounds: int = 3
    peer_stop_gain: float = 1.05
    compile_runs: int = 5
    map_size_check: tuple[int, ...] = (16, 48, 128)

    def subjects(self) -> dict[str, Subject]:
        options = alemlite.spec("craft").options(num_agents=self.num_agents, map_size=self.map_size)
        pythons = {"craftax": self.craftax_python, "alem": self.alem_python}
        given = {name: python for name, python in pythons.items() if python is not None}
        return {"alemlite": Subject("craft", options, UNIFORM_POLICIES, given)}


def run(config: CraftBenchConfig) -> dict[str, Any]:
    """Sweep Craft throughput; time its peers side by side where their venvs are given."""
    return run_one("craft_throughput", config, {})


if __name__ == "__main__":
    run_script(CraftBenchConfig, run)
