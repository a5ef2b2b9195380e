"""LLM turns per second of the harness itself (`alemlite eval-llm`'s runner and OpenAI
client) against an instant OpenAI-compatible server on loopback: dining and Craft.

The server (`benchmarks.instant_server`) runs in its own process and answers every request
at once with a legal action, so what is timed is the harness: the environment stepped,
every prompt built, each request sent and its answer parsed, the transcript written. The
runner compiles every program of a run (reset, step, the batch's view, metrics) before its
clock starts and reports that apart (`usage.compile_s`); each environment is first played
once by seats that answer in-process, whose compile time is reported as `compile_s`, and
the compiles seen during the timed runs after it are counted (`timed_compiles`: 0 when
nothing recompiles). Each timed run reports the turns per second of its play
(`usage.wall_s`), and the CPU time per turn of this process (the client: environment,
prompts, HTTP, parsing, transcript) and of the server's; `--rounds` runs are timed and the
median reported.

    python -m benchmarks.llm_harness_speed [--publish]
"""

from __future__ import annotations

import dataclasses
import json
import logging
import statistics
import tempfile
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax

import alemlite
from alemlite.core.errors import require_at_least
from benchmarks.harness import ResultsFolder, write_results
from benchmarks.instant_server import InstantSeats, instant_server
from benchmarks.script import run_script
from llm_bridge.agents import LLMAgent
from llm_bridge.clients.openai_backend import OpenAIBackend, OpenAIConfig
from llm_bridge.runner import RunConfig, run_evaluation

DiningOptions = alemlite.spec("dining").options
CraftOptions = alemlite.spec("craft").options
# What the instant server answers where a prompt lists no legal actions: dining's WAIT is
# legal at every step and never deadlocks the table, so episodes last max_steps.
_DEFAULT_ACTION = {"dining": "WAIT", "craft": "noop"}


@dataclass(frozen=True)
class HarnessSpeedConfig(ResultsFolder):
    """Time the LLM harness against an instant loopback server (JSON under
    benchmarks/results/)."""

    dining: DiningOptions = field(default_factory=lambda: DiningOptions(max_steps=30))
    """the dining table played (flags under its name: --dining.num-agents)"""
    craft: CraftOptions = field(
        default_factory=lambda: CraftOptions(num_agents=3, map_size=16, max_steps=50)
    )
    """the Craft world played (--craft.num-agents, --craft.map-size)"""
    episodes: int = 16
    concurrency: int = 64
    rounds: int = 3
    """timed runs of each environment (median reported)"""

    def __post_init__(self) -> None:
        require_at_least(
            1, episodes=self.episodes, concurrency=self.concurrency, rounds=self.rounds
        )


class _CompileCounter(logging.Handler):
    """Counts JAX's "Finished XLA compilation" log lines (jax_log_compiles)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += "Finished XLA compilation" in record.getMessage()


def _server_cpu_s(base_url: str) -> float:
    stats_url = base_url.removesuffix("/v1") + "/stats"
    with urllib.request.urlopen(stats_url, timeout=10) as answer:
        return json.load(answer)["cpu_s"]


def _play(env, env_name: str, team, episodes: int, out: Path) -> dict[str, Any]:
    spec = alemlite.spec(env_name)
    run = RunConfig(episodes=episodes, out=out, resume=False, progress=False)
    return run_evaluation(env, spec.prompts(env), team, spec.prompt_defaults, run)


def _measure_env(config: HarnessSpeedConfig, env_name: str, options, runs_dir: Path) -> dict:
    env = alemlite.spec(env_name).build(options)
    warm = [LLMAgent(InstantSeats(_DEFAULT_ACTION[env_name]), "instant")] * env.num_agents
    compile_s = _play(env, env_name, warm, config.episodes, runs_dir / "warm-up")["usage"][
        "compile_s"
    ]
    counter = _CompileCounter()
    logger = logging.getLogger("jax")
    logger.addHandler(counter)
    runs = []
    try:
        with instant_server(_DEFAULT_ACTION[env_name]) as url, jax.log_compiles(True):
            for round_index in range(config.rounds):
                backend = OpenAIBackend(
                    OpenAIConfig(model="instant", base_urls=(url,), concurrency=config.concurrency)
                )
                team = [LLMAgent(backend, "instant")] * env.num_agents
                server_before = _server_cpu_s(url)
                report = _play(env, env_name, team, config.episodes, runs_dir / str(round_index))
                server_cpu_s = _server_cpu_s(url) - server_before
                usage = report["usage"]
                turns = usage["requests"]
                runs.append(
                    {
                        "turns": turns,
                        "wall_s": round(usage["wall_s"], 4),
                        "turns_per_s": round(turns / usage["wall_s"], 1),
                        "client_cpu_ms_per_turn": round(usage["client_cpu_ms_per_turn"], 4),
                        "server_cpu_ms_per_turn": round(1e3 * server_cpu_s / turns, 4),
                        "latency_mean_ms": round(1e3 * usage["latency_mean_s"], 3),
                        "failed_requests": usage["failed_requests"],
                        "parse_rate": usage["parse_rate"],
                    }
                )
                print(env_name, runs[-1], flush=True)
    finally:
        logger.removeHandler(counter)
    return {
        "env": env_name,
        "options": dataclasses.asdict(options),
        "compile_s": round(compile_s, 2),
        "timed_compiles": counter.count,
        "turns_per_s": statistics.median(run["turns_per_s"] for run in runs),
        "runs": runs,
    }


def run(config: HarnessSpeedConfig) -> dict[str, Any]:
    """Time the harness on dining and Craft; write the JSON."""
    out_dir, provenance = config.begin("llm_harness_speed")
    with tempfile.TemporaryDirectory() as runs:  # the runs' transcripts are not results
        results = {
            env_name: _measure_env(config, env_name, options, Path(runs) / env_name)
            for env_name, options in (("dining", config.dining), ("craft", config.craft))
        }
    payload = {
        "config": {**dataclasses.asdict(config), "out": str(out_dir)},
        "turns_per_s": {name: result["turns_per_s"] for name, result in results.items()},
        "compile_s": {name: result["compile_s"] for name, result in results.items()},
        "results": results,
    }
    path = write_results("llm_harness_speed", payload, out_dir, provenance)
    for name, result in results.items():
        print(
            f"{name}: {result['turns_per_s']:.0f} turns/s (compile {result['compile_s']} s "
            f"apart, {result['timed_compiles']} compiles while timed)"
        )
    print(f"wrote {path}")
    return payload


if __name__ == "__main__":
    run_script(HarnessSpeedConfig, run)
