"""The Craft reference of one difficulty (`benchmarks.references`): imitation of the scripted
coordinating team (`dagger`), on 3 agents, a 32 x 32 map and 500-step episodes, the best
checkpoint on validation shipped as `baselines/pretrained/craft-{DIFFICULTY}`
(`baselines.load("craft-medium")`) with its card, the results in
`craft_reference_{DIFFICULTY}.json`.

    python -m benchmarks.craft_references --difficulty medium

IPPO and MAPPO from the reward alone (`--algorithms dagger ippo mappo` adds them to the
choice) learn the solo part of Craft and almost never complete a coordination task at the
budgets this CPU allows (`benchmarks.marl_craft`), so the default is imitation of the team,
which reads the whole state; the learner sees only its own observation. The recipe:
behaviour cloning (the team plays every table throughout), whose fresh stream of episodes
trains a wide network (512 units, lr 1e-3 annealed, 64 x 64 steps per update) for many
updates without overfitting. Diagnostic runs (64 held-out episodes, run directories kept
outside the repository, not published) chose it: DAgger from the start completed almost no
tasks, a constant half teacher share 0.20 tasks an episode, dense observations 0.33,
behaviour cloning 1.03 at 600 updates at easy. Cloning for 600 updates and then DAgger over
200 (`imitation.cloning_updates`, this script at commit 72234d2) raised the validation
return but lost the tasks: 0.05 and 0.02 an episode on the 128 test episodes at easy and
medium. Cloning for 300 updates and then DAgger by whole episodes, the team playing three in
four (`--imitation.cloning-updates 300 --imitation.final-teacher-share 0.75
--imitation.mix-by episode`, commit 068fd2a, 900 updates), kept more agents alive to the end
(0.33 against 0.13 at easy, 0.18 against 0.11 at medium) and raised the test return at easy
(7.31 against 6.12; 5.72 against 5.77 at medium), but completed 0.41 and 0.17 tasks an
episode against the clones' 0.94 and 0.61.

From the clone, IPPO on the reward (`--label ippo`, shipped as craft-DIFFICULTY-ippo):

    python -m benchmarks.craft_references --difficulty easy --label ippo --algorithms ippo \
        --init-actor craft-easy --num-updates 150 --ppo.learning-rate 1e-4 \
        --ppo.no-anneal-learning-rate --ppo.entropy-coef 0.001 --ppo.max-grad-norm 0.5 \
        --ppo.rewards agent --ppo.event-metric coordination/task_completions \
        --ppo.event-bonus 1   # 10 at medium

each seat learning from its own reward plus a bonus for every coordination task completed
during training (never in validation or test episodes): 1 at easy, 10 at medium, where
bonuses of 1, 3 and 10 completed 0.47, 0.77 and 0.98 tasks an episode on the validation
episodes after 100 updates (return 9.57, 9.63, 9.24). Diagnostic runs of 100 updates (1.23 M
agent steps) chose it, on 64 validation episodes (return / tasks an episode / agents alive at
the end; the clones: 6.43 / 1.02 / 0.15 at easy, 6.26 / 0.69 / 0.18 at medium): at medium,
IPPO at lr 1e-4 reached 9.95 / 0.52 / 0.42, at 3e-4 10.24 / 0.27 / 0.47, with the task bonus
9.57 / 0.47 / 0.25; at easy with the bonus 11.10 / 1.05 / 0.49. The reward teaches survival
and the solo achievements; the tasks hold at easy and fall at medium. Kickstarting (PPO
plus a cross-entropy towards the team on the learner's own states,
`--imitation.kickstart-coef 1` with the bonus; 0.3 with a bonus of 2) lost every task at
medium (6.64 / 0.00 / 0.35 and 7.17 / 0.02 / 0.38), as DAgger did: the team's labels on the
states a learner reaches teach it to rest and drink, not to meet. Other diagnostics: the
clones with greedy actions fall to 2.19 / 0.22 (easy) and 1.80 / 0.28 (medium), stuck in
loops, and sampling at temperature 0.8 or 1.2 changes nothing beyond the noise of 64
episodes; a GRU actor cloned for 150 updates at easy was behind the feed-forward one (its
validation return 3.87 against 4.59 at update 150, imitation loss 1.5-1.7 nats against
1.2-1.4) at three times the cost per update.

No trained team builds a shelter at the whole cost: craft-easy-ippo never presses a build
where one is allowed, since it rarely stands at a site holding wood and stone while a partner
does. With free buildings (`--curriculum.values 0`, diagnostic runs of 80-100 updates from
craft-easy-ippo with a bonus of 30 a shelter, not published) it learns to build together, but
mostly forges; `--curriculum.values 0 1 3 --curriculum.patience 2 --curriculum.min-improvement
0.5 --curriculum.mix 0.25` (450 updates, lr 3e-4, entropy 0.01, run directories outside the
repository) built 0.05-0.13 shelters an episode late in training, where a quarter of the
episodes replay cheaper costs, and none on the 128 test episodes at the whole cost; its
return and tasks there rose all the same (14.20 [13.65, 14.75] and 1.97 an episode, against
craft-easy-ippo's 11.39 and 1.20). The same run is shipped as craft-DIFFICULTY-curriculum
from the last reference of each difficulty:

    python -m benchmarks.craft_references --difficulty easy --label curriculum \
        --algorithms ippo --init-actor craft-easy-ippo --num-updates 450 \
        --ppo.learning-rate 3e-4 --ppo.no-anneal-learning-rate --ppo.entropy-coef 0.01 \
        --ppo.max-grad-norm 0.5 --ppo.rewards agent --ppo.event-metric construction/shelters \
        --ppo.event-bonus 30 --curriculum.values 0 1 3 --curriculum.patience 2 \
        --curriculum.min-improvement 0.5 --curriculum.mix 0.25  # medium: craft-medium-ippo
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

import alemlite
from alemlite.core.spec import EnvOptions
from baselines.common.config import ImitationConfig, NetworkConfig, PPOConfig
from benchmarks import references
from benchmarks.script import run_script


@dataclass(frozen=True)
class CraftReferencesConfig(references.ReferenceConfig):
    """Train on one Craft difficulty (behaviour cloning of the scripted team by default); ship
    the best checkpoint on validation episodes."""

    env_name: ClassVar[str] = "craft"
    difficulty: Literal["easy", "medium", "hard"] = "medium"
    map_size: int = 32
    num_agents: int = 3
    max_steps: int = 500
    obs_encoding: Literal["dense", "symbolic"] = "symbolic"
    """what each agent observes (the symbolic ids are embedded; imitation learns faster from
    them than from the dense one-hot window at the same budget)"""
    algorithms: tuple[str, ...] = ("dagger",)
    num_updates: int = 900
    num_seeds: int = 1
    num_envs: int = 64
    num_steps: int = 64
    test_episodes: int = 128
    eval_episodes: int = 32
    network: NetworkConfig = field(
        default_factory=lambda: NetworkConfig(hidden_size=512, embedding_size=16)
    )
    ppo: PPOConfig = field(
        default_factory=lambda: PPOConfig(
            learning_rate=1e-3,
            anneal_learning_rate=True,
            max_grad_norm=5.0,
            num_epochs=2,
            num_minibatches=8,
        )
    )
    imitation: ImitationConfig = field(
        default_factory=lambda: ImitationConfig(
            teacher="team", mixing_updates=0, final_teacher_share=1.0
        )
    )
    label: str = ""
    """Names a variant: shipped as craft-DIFFICULTY-LABEL, results in
    craft_reference_DIFFICULTY_LABEL.json (e.g. `--label ippo` for IPPO from the clone)."""
    runs_dir: Path = Path("runs/craft_references")
    """Run directories (checkpoints inside: an interrupted run resumes with --reuse-runs)."""

    def options(self) -> EnvOptions:
        return alemlite.spec("craft").options(
            difficulty=self.difficulty,
            map_size=self.map_size,
            num_agents=self.num_agents,
            max_steps=self.max_steps,
            obs_encoding=self.obs_encoding,
        )

    @property
    def shipped_name(self) -> str:
        return f"craft-{self.difficulty}" + (f"-{self.label}" if self.label else "")

    @property
    def results_name(self) -> str:
        suffix = f"_{self.label}" if self.label else ""
        return f"craft_reference_{self.difficulty}{suffix}.json"

    @classmethod
    def trained_on(cls, config: dict[str, Any]) -> str:
        return (
            f"Craft {config['difficulty']}, {config['num_agents']} agents, "
            f"{config['map_size']} x {config['map_size']}, {config['max_steps']}-step episodes, "
            f"{config['obs_encoding']} observations"
        )


def card(name: str, results: dict, results_file: str) -> str:
    """The card of a shipped Craft reference, from its results file."""
    trained_on = CraftReferencesConfig.trained_on(results["config"])
    return references.card(name, results, results_file, trained_on)


if __name__ == "__main__":
    run_script(CraftReferencesConfig, references.run)
