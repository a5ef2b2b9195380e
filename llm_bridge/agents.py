"""One agent interface for language models, scripted policies and trained MARL agents.

A team is one agent per seat, so LLM and reference agents can be mixed at one table.
Policy agents (scripted or a MARL checkpoint, `baselines.seats`) act inside the compiled
step on the evaluation protocol's policy key; LLM agents are asked through their backend.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from alemlite.core.environment import Environment
from alemlite.evaluation import Policy
from baselines.seats import Seat, seat_policy, team_seats
from llm_bridge.clients.base import Backend


@dataclass(frozen=True, eq=False)
class LLMAgent:
    backend: Backend
    name: str


@dataclass(frozen=True, eq=False)
class PolicyAgent:
    """A jittable `policy(key, state, params) -> actions (num_agents,)`; its seat's entry counts."""

    policy: Policy
    name: str


Agent = LLMAgent | PolicyAgent


def build_team(
    team: Sequence[str], env: Environment, make_backend: Callable[[str | None], Backend]
) -> tuple[Agent, ...]:
    """Agents per seat from the specs of `--team` (see `baselines.seats`); none: an LLM in
    every seat.

    `llm` is the configured model; `llm:MODEL` another one, which `make_backend` reads
    (e.g. as `MODEL@URL`). One spec is used for every seat; otherwise give one per seat.
    Seats of one spec share one agent, so a policy is computed once per step and a model
    has one backend.
    """
    agents: dict[Seat, Agent] = {}

    def one(seat: Seat) -> Agent:
        if seat not in agents:
            if seat.kind == "llm":
                backend = make_backend(seat.name or None)
                agents[seat] = LLMAgent(backend, backend.name)
            else:
                agents[seat] = PolicyAgent(seat_policy(env, seat), seat.name)
        return agents[seat]

    return tuple(one(seat) for seat in team_seats(tuple(team) or ("llm",), env.num_agents))
