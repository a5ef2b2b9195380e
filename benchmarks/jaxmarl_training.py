"""alemlite's compiled IPPO update against JaxMARL's own IPPO, side by side on dining.

Both sides train the same dining table at matched configurations (environments, rollout
length, epochs, minibatches, two hidden layers of 64): alemlite's trainer on the array
environment, JaxMARL's feed-forward IPPO script (`make_train`, imported unmodified from a
JaxMARL checkout) on the same table behind `JaxMARLAdapter`. Each call runs
`--updates-per-call` whole updates (JaxMARL's also builds its network and resets, a
negligible part); both are compiled first, then timed alternately in one run, and each
row reports the median of `--repeats` calls and `ratio`, alemlite's agent steps per second
over JaxMARL's. The JaxMARL side runs in its own process, under `--jaxmarl-python`.

    git clone https://github.com/FLAIROx/JaxMARL /tmp/JaxMARL
    python -m venv /tmp/jaxmarl-venv && /tmp/jaxmarl-venv/bin/pip install \\
        "jaxmarl[algs]==0.2.0" "jax==$(python -c 'import jax; print(jax.__version__)')" \\
        scipy tyro tqdm imageio orbax-checkpoint
    python -m benchmarks.jaxmarl_training --jaxmarl-repo /tmp/JaxMARL \\
        --jaxmarl-python /tmp/jaxmarl-venv/bin/python
"""

from __future__ import annotations

import dataclasses
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
from tqdm import tqdm

import alemlite
from alemlite.core.errors import require, require_at_least
from baselines.common.config import NetworkConfig, PPOConfig, TrainConfig
from baselines.common.trainer import build_algorithm, run_updates
from benchmarks.harness import ResultsFolder, write_results
from benchmarks.script import run_script

PEER = Path(__file__).resolve().parent / "peers" / "jaxmarl_ippo.py"


@dataclass(frozen=True)
class JaxMARLTrainingConfig(ResultsFolder):
    """Time alemlite's IPPO update against JaxMARL's IPPO script on dining."""

    jaxmarl_repo: Path | None = None
    """a JaxMARL checkout (git clone https://github.com/FLAIROx/JaxMARL)"""
    jaxmarl_python: Path = Path(sys.executable)
    """python of a virtual environment with JaxMARL's algorithm dependencies"""
    jaxmarl_script: str = "baselines/IPPO/ippo_ff_mpe.py"
    """JaxMARL's feed-forward IPPO script, relative to the checkout"""
    num_agents: int = 5
    max_steps: int = 30
    num_envs: tuple[int, ...] = (64, 256)
    num_steps: int = 128
    epochs: int = 4
    minibatches: int = 4
    hidden_size: int = 64
    num_layers: int = 2
    """JaxMARL's script has two hidden layers; kept for the record, not a choice."""
    updates_per_call: int = 2
    repeats: int = 5

    def __post_init__(self) -> None:
        require_at_least(1, num_envs=self.num_envs, num_steps=self.num_steps)
        require_at_least(1, updates_per_call=self.updates_per_call, repeats=self.repeats)
        require(self.num_layers == 2, f"num_layers={self.num_layers} must be 2 (JaxMARL's)")
        self.options()

    def options(self) -> Any:
        return alemlite.spec("dining").options(num_agents=self.num_agents, max_steps=self.max_steps)

    def train_config(self, num_envs: int) -> TrainConfig:
        return TrainConfig(
            algorithm="ippo",
            env="dining",
            options=self.options(),
            num_envs=num_envs,
            num_steps=self.num_steps,
            network=NetworkConfig(hidden_size=self.hidden_size, num_layers=self.num_layers),
            ppo=PPOConfig(num_epochs=self.epochs, num_minibatches=self.minibatches),
            updates_per_chunk=1,
            num_updates=1,
            eval_interval=1,
            progress=False,
        )

    def jaxmarl_config(self, num_envs: int) -> dict[str, Any]:
        """The keys of JaxMARL's IPPO config, its own values where speed does not depend on them."""
        return {
            "LR": 2.5e-4,
            "NUM_ENVS": num_envs,
            "NUM_STEPS": self.num_steps,
            "TOTAL_TIMESTEPS": num_envs * self.num_steps * self.updates_per_call,
            "UPDATE_EPOCHS": self.epochs,
            "NUM_MINIBATCHES": self.minibatches,
            "GAMMA": 0.99,
            "GAE_LAMBDA": 0.95,
            "CLIP_EPS": 0.2,
            "ENT_COEF": 0.01,
            "VF_COEF": 0.5,
            "MAX_GRAD_NORM": 0.5,
            "ACTIVATION": "tanh",
            "ENV_NAME": "dining",
            "ENV_KWARGS": {"num_agents": self.num_agents, "max_steps": self.max_steps},
            "ANNEAL_LR": True,
        }


