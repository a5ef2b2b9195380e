"""Teams from short per-seat specs: LLMs, reference policies and checkpoints mixed."""

from __future__ import annotations

import jax
import pytest

import alemlite
from alemlite.core.errors import ConfigError
from alemlite.envs.dining.policies import DINING_POLICIES
from baselines.seats import team_policy, team_seats
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
        (
            ("llm", "llm"),
            "team=llm llm gives 2 seat specs for 3 seats; give 1 (for every seat) or 3",
        ),
        (("telepathy",), "unknown dining policy 'telepathy'; choose one of: all_wait, backoff"),
        (("checkpoint:no-such-run",), "checkpoint:no-such-run: no such policy; choose one of"),
        (("llm", "oracle:best", "llm"), "--team seat 'oracle:best' has an unknown kind 'oracle'"),
        (("policy:",), "--team seat 'policy:' names nothing; a seat is NAME or policy:NAME"),
    ],
)
def test_bad_specs_name_the_fix(env, specs, message):
    with pytest.raises(ConfigError) as refusal:
        build_team(specs, env, make_backend)
    assert str(refusal.value).startswith(message) and "\n" not in str(refusal.value)


def test_a_team_policy_gives_each_seat_its_own_policys_action(env):
    """The compiled path's team: seat i takes the action i of its own seat's policy."""
    seats = team_seats(("greedy_left", "policy:all_wait", "greedy_left"), env.num_agents)
    policy = team_policy(env, seats)
    key, params = jax.random.PRNGKey(0), env.default_params
    _, state = env.reset(key, params)
    left = DINING_POLICIES["greedy_left"](key, state, params).tolist()
    wait = DINING_POLICIES["all_wait"](key, state, params).tolist()
    assert left != wait  # so that the test tells the seats apart
    assert jax.jit(policy)(key, state, params).tolist() == [left[0], wait[1], left[2]]
    assert team_policy(env, team_seats(("greedy_left",), 3)) is DINING_POLICIES["greedy_left"]
