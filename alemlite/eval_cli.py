"""`alemlite eval ...`: evaluate a policy on the fixed seed protocol and report with CIs."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import alemlite
from alemlite.core.errors import named_as, require
from alemlite.envs.craft import parse_difficulty
from alemlite.envs.craft.config import CraftConfig
from alemlite.envs.dining.config import DiningConfig
from alemlite.evaluation import evaluate
from alemlite.report import format_table, report_path, write_report


@dataclass(frozen=True)
class DiningEvalConfig:
    """Evaluate a reference policy on the dining table."""

    policy: str = "resource_ordering"
    """uniform_random, all_wait, greedy_left, resource_ordering or backoff"""
    episodes: int = 500
    philosophers: int = 5
    max_steps: int = 30
    mode: Literal["simultaneous", "sequential"] = "simultaneous"
    reward: Literal["shaped", "paper"] = "shaped"
    deadlock_mode: Literal["terminate", "release"] = "terminate"
    seed: int = 0
    """base seed: episode i uses seed + i"""
    out: Path = Path("runs/eval")
    """Folder of the report, named by its settings and a fingerprint of all of them."""

    def __post_init__(self):
        from alemlite.envs.dining.policies import DINING_POLICIES

        require(
            self.policy in DINING_POLICIES,
            f"unknown policy {self.policy!r}; choose one of: {', '.join(sorted(DINING_POLICIES))}",
        )
        require(self.episodes >= 1, f"episodes={self.episodes} must be at least 1")
        with named_as(num_philosophers="philosophers"):
            DiningConfig(
                num_philosophers=self.philosophers,
                max_steps=self.max_steps,
                mode=self.mode,
                reward=self.reward,
                deadlock_mode=self.deadlock_mode,
            )


def eval_dining(config: DiningEvalConfig) -> dict:
    """Evaluate a dining policy and print its metrics with 95% confidence intervals."""
    from alemlite.envs.dining.policies import DINING_POLICIES

    env = alemlite.make(
        "dining",
        num_philosophers=config.philosophers,
        max_steps=config.max_steps,
        mode=config.mode,
        reward=config.reward,
        deadlock_mode=config.deadlock_mode,
    )
    episodes = evaluate(
        env, DINING_POLICIES[config.policy], env.default_params, config.episodes, config.seed
    )
    label = f"dining_{config.philosophers}_{config.policy}_{config.reward}"
    settings = {"env": "dining", **dataclasses.asdict(config)}
    path = report_path(config.out, label, settings)
    summary = write_report(path, settings, episodes)
    title = f"dining N={config.philosophers}, policy={config.policy}, reward={config.reward}"
    print(format_table(summary, title))
    print(f"\nwrote {path}")
    return summary


@dataclass(frozen=True)
class CraftEvalConfig:
    """Evaluate a reference team on the Craft world."""

    policy: Literal["random", "noop", "scripted", "team"] = "scripted"
    episodes: int = 32
    agents: int = 3
    map_size: int = 48
    max_steps: int = 10_000
    difficulty: str = "medium"
    """easy, medium, hard, sampled, or a number in [0, 1]"""
    coordination: bool = True
    """False: the plain multi-agent Crafter world"""
    seed: int = 0
    """base seed: episode i uses seed + i"""
    out: Path = Path("runs/eval")
    """Folder of the report, named by its settings and a fingerprint of all of them."""

    def __post_init__(self):
        require(self.episodes >= 1, f"episodes={self.episodes} must be at least 1")
        with named_as(num_agents="agents"):
            CraftConfig(
                num_agents=self.agents,
                map_size=self.map_size,
                max_steps=self.max_steps,
                difficulty=parse_difficulty(self.difficulty),
                coordination=self.coordination,
            )


def eval_craft(config: CraftEvalConfig) -> dict:
    """Evaluate a Craft team and print its achievement metrics with 95% confidence intervals."""
    from alemlite.envs.craft.policies import POLICIES

    difficulty = parse_difficulty(config.difficulty)
    env = alemlite.make(
        "craft",
        num_agents=config.agents,
        map_size=config.map_size,
        max_steps=config.max_steps,
        difficulty=difficulty,
        coordination=config.coordination,
    )
    policy = POLICIES[config.policy](env)
    episodes = evaluate(env, policy, env.default_params, config.episodes, config.seed)
    label = f"craft_{config.agents}_{config.map_size}_{config.difficulty}_{config.policy}"
    settings = {"env": "craft", **dataclasses.asdict(config)}
    path = report_path(config.out, label, settings)
    summary = write_report(path, settings, episodes)
    title = (
        f"craft P={config.agents}, {config.map_size}x{config.map_size}, "
        f"difficulty={config.difficulty}, team={config.policy}"
    )
    print(format_table(summary, title))
    print(f"\nwrote {path}")
    return summary
