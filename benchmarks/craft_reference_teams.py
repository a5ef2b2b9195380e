"""Reference teams on Craft at each difficulty: the anchors below trained agents.

Plays the uniform-random team and the scripted coordinating team (`team`) on the
fixed seed protocol at easy, medium and hard, and writes their coordination
metrics with 95% intervals (Student-t; Wilson for 0/1 outcomes) to
`benchmarks/results/craft_reference_teams_<platform>.json`: returns, achievement
percentages, tasks completed (syncs and handovers), lapsed handovers and failed solo
attempts, gives, revives, buildings per kind and diamond swords. Difficulty is a
dynamic parameter, so each team is compiled once for every difficulty.

    python -m benchmarks.craft_reference_teams [--episodes 16] [--max-steps 500]
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import jax
from tqdm import tqdm

import alemlite
from alemlite.core.environment import Environment
from alemlite.core.errors import require_at_least
from alemlite.core.spec import EnvOptions
from alemlite.evaluation import Policy, episode_keys, play_episode
from alemlite.stats import summarise
from benchmarks.harness import ResultsFolder, format_interval, write_results
from benchmarks.script import run_script

CRAFT = alemlite.spec("craft")
REPORTED = (
    "episode_return",
    "normalised_return",
    "team_achievement_percent",
    "coordination_achievement_percent",
    "coordination/task_completions",
    "coordination/syncs",
    "coordination/handovers",
    "coordination/lapsed",
    "coordination/failed_solo",
    "coordination/gives",
    "coordination/revives",
    "construction/shelters",
    "construction/forges",
    "construction/beacons",
    "construction/diamond_swords",
)


@dataclass(frozen=True)
class CraftTeamsConfig(ResultsFolder):
    """Evaluate the random and the scripted team at every difficulty preset."""

    teams: tuple[str, ...] = ("random", "team")
    difficulties: tuple[str, ...] = ("easy", "medium", "hard")
    episodes: int = 16
    max_steps: int = 500
    num_agents: int = 3
    map_size: int = 48
    seed: int = 0

    def __post_init__(self):
        require_at_least(1, episodes=self.episodes)
        for difficulty in self.difficulties:
            self.options(difficulty)

    def options(self, difficulty: str) -> EnvOptions:
        return CRAFT.options(
            num_agents=self.num_agents,
            map_size=self.map_size,
            max_steps=self.max_steps,
            difficulty=difficulty,
        )


def run(config: CraftTeamsConfig) -> dict:
    """Evaluate every (team, difficulty) pair, print a markdown table and write the JSON."""
    out_dir, provenance = config.begin("craft_reference_teams")
    started = time.perf_counter()

    def make(difficulty: str):
        return CRAFT.build(config.options(difficulty))

    env = make(config.difficulties[0])
    keys = episode_keys(config.seed, config.episodes)
    rows = []
    for team in tqdm(config.teams, desc="craft teams"):
        play = _episodes(env, CRAFT.policy(team, env))
        for difficulty in config.difficulties:
            episodes = jax.device_get(play(keys, make(difficulty).default_params))
            summary = summarise({name: episodes[name] for name in REPORTED})
            rows.append({"team": team, "difficulty": difficulty, "summary": summary})
    payload = {"config": {**asdict(config), "out": str(out_dir)}, "rows": rows}
    path = write_results("craft_reference_teams", payload, out_dir, provenance)
    print(markdown_table(rows, config.difficulties))
    print(f"wrote {path} in {time.perf_counter() - started:.0f} s")
    return payload


def _episodes(env: Environment, policy: Policy):
    """`play(keys, params)`: the seed protocol of `alemlite.evaluation` with the parameters
    as an argument, so one compiled program serves every difficulty."""
    return jax.jit(jax.vmap(lambda key, params: play_episode(env, policy, params, key), (0, None)))


def markdown_table(rows: list[dict], difficulties: tuple[str, ...]) -> str:
    """One row per (difficulty, team), difficulties in order: each metric's mean and 95%
    interval."""
    lines = [
        "| difficulty | team | " + " | ".join(REPORTED) + " |",
        "|" + " --- |" * (len(REPORTED) + 2),
    ]
    for row in sorted(rows, key=lambda row: difficulties.index(row["difficulty"])):
        cells = [format_interval(row["summary"][name]) for name in REPORTED]
        lines.append(f"| {row['difficulty']} | {row['team']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    run_script(CraftTeamsConfig, run)
