"""The teams of each stratum: the model alone, each MARL checkpoint that fits the stratum,
each scripted team, and mixed teams (model seats beside a checkpoint's); and, where no
checkpoint fits, why not."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

import baselines
from alemlite.core.errors import ConfigError
from alemlite.core.spec import EnvSpec
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
    """The stratum's teams. The MARL reference is the fitting checkpoint trained on the
    stratum's own settings where there is one, else the first that fits (noted as played off
    its training settings); the scripted reference is the spec's default team where it is
    among the scripted ones."""
    plan = StratumPlan(stratum)
    env = env_spec.build(stratum.options)
    plan.teams.append(Team("llm", "", ("llm",)))
    fitting: list[tuple[str, dict]] = []
    for name in config.checkpoints or ():
        policy = baselines.load(name)
        try:
            policy.state_policy(env)
        except ConfigError as error:
            plan.notes.append(f"checkpoint {name} does not play here: {_after_name(error, name)}")
            continue
        here = dataclasses.asdict(stratum.options)
        off = {
            key: (trained, here[key])
            for key, trained in policy.recorded_settings.items()
            if key in here and here[key] != trained
        }
        fitting.append((name, off))
        plan.teams.append(Team("marl", name, (f"checkpoint:{name}",)))
    if fitting:
        name, off = min(fitting, key=lambda entry: len(entry[1]))
        plan.references["marl"] = f"marl:{name}"
        if off:
            played = ", ".join(f"{key}={was} (here {now})" for key, (was, now) in off.items())
            plan.notes.append(f"MARL reference {name} was trained with {played}")
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
            for name, _ in fitting:
                seats = ("llm",) * k + (f"checkpoint:{name}",) * (stratum.team_size - k)
                plan.teams.append(Team("mixed", name, seats))
            plan.references["mixed"] = "mixed:" + plan.references["marl"].split(":", 1)[1]
    return plan


def _after_name(error: ConfigError, name: str) -> str:
    """A checkpoint's refusal without the leading name it repeats."""
    return str(error).removeprefix(f"{name}: ")
