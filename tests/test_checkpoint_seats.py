"""Checkpoint seats in mixed teams: feed-forward ones are seated, the rest refused when built.

A seat acts inside the compiled step as `policy(key, state, params)`, with no memory
carried from one step to the next, so a recurrent (GRU) checkpoint cannot be a seat.
"""

from __future__ import annotations

from pathlib import Path

import jax
import pytest

import alemlite
import baselines
from alemlite.core.errors import ConfigError
from baselines.common.agents import SharedActor
from baselines.common.checkpoints import export_policy
from baselines.common.config import NetworkConfig
from llm_bridge.agents import PolicyAgent, build_team

PHILOSOPHERS = 3


def no_backend(model):
    raise AssertionError("a team of checkpoints needs no language model")


@pytest.fixture(scope="module")
def env():
    return alemlite.make("dining", num_philosophers=PHILOSOPHERS, max_steps=4)


def save_checkpoint(directory: Path, env, recurrent: bool) -> str:
    """Export a freshly initialised actor exactly as the trainer exports `policy/final`."""
    actor = SharedActor(
        NetworkConfig(hidden_size=8, num_layers=1, recurrent=recurrent),
        env.num_agents,
        env.num_actions,
        tuple(env.observation_shape),
    )
    info = {
        "algorithm": "ippo",
        "env": {"name": "dining", "num_philosophers": env.num_agents, "max_steps": 4},
        "seed_index": 0,
    }
    export_policy(directory, actor, actor.init(jax.random.PRNGKey(0)), info)
    return str(directory)


@pytest.fixture(scope="module")
def checkpoints(env, tmp_path_factory):
    root = tmp_path_factory.mktemp("checkpoints")
    return {
        "gru": save_checkpoint(root / "gru", env, recurrent=True),
        "mlp": save_checkpoint(root / "mlp", env, recurrent=False),
    }


def test_a_feed_forward_checkpoint_is_a_seat(env, checkpoints):
    """The control: the checks refuse recurrence, not checkpoints (seats act in test_llm_runner)."""
    spec = f"checkpoint:{checkpoints['mlp']}"
    team = build_team(("resource_ordering", spec, spec), env, no_backend)
    assert isinstance(team[1], PolicyAgent) and team[1] is team[2]
    assert team[1].name == checkpoints["mlp"]


def test_a_recurrent_checkpoint_seat_is_refused_when_the_team_is_built(env, checkpoints):
    specs = ("resource_ordering", f"checkpoint:{checkpoints['gru']}", "resource_ordering")
    with pytest.raises(ConfigError) as refusal:
        build_team(specs, env, no_backend)
    message = str(refusal.value)
    assert message.startswith(f"checkpoint:{checkpoints['gru']}: ")
    assert "recurrent (GRU)" in message and "--network.recurrent off" in message
    assert "\n" not in message


def test_the_recurrent_policy_refuses_the_memoryless_form_itself(env, checkpoints):
    """`alemlite.evaluation.evaluate` takes the same form; the refusal does not wait for a trace."""
    policy = baselines.load(checkpoints["gru"])
    with pytest.raises(ConfigError, match="keeps no memory between steps"):
        policy.state_policy(env)


def test_a_checkpoint_for_another_table_size_is_refused(checkpoints):
    larger = alemlite.make("dining", num_philosophers=PHILOSOPHERS + 2)
    with pytest.raises(ConfigError, match=r"trained for .* = \(3, .* has \(5, ") as refusal:
        build_team((f"checkpoint:{checkpoints['mlp']}",), larger, no_backend)
    assert str(refusal.value).startswith(f"checkpoint:{checkpoints['mlp']}: ")
