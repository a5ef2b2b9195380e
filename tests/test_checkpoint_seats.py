"""Checkpoint seats in mixed teams: feed-forward ones are seated, the rest refused when built.

A seat acts inside the compiled step as `policy(key, state, params)`, with no memory
carried from one step to the next, so a recurrent (GRU) checkpoint cannot be a seat; nor
can one trained on another environment, table or team size, or map. `baselines.load`
refuses damaged policy files and, called directly, observations of another shape, each
in one line that begins with the name it was given.
"""

from __future__ import annotations

import json
import shutil
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
    with pytest.raises(ConfigError) as refusal:
        build_team((f"checkpoint:{checkpoints['mlp']}",), larger, no_backend)
    assert str(refusal.value) == (
        f"checkpoint:{checkpoints['mlp']}: trained with num_agents=3, but this dining "
        "environment has num_agents=5; use a checkpoint trained with num_agents=5"
    )


@pytest.mark.parametrize(
    ("name", "env_name", "settings", "refusal"),
    [
        (
            "ippo-dining-5",
            "dining",
            {"num_philosophers": 7},
            "trained with num_agents=5, but this dining environment has "
            "num_agents=7; use a checkpoint trained with num_agents=7",
        ),
        (
            "ippo-craft-medium",
            "dining",
            {"num_philosophers": 3},
            "trained on craft (num_agents=3, map_size=32, max_steps=500, difficulty='medium', "
            "coordination=True, obs_encoding='dense'), but the environment is dining; use a "
            "checkpoint trained on dining",
        ),
        (
            "ippo-craft-medium",
            "craft",
            {"map_size": 16, "num_agents": 3},
            "trained with map_size=32, but this craft environment has map_size=16; use a "
            "checkpoint trained with map_size=16",
        ),
        (
            "ippo-craft-medium",
            "craft",
            {"map_size": 32, "num_agents": 2},
            "trained with num_agents=3, but this craft environment has num_agents=2; use a "
            "checkpoint trained with num_agents=2",
        ),
    ],
    ids=["dining-5-at-7", "craft-on-dining", "craft-on-a-smaller-map", "craft-with-fewer-agents"],
)
def test_a_shipped_checkpoint_refuses_an_environment_it_was_not_trained_on(
    name, env_name, settings, refusal
):
    """Against its recorded config, in one line naming the checkpoint, not a shape traceback."""
    env = alemlite.make(env_name, **settings)
    with pytest.raises(ConfigError) as seat:
        build_team((f"checkpoint:{name}",), env, no_backend)
    assert str(seat.value) == f"checkpoint:{name}: {refusal}"
    with pytest.raises(ConfigError) as loaded:
        baselines.load(name).state_policy(env)
    assert str(loaded.value) == f"{name}: {refusal}"


def test_a_loaded_policy_refuses_observations_of_another_table_while_tracing():
    """`baselines.load(...)` called directly on a table of 7: its own line, not flax's error."""
    policy = baselines.load("ippo-dining-5")
    env = alemlite.make("dining", num_philosophers=7)
    observation, state = env.reset(jax.random.PRNGKey(0), env.default_params)
    mask = env.action_mask(state, env.default_params)
    for act in (policy, jax.jit(policy)):
        with pytest.raises(ConfigError) as refusal:
            act(jax.random.PRNGKey(1), observation, mask)
        assert str(refusal.value) == (
            "ippo-dining-5: observations (7, 7) and action mask (7, 4) do not fit a policy "
            "trained on dining (num_agents=5, max_steps=30, reward='shaped', "
            "mode='simultaneous', deadlock_mode='terminate') (observations (5, 7), mask (5, 4)); "
            "act on its environment, policy.make_env()"
        )


def damaged_copy(checkpoint: str, tmp_path: Path, edit) -> str:
    directory = tmp_path / "damaged"
    shutil.copytree(checkpoint, directory)
    edit(directory)
    return str(directory)


def rewrite_description(change):
    def edit(directory: Path) -> None:
        path = directory / "policy.json"
        description = json.loads(path.read_text())
        change(description)
        path.write_text(json.dumps(description))

    return edit


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (
            lambda d: (d / "policy.json").write_text('{"network": {"hidden_size": 8'),
            "policy.json is not valid JSON (Expecting ',' delimiter: line 1 column 30 (char 29)); "
            "restore it from the run's policy/ directory or export the policy again",
        ),
        (
            rewrite_description(lambda d: d.pop("num_actions")),
            "policy.json lacks the key 'num_actions'; restore the file",
        ),
        (
            rewrite_description(lambda d: d["env"].pop("name")),
            "policy.json lacks the key 'env.name'; restore the file",
        ),
        (
            rewrite_description(lambda d: d.update(num_agents="three")),
            "policy.json: num_agents='three' must be a int; restore the file",
        ),
        (
            rewrite_description(lambda d: d["network"].update(hidden_size=0)),
            "policy.json: network: hidden_size=0 must be at least 1; restore the file",
        ),
    ],
    ids=["invalid-json", "missing-key", "missing-env-name", "wrong-type", "invalid-network"],
)
def test_a_damaged_policy_file_is_named_with_what_is_wrong(edit, problem, checkpoints, tmp_path):
    directory = damaged_copy(checkpoints["mlp"], tmp_path, edit)
    with pytest.raises(ConfigError) as refusal:
        baselines.load(directory)
    path = Path(directory).absolute() / "policy.json"
    assert str(refusal.value) == f"{directory}: {path}{problem.removeprefix('policy.json')}"