class JaxMARLPeer:
    """JaxMARL's script in its own process, compiled and timed on request."""

    def __init__(self, config: JaxMARLTrainingConfig):
        command = [
            str(config.jaxmarl_python),
            str(PEER),
            "--jaxmarl-repo",
            str(config.jaxmarl_repo),
            "--script",
            config.jaxmarl_script,
        ]
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self.ready = self._ask(None)

    def _ask(self, request: dict | None) -> dict:
        if request is not None:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
        for line in self.process.stdout:
            if line.startswith("{"):
                return json.loads(line)
        raise RuntimeError(f"the JaxMARL peer stopped (exit {self.process.wait()})")

    def prepare(self, jaxmarl_config: dict) -> float:
        return self._ask({"prepare": jaxmarl_config})["compile_s"]

    def time_once(self) -> float:
        return self._ask({"time": True})["seconds"]

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait()


def summary(durations: list[float], compile_s: float, agent_steps: int) -> dict[str, Any]:
    median = statistics.median(durations)
    return {
        "compile_s": compile_s,
        "median_s": median,
        "min_s": min(durations),
        "max_s": max(durations),
        "durations_s": durations,
        "agent_steps_per_s": agent_steps / median,
    }


def measure_point(config: JaxMARLTrainingConfig, peer: JaxMARLPeer, num_envs: int) -> dict:
    env = alemlite.spec("dining").build(config.options())
    train_config = config.train_config(num_envs)
    algorithm = build_algorithm(train_config, env)
    key = jax.random.PRNGKey(0)
    runner = jax.jit(jax.vmap(algorithm.init))(key[None])  # one seed
    start = time.perf_counter()
    update = (
        jax.jit(lambda runner: run_updates(algorithm, config.updates_per_call, runner))
        .lower(runner)
        .compile()
    )
    ours_compile_s = time.perf_counter() - start
    jax.block_until_ready(update(runner))
    theirs_compile_s = peer.prepare(config.jaxmarl_config(num_envs))
    ours, theirs = [], []
    for _ in tqdm(range(config.repeats), desc=f"{num_envs} envs", leave=False):
        start = time.perf_counter()
        jax.block_until_ready(update(runner))
        ours.append(time.perf_counter() - start)
        theirs.append(peer.time_once())
    agent_steps = num_envs * config.num_steps * env.num_agents * config.updates_per_call
    row = {
        "num_envs": num_envs,
        "num_steps": config.num_steps,
        "epochs": config.epochs,
        "minibatches": config.minibatches,
        "hidden": [config.hidden_size] * config.num_layers,
        "agent_steps_per_call": agent_steps,
        "alemlite": summary(ours, ours_compile_s, agent_steps),
        "jaxmarl": summary(theirs, theirs_compile_s, agent_steps),
    }
    row["ratio"] = row["alemlite"]["agent_steps_per_s"] / row["jaxmarl"]["agent_steps_per_s"]
    return row


def main(config: JaxMARLTrainingConfig) -> dict | None:
    if config.jaxmarl_repo is None or not (config.jaxmarl_repo / config.jaxmarl_script).exists():
        print(f"JaxMARL's script not found (--jaxmarl-repo {config.jaxmarl_repo}).")
        print(__doc__.split("\n\n", 2)[-1])
        return None
    out_dir, provenance = config.begin("jaxmarl_training")
    load_before = os.getloadavg()
    peer = JaxMARLPeer(config)
    try:
        rows = []
        for num_envs in config.num_envs:
            row = measure_point(config, peer, num_envs)
            print(
                f"{num_envs:>5} envs  alemlite {row['alemlite']['agent_steps_per_s']:>10,.0f}"
                f"  JaxMARL {row['jaxmarl']['agent_steps_per_s']:>10,.0f} agent steps/s"
                f"  ratio {row['ratio']:.2f}"
            )
            rows.append(row)
    finally:
        peer.close()
    payload = {
        "config": {
            **dataclasses.asdict(config),
            "out": str(out_dir),
            "jaxmarl_repo": str(config.jaxmarl_repo),
            "jaxmarl_python": str(config.jaxmarl_python),
        },
        "env": {"name": "dining", "options": dataclasses.asdict(config.options())},
        "jaxmarl_jax": peer.ready["jax"],
        "load_average": {"before": load_before, "after": os.getloadavg()},
        "rows": rows,
    }
    path = write_results("jaxmarl_training", payload, out_dir, provenance)
    print(f"wrote {path}")
    return payload


if __name__ == "__main__":
    run_script(JaxMARLTrainingConfig, main)
