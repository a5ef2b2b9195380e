"""One agent interface for language models, scripted policies and trained MARL agents.

A team is one agent per seat, so LLM and reference agents can be mixed at one table.
Policy agents (scripted or a MARL checkpoint) act inside the compiled step on the
evaluation protocol's policy key; LLM agents are asked through their backend.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from alemlite.core.environment import Environment
from alemlite.core.errors import ConfigError, require
from alemlite.evaluation import Policy
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


def scripted_agent(env_name: str, policy_name: str) -> PolicyAgent:
    """A reference policy of the environment, by name (e.g. dining `resource_ordering`)."""
    module_name = f"alemlite.envs.{env_name}.policies"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name != module_name:
            raise
        module = None  # this environment ships no reference policies (yet)
    policies = getattr(module, f"{env_name.upper()}_POLICIES", {})
    require(
        policy_name in policies,
        f"unknown {env_name} policy {policy_name!r}; choose one of: "
        f"{', '.join(sorted(policies)) or '(none yet)'}",
    )
    return PolicyAgent(policies[policy_name], policy_name)


def checkpoint_agent(env: Environment, checkpoint_name: str) -> PolicyAgent:
    """A trained MARL agent by shipped name (e.g. `ippo-dining-5`) or exported directory.

    It acts on the environment's own observation and action mask, as in its training.
    A seat keeps no memory between steps, so a recurrent (GRU) checkpoint is refused here,
    when the team is built, rather than when the step is compiled, as is one trained on
    another environment, table or team size, or map size (`TrainedPolicy.check_fits`).
    """
    import baselines

    try:
        policy = baselines.load(checkpoint_name).state_policy(env)
    except ConfigError as error:  # its refusals begin with the name: the seat's spec as typed
        raise ConfigError(f"checkpoint:{error}") from None
    return PolicyAgent(policy, checkpoint_name)


def build_team(
    specs: Sequence[str], env: Environment, make_backend: Callable[[str | None], Backend]
) -> tuple[Agent, ...]:
    """Agents per seat from short specs; no specs means an LLM in every seat.

    Specs: `llm` (the configured model), `llm:MODEL` (another model; `make_backend`
    reads it, e.g. as `MODEL@URL`), `policy:NAME` or a bare reference-policy name,
    `checkpoint:NAME`.
    One spec is used for every seat; otherwise give exactly one per seat.
    """
    specs = tuple(specs) or ("llm",)
    num_seats = env.num_agents
    require(
        len(specs) in (1, num_seats),
        f"--agents lists {len(specs)} agents for {num_seats} seats; give 1 or {num_seats}",
    )
    backends: dict[str | None, Backend] = {}
    policies: dict[str, PolicyAgent] = {}

    def one(spec: str) -> Agent:
        kind, _, name = spec.partition(":")
        if kind == "llm":
            model = name or None
            if model not in backends:
                backends[model] = make_backend(model)
            return LLMAgent(backends[model], backends[model].name)
        if spec not in policies:  # one agent object per policy, so it is computed once per step
            if kind == "checkpoint":
                policies[spec] = checkpoint_agent(env, name)
            else:
                policies[spec] = scripted_agent(env.name, name if kind == "policy" else spec)
        return policies[spec]

    seat_specs = specs * num_seats if len(specs) == 1 else specs
    return tuple(one(spec) for spec in seat_specs)
