"""The teams of each stratum: the model alone, each MARL checkpoint that fits the stratum,
each scripted team, and mixed teams (model seats beside a checkpoint's); and, where no
checkpoint fits, why not."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from alemlite.core.errors import ConfigError
from alemlite.core.spec import EnvSpec
from baselines.references import Fit, closest, fit
from llm_bridge.gap.config import GapConfig, Stratum

KINDS = ("llm", "marl", "scripted", "mixed")


@dataclass(frozen=True)
class Team:
    """A team of the report: its kind, the checkpoint or policy it names, its seat specs."""

    kind: str
    name: str
    seats: tuple[str, ...]

    @property
    def label(self) -> str:
        return self.kind if not self.name else f"{self.kind}:{self.name}"

    @property
    def folder(self) -> str:
        return re.sub(r"[^\w.+-]", "-", self.label.replace(":", "-"))

    @property
    def has_llm(self) -> bool:
        return self.kind in ("llm", "mixed")


@dataclass
class StratumPlan:
    """What a stratum plays, which team is its reference of each kind, and notes for readers."""

    stratum: Stratum
    teams: list[Team] = field(default_factory=list)
    references: dict[str, str | None] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def plan_stratum(env_spec: EnvSpec, stratum: Stratum, config: GapConfig) -> StratumPlan:
    """The stratum's teams. The MARL reference is the closest checkpoint that plays the
    stratum (`baselines.references`; noted where it was trained on other settings); the
    scripted reference is the spec's default team where it is
    among the scripted ones."""
    plan = StratumPlan(stratum)
    env = env_spec.build(stratum.options)
    plan.teams.append(Team("llm", "", ("llm",)))
    fitting: list[Fit] = []
    for name in config.checkpoints or ():
        try:
            fitting.append(fit(name, env, stratum.options))
        except ConfigError as error:
            plan.notes.append(f"checkpoint {name} does not play here: {_after_name(error, name)}")
            continue
        plan.teams.append(Team("marl", name, (f"checkpoint:{name}",)))
    reference = closest(fitting)
    if reference is not None:
        plan.references["marl"] = f"marl:{reference.name}"
        if reference.off:
            played = ", ".join(
                f"{key}={was} (here {now})" for key, (was, now) in reference.off.items()
            )
            plan.notes.append(f"MARL reference {reference.name} was trained with {played}")
    else:
        plan.references["marl"] = None
        plan.notes.append(
            "no MARL checkpoint plays this stratum, so LLM - MARL and the mixed teams are not "
            "measured here (train one: `alemlite train ippo` with these options)"
        )
    scripted = config.scripted_teams()
    for name in scripted:
        plan.teams.append(Team("scripted", name, (f"policy:{name}",)))
    default = env_spec.default_policy if env_spec.default_policy in scripted else None
    plan.references["scripted"] = f"scripted:{default or scripted[0]}" if scripted else None
    plan.references["mixed"] = None
    k = config.mixed_llm_seats
    if k and fitting:
        if k >= stratum.team_size:
            plan.notes.append(
                f"no mixed team: mixed_llm_seats={k} leaves no seat of {stratum.team_size} "
                "to a checkpoint"
            )
        else:
            for name in (candidate.name for candidate in fitting):
                seats = ("llm",) * k + (f"checkpoint:{name}",) * (stratum.team_size - k)
                plan.teams.append(Team("mixed", name, seats))
            plan.references["mixed"] = "mixed:" + plan.references["marl"].split(":", 1)[1]
    return plan


def _after_name(error: ConfigError, name: str) -> str:
    """A checkpoint's refusal without the leading name it repeats."""
    return str(error).removeprefix(f"{name}: ")
