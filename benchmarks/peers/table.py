"""Each environment's peers: other implementations of it, timed beside it in the same run.

`alemlite bench --env NAME` times the peers `PEERS[NAME]` lists (an environment without an
entry has none), and so do the published dining and Craft throughput benchmarks. A peer
runs in this process (the plain-Python dining engine of `benchmarks/reference/`) or, where
it pins other libraries, as a script of this folder in its own virtual environment.
"""

from __future__ import annotations

import json
import random
import subprocess
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from alemlite.core.spec import EnvOptions
from benchmarks.harness import Timing, time_python
from benchmarks.reference.dining import DiningOracle

PEERS_DIR = Path(__file__).resolve().parent


@dataclass(frozen=True)
class PeerRun:
    """What a peer is asked to time."""

    num_envs: int
    steps: int
    """steps per timed call"""
    repeats: int
    python: Path | None = None
    """the interpreter of the peer's virtual environment (peers that need one)"""


@dataclass(frozen=True)
class Peer:
    name: str
    time: Callable[[EnvOptions, PeerRun], list[dict[str, Any]]]
    """`(options, run)` -> one row per mode timed: peer, mode, num_envs, env_steps_per_s, ..."""
    setup: str = ""
    """The shell command that creates its virtual environment; empty: it runs in process."""
    batched: bool = True
    """Steps a batch of environments (timed at each batch size); False: one at a time."""


def python_engine_timing(options: EnvOptions, steps: int, repeats: int) -> Timing:
    """The plain-Python dining engine playing `steps` uniform-random steps (one table)."""
    oracle = DiningOracle(**options.make_kwargs())
    rng = random.Random(0)
    seats = oracle.num_philosophers
    actions = [[rng.randrange(4) for _ in range(seats)] for _ in range(steps)]  # 4 actions

    def play():
        oracle.reset()
        for step_actions in actions:
            _, terminated, truncated = oracle.step(step_actions)
            if terminated or truncated:
                oracle.reset()

    return time_python(play, repeats)


def _python_engine(options: EnvOptions, run: PeerRun) -> list[dict[str, Any]]:
    timing = python_engine_timing(options, run.steps, run.repeats)
    env_steps = run.steps / timing.median_s
    return [
        {
            "peer": "python_engine",
            "mode": "one table",
            "num_envs": 1,
            "num_agents": options.num_agents,
            "env_steps_per_s": env_steps,
            "agent_steps_per_s": env_steps * options.num_agents,
            "timing": asdict(timing),
        }
    ]


def script_peer(name: str) -> Callable[[EnvOptions, PeerRun], list[dict[str, Any]]]:
    """A peer timed by `benchmarks/peers/<name>_peer.py` in its own interpreter (one JSON line
    per mode; `protocol.py`)."""

    def time(options: EnvOptions, run: PeerRun) -> list[dict[str, Any]]:
        command = [
            str(run.python),
            str(PEERS_DIR / f"{name}_peer.py"),
            *("--num-envs", str(run.num_envs), "--steps", str(run.steps)),
            *("--repeats", str(run.repeats), "--num-agents", str(options.num_agents)),
        ]
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            print(f"{name} peer failed at {run.num_envs} envs:\n{result.stderr[-2000:]}")
            return [{"peer": name, "num_envs": run.num_envs, "error": result.stderr[-2000:]}]
        return [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]

    return time


PEERS: dict[str, tuple[Peer, ...]] = {
    "dining": (Peer("python_engine", _python_engine, batched=False),),
    "craft": (
        Peer(
            "craftax",
            script_peer("craftax"),
            "python -m venv /tmp/peer-craftax && /tmp/peer-craftax/bin/pip install craftax==1.6.1",
        ),
        Peer(
            "alem",
            script_peer("alem"),
            "python -m venv /tmp/peer-alem && /tmp/peer-alem/bin/pip install alem-env==0.2.1",
        ),
    ),
}
