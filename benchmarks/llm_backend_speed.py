"""LLM turns per second of the transformers backend with a real model (SmolLM2-135M) on
this machine: dining and Craft, likelihood decoding, constrained and free generation.

Each run is a real evaluation (`llm_bridge.runner`), timed from its first step to its last
(`usage.wall_s`): prompts built, the model asked, the environment stepped. Before it, the
same batch program is compiled by a warm-up run whose seats answer at once, and the model
is loaded, so neither compile nor load is counted (both are reported). Every run starts
with an empty KV cache. Seats sample at temperature 1 (seeded), so that episodes play on:
at temperature 0 every philosopher of a table makes the same choice and the table
deadlocks at the first step. Likelihood decoding runs in float32 and bfloat16, alternated
for `--rounds` rounds (median reported); the other modes once in float32.

With `--loaded`, dining's likelihood run is also timed while `--load-processes` busy
processes hold the cores, once with torch on every core and once on one thread: the
cause of the slow-down a loaded machine shows.

    python -m benchmarks.llm_backend_speed [--publish]
"""

from __future__ import annotations

import asyncio
import dataclasses
import multiprocessing
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import alemlite
from alemlite.core.errors import require_at_least
from benchmarks.harness import ResultsFolder, write_results
from benchmarks.instant_server import InstantSeats
from benchmarks.script import run_script
from llm_bridge.agents import LLMAgent
from llm_bridge.clients.hf_backend import HFBackend, HFConfig
from llm_bridge.runner import RunConfig, run_evaluation

DiningOptions = alemlite.spec("dining").options
CraftOptions = alemlite.spec("craft").options


@dataclass(frozen=True)
class BackendSpeedConfig(ResultsFolder):
    """Time the transformers backend on a real model (JSON under benchmarks/results/)."""

    model: str = "smollm2-135m"
    dining: DiningOptions = field(default_factory=lambda: DiningOptions(max_steps=10))
    """the dining table played (flags under its name: --dining.num-agents)"""
    dining_episodes: int = 4
    craft: CraftOptions = field(default_factory=lambda: CraftOptions(map_size=16, max_steps=8))
    """the Craft world played (--craft.num-agents, --craft.map-size)"""
    craft_episodes: int = 1
    max_tokens: int = 16
    """free and constrained generation's token budget per reply"""
    rounds: int = 2
    """alternating float32 / bfloat16 rounds of likelihood decoding (median reported)"""
    loaded: bool = True
    load_processes: int = 2

    def __post_init__(self) -> None:
        require_at_least(
            1,
            dining_episodes=self.dining_episodes,
            craft_episodes=self.craft_episodes,
            max_tokens=self.max_tokens,
            rounds=self.rounds,
            load_processes=self.load_processes,
        )


def _settings(config: BackendSpeedConfig) -> dict[str, tuple[Any, int]]:
    return {
        "dining": (config.dining, config.dining_episodes),
        "craft": (config.craft, config.craft_episodes),
    }


def _play(env_name, options, episodes, backend, out, decoding, constrained) -> dict[str, Any]:
    spec = alemlite.spec(env_name)
    env = spec.build(options)
    run = RunConfig(
        episodes=episodes, out=out, resume=False, progress=False,
        constrained=constrained, decoding=decoding,
    )  # fmt: skip
    team = [LLMAgent(backend, backend.name)] * env.num_agents
    return run_evaluation(env, spec.prompts(env), team, spec.prompt_defaults, run)


