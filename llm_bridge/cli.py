"""`alemlite eval-llm` and `alemlite compare`: typed configs, parsed by tyro."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import alemlite
from alemlite.core.errors import named_as, require
from alemlite.core.prompting import PromptOptions
from alemlite.envs.craft import parse_difficulty
from alemlite.envs.craft.config import CraftConfig
from alemlite.envs.dining.config import DiningConfig
from llm_bridge.agents import build_team
from llm_bridge.clients.base import Backend
from llm_bridge.clients.openai_backend import OpenAIBackend, OpenAIConfig
from llm_bridge.compare import CompareConfig, compare_command
from llm_bridge.runner import InvalidRun, RunConfig, run_evaluation

# Named ablations: each is one change to the prompt switches; "variant=NAME" also works.
ABLATIONS: dict[str, dict[str, Any]] = {
    "base": {},
    "no-history": {"history": 0},
    "no-comm": {"communication": False},
    "cot": {"chain_of_thought": True},
    "scratchpad": {"scratchpad": True},
    "no-feedback": {"parse_feedback": False},
}
DEFAULT_VARIANT = {"dining": "default", "craft": "specific"}
DEFAULT_HISTORY = {"dining": 5, "craft": 8}


@dataclass(frozen=True)
class EvalLLMConfig:
    """Evaluate a language model (or a mixed team) zero-shot, on the fixed seed protocol."""

    env: Literal["dining", "craft"] = "dining"
    backend: Literal["openai", "hf"] = "openai"
    """openai: any OpenAI-compatible server; hf: a local transformers model (--model is its path)"""
    base_url: tuple[str, ...] = ("http://127.0.0.1:8000/v1",)
    """one or more OpenAI-compatible endpoints (ending in /v1); requests are load-balanced"""
    model: str = "Qwen/Qwen2.5-7B-Instruct"
    agents: tuple[str, ...] = ()
    """per seat (or one for all): llm, llm:MODEL, llm:MODEL@URL, policy:NAME (or NAME),
    checkpoint:NAME"""
    ablation: tuple[str, ...] = ()
    """sweep, one run per name, each in out/NAME: base, no-history, no-comm, cot, scratchpad,
    no-feedback, variant=NAME"""
    variant: str | None = None
    """system prompt variant (dining: default, minimal, resource_ordering, symmetry_breaking,
    theory_of_mind; craft: general, specific, collaborative)"""
    history: int | None = None
    """observation/action pairs remembered per agent (default 5 dining, 8 craft)"""
    chain_of_thought: bool = False
    communication: bool = True
    scratchpad: bool = False
    parse_feedback: bool = True
    episodes: int = 20
    seed: int = 0
    """base seed: episode i uses seed + i, the same protocol as `alemlite eval`"""
    max_steps: int = 30
    philosophers: int = 5
    mode: Literal["simultaneous", "sequential"] = "simultaneous"
    reward: Literal["shaped", "paper"] = "shaped"
    deadlock_mode: Literal["terminate", "release"] = "terminate"
    num_agents: int = 3
    """craft only: team size"""
    map_size: int = 48
    """craft only"""
    difficulty: str = "medium"
    """craft only: easy, medium, hard, sampled, or an alpha in [0, 1]"""
    coordination: bool = True
    """craft only: --no-coordination plays plain multi-agent Crafter (no roles, tasks, elites,
    trading, signals or construction; the prompts drop those lines)"""
    hf_batch_size: int = 16
    """hf only: requests generated together"""
    hf_device: str = "cpu"
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = 0.0
    max_tokens: int = 256
    model_seed: int | None = None
    """sampling seed sent to the server with every request (the transformers backend seeds
    each generated batch with it)"""
    concurrency: int = 64
    timeout_s: float = 120.0
    max_retries: int = 6
    """retries of a request after a rate limit, 5xx, timeout or dropped connection"""
    max_failed_fraction: float = 0.01
    """the most LLM turns (as a share) that may still fail after retries in a valid run; past
    it the run is marked not valid and the command fails"""
    input_price_per_mtok: float = 0.0
    output_price_per_mtok: float = 0.0
    out: Path = Path("runs/llm")
    resume: bool = True
    progress: bool = True

    def __post_init__(self) -> None:
        # Every number is checked here, before anything is built or asked.
        require(bool(self.base_url), "base_url=() is empty; pass at least one endpoint")
        require(self.episodes >= 1, f"episodes={self.episodes} must be at least 1")
        require(self.max_steps >= 1, f"max_steps={self.max_steps} must be at least 1")
        require(
            self.history is None or self.history >= 0,
            f"history={self.history} must be 0 or more",
        )
        require(self.max_tokens >= 1, f"max_tokens={self.max_tokens} must be at least 1")
        require(
            math.isfinite(self.temperature) and self.temperature >= 0,
            f"temperature={self.temperature} must be a finite number >= 0",
        )
        require(self.concurrency >= 1, f"concurrency={self.concurrency} must be at least 1")
        require(
            math.isfinite(self.timeout_s) and self.timeout_s > 0,
            f"timeout_s={self.timeout_s} must be a positive number of seconds",
        )
        require(self.max_retries >= 0, f"max_retries={self.max_retries} must be 0 or more")
        require(
            0.0 <= self.max_failed_fraction <= 1.0,
            f"max_failed_fraction={self.max_failed_fraction} must lie in [0, 1] "
            "(0: any failed turn makes the run not valid)",
        )
        for name in ("input_price_per_mtok", "output_price_per_mtok"):
            value = getattr(self, name)
            require(math.isfinite(value) and value >= 0, f"{name}={value} must be a number >= 0")
        require(self.hf_batch_size >= 1, f"hf_batch_size={self.hf_batch_size} must be at least 1")
        for ablation in self.ablation:
            require(
                ablation in ABLATIONS or ablation.startswith("variant="),
                f"unknown ablation {ablation!r}; choose from: {', '.join(ABLATIONS)}, variant=NAME",
            )
        # The environments' own checks, under this command's names; the other environment's
        # options are checked alone, so that no bad number passes unseen.
        dining_run = {
            "max_steps": self.max_steps,
            "mode": self.mode,
            "reward": self.reward,
            "deadlock_mode": self.deadlock_mode,
        }
        with named_as(num_philosophers="philosophers"):
            DiningConfig(
                num_philosophers=self.philosophers, **(dining_run if self.env == "dining" else {})
            )
        craft_run = {
            "max_steps": self.max_steps,
            "difficulty": parse_difficulty(self.difficulty),
            "coordination": self.coordination,
        }
        CraftConfig(
            num_agents=self.num_agents,
            map_size=self.map_size,
            **(craft_run if self.env == "craft" else {}),
        )


def build_env(config: EvalLLMConfig):
    """The environment and its serialiser for `config.env`."""
    if config.env == "dining":
        from alemlite.envs.dining.prompting import DiningRenderer

        env = alemlite.make(
            "dining",
            num_philosophers=config.philosophers,
            max_steps=config.max_steps,
            mode=config.mode,
            reward=config.reward,
            deadlock_mode=config.deadlock_mode,
        )
        return env, DiningRenderer.for_env(env)
    from alemlite.envs.craft.prompting import CraftRenderer

    env = alemlite.make(
        "craft",
        num_agents=config.num_agents,
        map_size=config.map_size,
        max_steps=config.max_steps,
        difficulty=parse_difficulty(config.difficulty),
        coordination=config.coordination,
    )
    return env, CraftRenderer(env)


def prompt_options(config: EvalLLMConfig, ablation: str) -> PromptOptions:
    options = PromptOptions(
        variant=config.variant or DEFAULT_VARIANT[config.env],
        history=DEFAULT_HISTORY[config.env] if config.history is None else config.history,
        chain_of_thought=config.chain_of_thought,
        communication=config.communication,
        scratchpad=config.scratchpad,
        parse_feedback=config.parse_feedback,
    )
    if ablation.startswith("variant="):
        return dataclasses.replace(options, variant=ablation.removeprefix("variant="))
    require(
        ablation in ABLATIONS,
        f"unknown ablation {ablation!r}; choose from: {', '.join(ABLATIONS)}, variant=NAME",
    )
    return dataclasses.replace(options, **ABLATIONS[ablation])


def eval_llm(config: EvalLLMConfig) -> dict[str, dict]:
    """Evaluate a language model as agents; with --ablation, one run per named ablation."""
    env, renderer = build_env(config)

    def make_backend(spec: str | None) -> Backend:
        # "MODEL" or "MODEL@URL": another model, on the configured servers or its own one.
        model, _, url = (spec or config.model).partition("@")
        if config.backend == "hf":
            from llm_bridge.clients.hf_backend import HFBackend, HFConfig

            return HFBackend(
                HFConfig(
                    model=model,
                    max_new_tokens=config.max_tokens,
                    temperature=config.temperature,
                    batch_size=config.hf_batch_size,
                    device=config.hf_device,
                    seed=config.model_seed,
                )
            )
        return OpenAIBackend(
            OpenAIConfig(
                model=model,
                base_urls=(url,) if url else config.base_url,
                api_key_env=config.api_key_env,
                temperature=config.temperature,
                max_tokens=config.max_tokens,
                seed=config.model_seed,
                concurrency=config.concurrency,
                timeout_s=config.timeout_s,
                max_retries=config.max_retries,
            )
        )

    sweep = config.ablation or ("base",)
    reports = {}
    for ablation in sweep:
        options = prompt_options(config, ablation)
        team = build_team(config.agents, env, make_backend)
        run_config = RunConfig(
            episodes=config.episodes,
            seed=config.seed,
            out=config.out / ablation if config.ablation else config.out,
            resume=config.resume,
            progress=config.progress,
            input_price_per_mtok=config.input_price_per_mtok,
            output_price_per_mtok=config.output_price_per_mtok,
            max_failed_fraction=config.max_failed_fraction,
        )
        env_options = (
            ("philosophers", "mode", "reward", "deadlock_mode")
            if config.env == "dining"
            else ("num_agents", "map_size", "difficulty", "coordination")
        )
        describe = {
            **{name: getattr(config, name) for name in env_options},
            "max_steps": config.max_steps,
            "model": config.model,
            "temperature": config.temperature,
            "max_tokens": config.max_tokens,
            "model_seed": config.model_seed,
            "ablation": ablation,
        }
        try:
            report = run_evaluation(env, renderer, team, options, run_config, describe=describe)
        except InvalidRun as error:
            print(error.report["table"])  # what was counted; the command then fails in one line
            raise
        print(report["table"])
        print(f"\nwrote {run_config.out / 'summary.json'}\n")
        reports[ablation] = report
    if len(reports) > 1:
        print(format_sweep(reports))
    return reports


def format_sweep(reports: dict[str, dict]) -> str:
    """Metric means side by side, one column per ablation."""
    names = list(reports)
    metrics = list(next(iter(reports.values()))["summary"])
    rows = [("metric", *names)]
    rows += [
        (metric, *(f"{reports[name]['summary'][metric]['mean']:.3f}" for name in names))
        for metric in metrics
    ]
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def compare(config: CompareConfig) -> dict[str, dict[str, float]]:
    """Compare two result files: Welch's t-test, Hedges' g, bootstrap CIs, Mann-Whitney U,
    interquartile means and the probability of improvement."""
    return compare_command(config)
