"""Reference teams on Craft at each difficulty: the anchors below trained agents.

Plays the uniform-random team and the scripted coordinating team (`team`) on the
fixed seed protocol at easy, medium and hard, and writes their coordination
metrics with 95% intervals to `benchmarks/results/craft_reference_teams.json`.

    python -m benchmarks.craft_reference_teams [--episodes 16] [--max-steps 500]
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import tyro
from tqdm import tqdm

import alemlite
from alemlite.envs.craft.policies import POLICIES
from alemlite.evaluation import evaluate
from alemlite.stats import summarise
from benchmarks.harness import RESULTS_DIR, write_results

REPORTED = (
    "episode_return",
    "normalised_return",
    "team_achievement_percent",
    "coordination_achievement_percent",
    "coordination/task_completions",
    "coordination/lapsed",
    "coordination/failed_solo",
    "coordination/gives",
)


@dataclass(frozen=True)
class CraftTeamsConfig:
    """Evaluate the random and the scripted team at every difficulty preset."""

    teams: tuple[str, ...] = ("random", "team")
    difficulties: tuple[str, ...] = ("easy", "medium", "hard")
    episodes: int = 16
    max_steps: int = 500
    agents: int = 3
    map_size: int = 48
    seed: int = 0
    out_dir: Path = RESULTS_DIR


def run(config: CraftTeamsConfig) -> dict:
    """Evaluate every (team, difficulty) pair and print a markdown table."""
    rows = []
    pairs = [(team, level) for level in config.difficulties for team in config.teams]
    for team, difficulty in tqdm(pairs, desc="craft teams"):
        env = alemlite.make(
            "craft",
            num_agents=config.agents,
            map_size=config.map_size,
            max_steps=config.max_steps,
            difficulty=difficulty,
        )
        episodes = evaluate(
            env, POLICIES[team](env), env.default_params, config.episodes, config.seed
        )
        summary = summarise({name: episodes[name] for name in REPORTED})
        rows.append({"team": team, "difficulty": difficulty, "summary": summary})
    payload = {"config": {**asdict(config), "out_dir": str(config.out_dir)}, "rows": rows}
    path = write_results("craft_reference_teams", payload, config.out_dir)
    print("| team | difficulty | " + " | ".join(REPORTED) + " |")
    print("|" + " --- |" * (len(REPORTED) + 2))
    for row in rows:
        cells = [
            f"{row['summary'][name]['mean']:.2f} [{row['summary'][name]['low']:.2f}, "
            f"{row['summary'][name]['high']:.2f}]"
            for name in REPORTED
        ]
        print(f"| {row['team']} | {row['difficulty']} | " + " | ".join(cells) + " |")
    print(f"wrote {path}")
    return payload


if __name__ == "__main__":
    run(tyro.cli(CraftTeamsConfig))
