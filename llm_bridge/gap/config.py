"""`alemlite gap`'s options, and the strata (difficulty x team size) they sweep."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import tyro

import alemlite
import baselines
from alemlite.core.errors import ConfigError, require
from alemlite.core.registry import DEFAULT_ENV, resolve_options
from alemlite.core.spec import EnvOptions
from alemlite.evaluation import check_episode_seeds
from baselines.references import shipped_for
from llm_bridge.options import LLMOptions, PromptSwitches

GAP_RUNS = Path("runs/gap")
"""Where the report goes unless `--out` says otherwise (a folder per environment)."""


@dataclass(frozen=True)
class Stratum:
    """One cell of the sweep: a difficulty (None where the environment has none) and a team
    size, and the environment's options there."""

    difficulty: str | None
    team_size: int
    options: EnvOptions

    @property
    def key(self) -> str:
        """`medium-n3`, or `n3` without a difficulty: the stratum's folder and name."""
        size = f"n{self.team_size}"
        return size if self.difficulty is None else f"{self.difficulty}-{size}"

    @property
    def title(self) -> str:
        size = f"team size {self.team_size}"
        return size if self.difficulty is None else f"difficulty {self.difficulty}, {size}"


@dataclass(frozen=True)
class GapConfig:
    """The coordination-gap report: a language model's team, the shipped MARL agents and the
    scripted teams on the same seeds, difficulties and team sizes, and mixed teams; base-task
    and coordination scores, the gaps with stratified bootstrap intervals, parse and cut-off
    rates, tokens and wall time, as JSON, Markdown and plots in --out."""

    env: str = DEFAULT_ENV
    """the environment (alemlite.registered_environments())"""
    options: EnvOptions | None = None
    """the environment's options; `--env NAME --help` lists them"""
    difficulties: tuple[str, ...] = ()
    """difficulties to sweep (values of the environment's --difficulty); default: --difficulty"""
    team_sizes: tuple[int, ...] = ()
    """team sizes to sweep (values of --num-agents); default: --num-agents"""
    episodes: int = 32
    """episodes per team and stratum"""
    seed: int = 0
    """base seed: episode i uses seed + i, for every team"""
    checkpoints: tuple[str, ...] | None = None
    """MARL reference agents (shipped names or exported policy folders); each plays the strata
    it fits; default: every shipped checkpoint trained on this environment"""
    scripted: tuple[str, ...] | None = None
    """scripted reference teams; default: the environment's reference policies"""
    mixed_llm_seats: int = 1
    """model seats in each mixed team (the first K; a MARL checkpoint plays the others); 0: no
    mixed teams"""
    out: Path | None = None
    """the report's folder (gap.json, gap.md, figures/, and each team's run under runs/);
    default: runs/gap/ENV"""
    llm: Annotated[LLMOptions, tyro.conf.OmitArgPrefixes] = field(default_factory=LLMOptions)
    """how the model is asked"""
    prompt: Annotated[PromptSwitches, tyro.conf.OmitArgPrefixes] = field(
        default_factory=PromptSwitches
    )
    """what the model is shown"""
    publish: bool = False
    """write into benchmarks/results/ or docs/ (from a clean tree: the JSON names the commit)"""
    allow_dirty: bool = False
    """publish from a tree with uncommitted changes (the JSON says so)"""

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", resolve_options(self.env, self.options))
        check_episode_seeds(self.seed, self.episodes)
        require(
            self.mixed_llm_seats >= 0,
            f"mixed_llm_seats={self.mixed_llm_seats} must be 0 (no mixed teams) or more",
        )
        require(
            not self.prompt.ablation,
            f"ablation={' '.join(self.prompt.ablation)} sweeps prompts, one run each; the gap "
            "report plays one prompt: run it once per prompt setting instead",
        )
        fields = {option.name for option in dataclasses.fields(self.options)}
        require(
            not self.difficulties or "difficulty" in fields,
            f"difficulties={' '.join(self.difficulties)}: env={self.env} has no difficulty "
            "option; drop --difficulties",
        )
        for name, values in (("difficulties", self.difficulties), ("team_sizes", self.team_sizes)):
            require(
                len(set(values)) == len(values),
                f"{name}={' '.join(map(str, values))} must name each value once",
            )
        for size in self.team_sizes:
            try:
                dataclasses.replace(self.options, num_agents=size)
            except ConfigError as error:
                reason = str(error).splitlines()[0]
                raise ConfigError(
                    f"team_sizes={size} is not a team size env={self.env} takes ({reason})"
                ) from None
        self.strata()  # every stratum's options are checked now, before anything runs
        self.scripted_teams()
        if self.checkpoints is None:
            object.__setattr__(self, "checkpoints", shipped_for(self.env))
        for name in self.checkpoints:
            baselines.load(name)

    def strata(self) -> list[Stratum]:
        """Every difficulty x team size, difficulties first, each with its options."""
        options = self.options
        has_difficulty = "difficulty" in {f.name for f in dataclasses.fields(options)}
        default = getattr(options, "difficulty", None) if has_difficulty else None
        difficulties = self.difficulties or (default,)
        sizes = self.team_sizes or (options.num_agents,)
        strata = []
        for difficulty in difficulties:
            for size in sizes:
                changes = {"num_agents": size}
                if difficulty is not None:
                    changes["difficulty"] = difficulty
                strata.append(Stratum(difficulty, size, dataclasses.replace(options, **changes)))
        return strata

    def scripted_teams(self) -> tuple[str, ...]:
        env_spec = alemlite.spec(self.env)
        names = env_spec.reference_policies if self.scripted is None else self.scripted
        for name in names:
            require(
                name in env_spec.policies,
                f"scripted={' '.join(names)}: unknown {self.env} policy {name!r}; choose from "
                f"{', '.join(sorted(env_spec.policies))}",
            )
        return tuple(names)

    @property
    def out_dir(self) -> Path:
        return GAP_RUNS / self.env if self.out is None else self.out