def _timed(config, env_name, options, episodes, out, mode, dtype, threads=None) -> dict[str, Any]:
    decoding = "loglik" if mode == "loglik" else "generate"
    backend = HFBackend(
        HFConfig(
            config.model, max_new_tokens=config.max_tokens, temperature=1.0, batch_size=64,
            dtype=dtype, seed=0, decoding=decoding, threads=threads,
        )
    )  # fmt: skip
    started = time.perf_counter()
    asyncio.run(backend.check())
    load_s = time.perf_counter() - started
    report = _play(env_name, options, episodes, backend, out, decoding, mode == "constrained")
    usage = report["usage"]
    store = backend._engine.store
    return {
        "env": env_name,
        "mode": mode,
        "dtype": dtype,
        "threads": threads or "all",
        "turns": usage["requests"],
        "wall_s": round(usage["wall_s"], 3),
        "turns_per_s": round(usage["requests"] / usage["wall_s"], 3),
        "parse_rate": usage["parse_rate"],
        "prompt_tokens_per_turn": round(usage["prompt_tokens"] / usage["requests"], 1),
        "computed_tokens_per_turn": round(store.computed_tokens / usage["requests"], 1),
        "completion_tokens_per_turn": round(usage["completion_tokens"] / usage["requests"], 2),
        "load_s": round(load_s, 2),
        "mean_episode_length": statistics.fmean(report["episodes"]["episode_length"]),
    }


def _busy(seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def run(config: BackendSpeedConfig) -> dict[str, Any]:
    """Time every mode on dining and Craft; write the JSON."""
    out_dir, provenance = config.begin("llm_backend_speed")
    with tempfile.TemporaryDirectory() as runs:  # the runs' transcripts are not results
        payload = _measure(config, Path(runs), out_dir)
    path = write_results("llm_backend_speed", payload, out_dir, provenance)
    for name, value in payload["turns_per_s"].items():
        print(f"{name}: {value:.2f} turns/s")
    print(f"wrote {path}")
    return payload


def _measure(config: BackendSpeedConfig, runs_dir: Path, out_dir: Path) -> dict[str, Any]:
    runs: list[dict[str, Any]] = []
    compile_s: dict[str, float] = {}
    for env_name, (options, episodes) in _settings(config).items():
        started = time.perf_counter()
        for decoding in ("generate", "loglik"):  # both programs' shapes are the same
            _play(
                env_name, options, episodes, InstantSeats(), runs_dir / "warm-up", decoding, False
            )
        compile_s[env_name] = round(time.perf_counter() - started, 2)
        for round_index in range(config.rounds):
            order = ("float32", "bfloat16") if round_index % 2 == 0 else ("bfloat16", "float32")
            for dtype in order:
                out = runs_dir / f"{env_name}-loglik-{dtype}-{round_index}"
                runs.append(_timed(config, env_name, options, episodes, out, "loglik", dtype))
                print(runs[-1], flush=True)
        for mode in ("constrained", "free"):
            out = runs_dir / f"{env_name}-{mode}"
            runs.append(_timed(config, env_name, options, episodes, out, mode, "float32"))
            print(runs[-1], flush=True)
    loaded = []
    if config.loaded:
        options, episodes = _settings(config)["dining"]
        for threads in (None, 1):
            with multiprocessing.Pool(config.load_processes) as pool:
                hogs = pool.map_async(_busy, [600.0] * config.load_processes)
                time.sleep(1.0)
                out = runs_dir / f"dining-loglik-loaded-{threads or 'all'}"
                loaded.append(
                    _timed(config, "dining", options, episodes, out, "loglik", "float32", threads)
                )
                pool.terminate()
                del hogs
            print(loaded[-1], flush=True)
    summary = {
        f"{env}/{mode}/{dtype}": statistics.median(
            r["turns_per_s"]
            for r in runs
            if (r["env"], r["mode"], r["dtype"]) == (env, mode, dtype)
        )
        for env, mode, dtype in dict.fromkeys((r["env"], r["mode"], r["dtype"]) for r in runs)
    }
    return {
        "config": {**dataclasses.asdict(config), "out": str(out_dir)},
        "compile_s": compile_s,
        "turns_per_s": summary,
        "runs": runs,
        "loaded": loaded,
    }


if __name__ == "__main__":
    run_script(BackendSpeedConfig, run)
