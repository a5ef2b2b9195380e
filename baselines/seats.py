"""Seats of a team, from the short specs of `--team`.

A spec names what plays one seat:

- `NAME` or `policy:NAME`: a scripted policy of the environment's spec
  (`alemlite.spec(env.name).policy(NAME, env)`);
- `checkpoint:NAME`: a trained agent, by shipped name or exported `policy/` directory
  (`baselines.load(NAME).state_policy(env)`); `checkpoint:best` is the shipped reference
  of the setting (`baselines.references`), named in its place by `resolve_best`;
- `llm` or `llm:MODEL` (`MODEL@URL`): a language model, which `llm_bridge` seats; here it
  is only recognised, as it is no policy of the compiled step.

One spec serves every seat; otherwise there is one per seat. Policy seats act inside the
compiled step as `policy(key, state, params)`, keeping no memory between steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import alemlite
from alemlite.core.environment import Environment
from alemlite.core.errors import ConfigError, require
from alemlite.core.spec import EnvOptions
from alemlite.evaluation import Policy, seat_policies
from baselines.references import BEST, best_checkpoint

KINDS = ("policy", "checkpoint", "llm")
SPEC_FORMS = "NAME or policy:NAME (a scripted policy), checkpoint:NAME (a trained agent), llm"


class Seat(NamedTuple):
    """One parsed seat spec: its kind and the name after the colon ("" for a plain `llm`)."""

    kind: str
    name: str


def parse_seat(spec: str) -> Seat:
    """The seat `spec` names; refuses an unknown kind or a missing name in one line."""
    kind, colon, name = spec.partition(":")
    if not colon:  # a bare name: `llm`, or a scripted policy
        return Seat("llm", "") if spec == "llm" else Seat("policy", _named(spec, spec))
    require(
        kind in KINDS,
        f"--team seat {spec!r} has an unknown kind {kind!r}; a seat is {SPEC_FORMS} or llm:MODEL",
    )
    return Seat(kind, name if kind == "llm" else _named(name, spec))


def _named(name: str, spec: str) -> str:
    require(name != "", f"--team seat {spec!r} names nothing; a seat is {SPEC_FORMS} or llm:MODEL")
    return name


def resolve_best(team: Sequence[str], env_name: str, options: EnvOptions) -> tuple[str, ...]:
    """`team` with each `checkpoint:best` replaced by the shipped reference it stands for
    here, so that a run records the checkpoint it played."""
    if all(parse_seat(spec) != Seat("checkpoint", BEST) for spec in team):
        return tuple(team)
    name = best_checkpoint(env_name, options)
    return tuple(
        f"checkpoint:{name}" if parse_seat(spec) == Seat("checkpoint", BEST) else spec
        for spec in team
    )


def team_seats(team: Sequence[str], num_seats: int) -> tuple[Seat, ...]:
    """One parsed seat per seat of the table: `team` holds one spec for all, or one each."""
    require(
        len(team) in (1, num_seats),
        f"team={' '.join(team)} gives {len(team)} seat specs for {num_seats} seats; "
        f"give 1 (for every seat) or {num_seats}",
    )
    seats = tuple(parse_seat(spec) for spec in team)
    return seats * num_seats if len(seats) == 1 else seats


def seat_policy(env: Environment, seat: Seat) -> Policy:
    """The jittable `policy(key, state, params)` of a scripted or checkpoint seat."""
    if seat.kind == "checkpoint":
        import baselines

        try:
            return baselines.load(seat.name).state_policy(env)
        except ConfigError as error:  # its refusals begin with the name: the spec as typed
            raise ConfigError(f"checkpoint:{error}") from None
    require(
        seat.kind == "policy",
        f"an {seat.kind} seat is no compiled policy; llm_bridge seats language models",
    )
    return alemlite.spec(env.name).policy(seat.name, env)


def team_policy(env: Environment, seats: Sequence[Seat]) -> Policy:
    """One policy for a team of scripted and checkpoint seats; each distinct seat's policy is
    built (and computed each step) once."""
    built: dict[Seat, Policy] = {}
    for seat in seats:
        if seat not in built:
            built[seat] = seat_policy(env, seat)
    return seat_policies([built[seat] for seat in seats])
