"""Teams from short per-seat specs: LLMs, reference policies and checkpoints mixed."""

from __future__ import annotations

import pytest

import alemlite
from alemlite.core.errors import ConfigError
from alemlite.envs.dining.policies import DINING_POLICIES
from llm_bridge.agents import LLMAgent, PolicyAgent, build_team


class NamedBackend:
    def __init__(self, name):
        self.name = name


@pytest.fixture(scope="module")
def env():
    return alemlite.make("dining", num_philosophers=3)


def make_backend(model):
    return NamedBackend(model or "default-model")


def test_one_spec_fills_every_seat(env):
    team = build_team((), env, make_backend)
    assert len(team) == 3 and all(isinstance(agent, LLMAgent) for agent in team)
    assert len({id(agent.backend) for agent in team}) == 1


def test_mixed_and_heterogeneous_team(env):
    team = build_team(("llm", "llm:other-model", "policy:greedy_left"), env, make_backend)
    assert [agent.name for agent in team] == ["default-model", "other-model", "greedy_left"]
    assert isinstance(team[2], PolicyAgent) and team[2].policy is DINING_POLICIES["greedy_left"]
    same = build_team(("resource_ordering", "llm", "resource_ordering"), env, make_backend)
    assert same[0] is same[2]  # one agent per policy: computed once per step


@pytest.mark.parametrize(
    "specs, message",
    [
        (("llm", "llm"), "lists 2 agents for 3 seats"),
        (("telepathy",), "unknown dining policy 'telepathy'"),
        (("checkpoint:no-such-run",), r"checkpoint:no-such-run: no such policy; choose one of"),
    ],
)
def test_bad_specs_name_the_fix(env, specs, message):
    with pytest.raises(ConfigError, match=message):
        build_team(specs, env, make_backend)