def garble_parameters(directory: Path) -> None:
    """Flip a byte of the stored arrays (one data file of the OCDBT store)."""
    (data_file,) = (directory / "actor_params" / "d").iterdir()
    data = bytearray(data_file.read_bytes())
    data[len(data) // 2] ^= 0xFF
    data_file.write_bytes(bytes(data))


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        (
            rewrite_description(lambda d: d["network"].update(hidden_size=16)),
            "['params']['Dense_0']['kernel'] is saved as float32[8, 4], described as "
            "float32[16, 4]",
        ),
        (garble_parameters, "ValueError: DATA_LOSS: "),
    ],
    ids=["described-wider", "garbled"],
)
def test_parameters_that_do_not_restore_as_described_are_refused(
    edit, problem, checkpoints, tmp_path
):
    """The storage library returns what was saved whatever it is asked for: shapes are compared."""
    directory = damaged_copy(checkpoints["mlp"], tmp_path, edit)
    with pytest.raises(ConfigError) as refusal:
        baselines.load(directory)
    message = str(refusal.value)
    assert message.startswith(
        f"{directory}: the parameters in {Path(directory).absolute() / 'actor_params'} do not "
        f"restore as described by policy.json ({problem}"
    )
    assert message.endswith("); export the policy again from its run") and "\n" not in message


def test_an_unknown_policy_name_lists_the_shipped_ones():
    with pytest.raises(ConfigError) as refusal:
        baselines.load("ippo-dining-50")
    assert str(refusal.value).startswith("ippo-dining-50: no such policy; choose one of (")
    assert "'ippo-dining-5'" in str(refusal.value)


@pytest.mark.parametrize("num_agents, reward", [(3, "paper"), (5, "shaped"), (15, "shaped")])
def test_checkpoint_best_seats_the_shipped_reference_of_the_setting(num_agents, reward):
    """At N = 5 `ippo-dining-5` plays with no option off too; the reference with a card
    (chosen on validation among the algorithms) is the one seated, and the run records it."""
    from alemlite_app.evaluate import EvalConfig

    options = alemlite.spec("dining").options(num_agents=num_agents, reward=reward)
    config = EvalConfig(env="dining", options=options, team=("checkpoint:best", "backoff"))
    assert config.team == (f"checkpoint:dining-{num_agents}-{reward}", "backoff")


def test_checkpoint_best_where_nothing_shipped_plays_is_one_line():
    from alemlite_app.evaluate import EvalConfig

    options = alemlite.spec("dining").options(num_agents=7)
    with pytest.raises(ConfigError, match=r"^checkpoint:best: no shipped checkpoint plays dining "):
        EvalConfig(env="dining", options=options, team=("checkpoint:best",))


def test_a_checkpoint_trained_on_from_another_is_the_reference_before_it(checkpoints, tmp_path):
    """Equally close and both with cards, the one that names the other as its `init_actor`
    (a fine-tuned clone) is chosen, whichever comes first by name."""
    from baselines.references import Fit, closest

    for start, tuned in (("a", "b"), ("b", "a")):
        folder = tmp_path / start
        for name in (start, tuned):
            shutil.copytree(checkpoints["mlp"], folder / name)
            (folder / name / "CARD.md").write_text("card\n")
        start_path = str(folder / start)
        rewrite_description(lambda d, path=start_path: d.update(init_actor=path))(folder / tuned)
        fits = [Fit(str(folder / name), {}) for name in ("a", "b")]
        assert closest(fits).name == str(folder / tuned)


def test_the_gap_reference_is_the_one_checkpoint_best_seats():
    from baselines.references import best_checkpoint
    from llm_bridge.gap.config import GapConfig
    from llm_bridge.gap.plan import plan_stratum

    config = GapConfig(env="dining", team_sizes=(5, 10), scripted=("backoff",))
    for stratum in config.strata():
        plan = plan_stratum(alemlite.spec("dining"), stratum, config)
        expected = best_checkpoint("dining", stratum.options)
        assert plan.references["marl"] == f"marl:{expected}"
        assert expected == f"dining-{stratum.team_size}-shaped"
