"""The five scripted dining policies under both rewards: the anchors of every dining curve.

Plays each policy on the fixed seed protocol under `shaped` and `paper` (the same
episodes for both) and writes returns, meals, deadlock rate and fairness with 95%
intervals (Student-t; Wilson for the deadlock rate) to
`benchmarks/results/dining_reference_policies_<platform>.json`.

    python -m benchmarks.dining_reference_policies [--episodes 300] [--num-agents 5]

`alemlite bench policies --env dining` plays them under one reward (any environment's).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

import alemlite
from alemlite.core.errors import require_at_least
from alemlite.stats import summarise
from benchmarks.engine.policies import policy_episodes
from benchmarks.harness import ResultsFolder, format_interval, write_results
from benchmarks.script import run_script

DINING = alemlite.spec("dining")
REWARDS = ("shaped", "paper")


@dataclass(frozen=True)
class DiningPoliciesConfig(ResultsFolder):
    """Evaluate every scripted dining policy under both rewards."""

    episodes: int = 300
    num_agents: int = 5
    seed: int = 0

    def __post_init__(self):
        require_at_least(1, episodes=self.episodes)
        DINING.options(num_agents=self.num_agents)


def run(config: DiningPoliciesConfig) -> dict:
    """Evaluate the policies, print the table and write the JSON; returns the payload."""
    out_dir, provenance = config.begin("dining_reference_policies")
    policies: dict[str, dict] = {}
    for name in sorted(DINING.policies):
        policies[name] = {}
        for reward in REWARDS:
            options = DINING.options(num_agents=config.num_agents, reward=reward)
            episodes = policy_episodes(DINING, options, name, config.episodes, config.seed)
            reported = {
                "episode_return": episodes["episode_return"],
                "meals_total": episodes["meals_total"],
                "deadlock": np.asarray(episodes["deadlock"], bool),
                "fairness": episodes["fairness"],
            }
            policies[name][reward] = summarise(reported)
    payload = {"config": {**asdict(config), "out": str(out_dir)}, "policies": policies}
    path = write_results("dining_reference_policies", payload, out_dir, provenance)
    print(markdown_table(payload))
    print(f"wrote {path}")
    return payload


def markdown_table(results: dict) -> str:
    """Returns under both rewards, meals, deadlock rate and fairness (the `shaped` episodes)."""
    lines = [
        "| policy | shaped return | paper return | meals | deadlock rate | fairness |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    by_shaped_return = sorted(
        results["policies"].items(),
        key=lambda item: -item[1]["shaped"]["episode_return"]["mean"],
    )
    for name, rewards in by_shaped_return:
        shaped, paper = rewards["shaped"], rewards["paper"]
        cells = [
            format_interval(shaped["episode_return"], 3),
            format_interval(paper["episode_return"], 3),
            f"{shaped['meals_total']['mean']:.2f}",
            f"{shaped['deadlock']['mean']:.3f} [{shaped['deadlock']['low']:.3f}, "
            f"{shaped['deadlock']['high']:.3f}]",
            f"{shaped['fairness']['mean']:.3f}",
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    run_script(DiningPoliciesConfig, run)
