"""The same model behind two inference stacks, on the same seeds: llama.cpp's server (the GGUF
file's quantised weights, its own kernels, reached over the OpenAI wire format) and the
transformers backend (the same file dequantised to float32), each playing dining in free
text and with `--constrained`.

Reported per stack and mode: the constrained dialect the stack ended up with, parse rate,
the share of each action, return, tokens; and per mode, how often the two stacks chose the
same action for the very same prompt (same episode, step and seat, prompt text equal: the
first steps of every episode, and later ones until the tables' histories part).

    python -m benchmarks.llm_backend_agreement [--publish]
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import json
import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import alemlite
from alemlite.core.errors import require, require_at_least
from benchmarks.harness import ResultsFolder, write_results
from benchmarks.script import run_script
from llm_bridge.agents import LLMAgent
from llm_bridge.clients.hf_backend import HFBackend, HFConfig
from llm_bridge.clients.llama_server import serve
from llm_bridge.clients.openai_backend import OpenAIBackend, OpenAIConfig
from llm_bridge.models import NAMED_MODELS, cached_file
from llm_bridge.runner import RunConfig, run_evaluation
from llm_bridge.transcripts import read_records

MODES = ("free", "constrained")
STACKS = ("transformers", "llama.cpp")


@dataclass(frozen=True)
class BackendAgreementConfig(ResultsFolder):
    """llama.cpp's server against the transformers backend (JSON under benchmarks/results/)."""

    model: str = "smollm2-135m"
    """a named model (its GGUF file is what both stacks load)"""
    num_agents: int = 5
    max_steps: int = 10
    episodes: int = 8
    seed: int = 0
    max_tokens: int = 48
    """each reply's token budget, in both modes"""
    threads: int = 2
    """llama.cpp's threads and torch's"""

    def __post_init__(self) -> None:
        require_at_least(
            1,
            num_agents=self.num_agents,
            max_steps=self.max_steps,
            episodes=self.episodes,
            max_tokens=self.max_tokens,
            threads=self.threads,
        )
        require_at_least(0, seed=self.seed)
        require(
            self.model in NAMED_MODELS,
            f"model={self.model} is not a named model; give one of: {', '.join(NAMED_MODELS)}",
        )


def _play(config: BackendAgreementConfig, backend, out: Path, constrained: bool) -> Path:
    spec = alemlite.spec("dining")
    env = spec.build(spec.options(num_agents=config.num_agents, max_steps=config.max_steps))
    run = RunConfig(
        episodes=config.episodes, seed=config.seed, out=out, resume=False, progress=False,
        constrained=constrained,
    )  # fmt: skip
    team = [LLMAgent(backend, config.model)] * env.num_agents
    run_evaluation(env, spec.prompts(env), team, spec.prompt_defaults, run)
    return out


def _transformers(config: BackendAgreementConfig) -> HFBackend:
    backend = HFBackend(
        HFConfig(config.model, max_new_tokens=config.max_tokens, threads=config.threads)
    )
    asyncio.run(backend.check())  # loaded before the runs, once
    return backend


def _llama_cpp(config: BackendAgreementConfig, base_url: str) -> OpenAIBackend:
    return OpenAIBackend(
        OpenAIConfig(model=config.model, base_urls=(base_url,), max_tokens=config.max_tokens)
    )


def _stack_summary(run: Path) -> dict[str, Any]:
    summary = json.loads((run / "summary.json").read_text())
    turns = _turns(run)
    counts = collections.Counter(turn["action"] for turn in turns)
    usage = summary["usage"]
    returns = summary["episodes"]["episode_return"]
    return {
        "valid": summary["valid"],
        "mode": usage["mode"],
        "turns": len(turns),
        "failed_requests": usage["failed_requests"],
        "parse_rate": usage["parse_rate"],
        "action_share": {name: counts[name] / len(turns) for name in sorted(counts)},
        "mean_return": float(np.mean(returns)),
        "episode_return": returns,
        "mean_episode_length": statistics.fmean(summary["episodes"]["episode_length"]),
        "prompt_tokens_per_turn": usage["prompt_tokens"] / len(turns),
        "completion_tokens_per_turn": usage["completion_tokens"] / len(turns),
        "wall_s": round(usage["wall_s"], 2),
    }


def _turns(run: Path) -> list[dict[str, Any]]:
    return [r for r in read_records(run / "transcript.jsonl") if r["type"] == "turn"]


def _agreement(first: Path, second: Path) -> dict[str, Any]:
    """Actions of the two stacks on turns whose prompts are the same text."""

    def where(turn: dict[str, Any]) -> tuple[int, int, int]:
        return turn["episode"], turn["step"], turn["seat"]

    theirs = {where(turn): turn for turn in _turns(second)}
    same_prompt = [
        (turn, theirs[where(turn)])
        for turn in _turns(first)
        if where(turn) in theirs and theirs[where(turn)]["prompt"] == turn["prompt"]
    ]
    agreed = [a["action"] == b["action"] for a, b in same_prompt]
    replies = [a["reply"] == b["reply"] for a, b in same_prompt]
    first_step = [a["action"] == b["action"] for a, b in same_prompt if a["step"] == 0]
    return {
        "same_prompt_turns": len(same_prompt),
        "same_action_share": float(np.mean(agreed)) if agreed else None,
        "same_reply_share": float(np.mean(replies)) if replies else None,
        "first_step_same_action_share": float(np.mean(first_step)) if first_step else None,
    }


def run(config: BackendAgreementConfig) -> dict[str, Any]:
    """Play every mode on both stacks; write the JSON."""
    out_dir, provenance = config.begin("llm_backend_agreement")
    with tempfile.TemporaryDirectory() as scratch:  # the runs' transcripts are not results
        runs = Path(scratch)
        transformers = _transformers(config)
        log = runs / "llama-server.log"
        with serve(cached_file(config.model), config.model, log, threads=config.threads) as url:
            llama_cpp = _llama_cpp(config, url)
            for mode in MODES:
                for stack, backend in zip(STACKS, (transformers, llama_cpp), strict=True):
                    _play(config, backend, runs / f"{stack}-{mode}", mode == "constrained")
                    print(f"{stack} {mode}: played", flush=True)
        payload = {
            "config": {**dataclasses.asdict(config), "out": str(out_dir)},
            "stacks": {
                f"{stack}/{mode}": _stack_summary(runs / f"{stack}-{mode}")
                for mode in MODES
                for stack in STACKS
            },
            "agreement": {
                mode: _agreement(runs / f"transformers-{mode}", runs / f"llama.cpp-{mode}")
                for mode in MODES
            },
        }
    path = write_results("llm_backend_agreement", payload, out_dir, provenance)
    for name, stack in payload["stacks"].items():
        print(f"{name}: parse {stack['parse_rate']:.2f}, return {stack['mean_return']:.2f}")
    print(f"wrote {path}")
    return payload


if __name__ == "__main__":
    run_script(BackendAgreementConfig, run)
