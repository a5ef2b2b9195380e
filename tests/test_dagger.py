"""DAgger: the teacher's share of the tables, its labels and the refusals of its settings.

That it learns (it reproduces resource ordering on dining) is `tests/test_learning.py`.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import alemlite
from alemlite.core.errors import ConfigError
from alemlite.envs.dining.state import WAIT
from baselines.common import rollout as rollouts
from baselines.common.config import ImitationConfig, NetworkConfig, TrainConfig
from baselines.common.trainer import build_algorithm

OPTIONS = alemlite.spec("dining").options(num_agents=5, max_steps=12)
ENV = alemlite.spec("dining").build(OPTIONS)


def dagger(
    mixing_updates: int,
    final_teacher_share: float = 0.0,
    cloning_updates: int = 0,
    mix_by: str = "step",
):
    config = TrainConfig(
        algorithm="dagger",
        options=OPTIONS,
        num_envs=16,
        num_steps=12,
        network=NetworkConfig(hidden_size=16, num_layers=1),
        imitation=ImitationConfig(
            teacher="resource_ordering",
            cloning_updates=cloning_updates,
            mixing_updates=mixing_updates,
            final_teacher_share=final_teacher_share,
            mix_by=mix_by,
        ),
        progress=False,
    )
    return build_algorithm(config, ENV)


@pytest.fixture(scope="module")
def first_update_agreement():
    """The share of steps whose played actions were the teacher's, in the first update,
    with the teacher playing every table (a long mixing) and none (no mixing)."""

    def agreement(mixing_updates: int) -> float:
        algorithm = dagger(mixing_updates)
        runner = algorithm.init(jax.random.PRNGKey(0))
        _, metrics = jax.jit(algorithm.update)(runner)
        return float(metrics["imitation/agreement"])

    return {"teacher": agreement(1000), "learner": agreement(0)}


def test_the_teacher_plays_every_table_while_its_share_is_one(first_update_agreement):
    assert first_update_agreement["teacher"] == 1.0


def test_the_untrained_learner_plays_its_own_actions_without_mixing(first_update_agreement):
    # Uniform over two to four legal moves: about a third of them match the teacher.
    assert first_update_agreement["learner"] < 0.6


def shares_at(algorithm, steps: tuple[int, ...]) -> list[float]:
    return [float(algorithm.teacher_share(jnp.asarray(step))) for step in steps]


def test_the_teacher_share_falls_linearly_to_zero_over_the_mixing_updates():
    assert shares_at(dagger(10), (0, 5, 10, 30)) == pytest.approx([1.0, 0.5, 0.0, 0.0])
    assert float(dagger(0).teacher_share(jnp.asarray(0))) == 0.0


def test_the_teacher_share_falls_to_the_final_share_and_stays_there():
    assert shares_at(dagger(10, 0.5), (0, 5, 10, 30)) == pytest.approx([1.0, 0.75, 0.5, 0.5])
    # A final share of 1 is behaviour cloning: the teacher plays every table throughout.
    assert float(dagger(0, 1.0).teacher_share(jnp.asarray(7))) == 1.0


def test_the_cloning_updates_hold_the_teacher_share_at_one_before_the_mixing():
    steps = (0, 19, 20, 25, 30, 50)
    assert shares_at(dagger(10, cloning_updates=20), steps) == pytest.approx(
        [1.0, 1.0, 1.0, 0.5, 0.0, 0.0]
    )
    # Without mixing updates the share drops from 1 to the final share when cloning ends.
    assert shares_at(dagger(0, 0.25, cloning_updates=5), (4, 5)) == pytest.approx([1.0, 0.25])


def teacher_played_share_by_episode(mix_by: str) -> np.ndarray:
    """At a constant teacher share of 1/2, over 24 steps of every table: for each episode of
    at least 6 steps, the share of its steps whose played actions were all the teacher's."""
    algorithm = dagger(0, 0.5, mix_by=mix_by)
    runner = algorithm.init(jax.random.PRNGKey(3))
    play = jax.jit(
        lambda runner: rollouts.collect(
            algorithm.vec_env,
            algorithm.env_params,
            functools.partial(algorithm._act, algorithm.teacher_share(runner.update_step)),
            lambda params, hidden, view: jnp.zeros(view.active.shape, jnp.float32),
            runner.params,
            runner.rollout,
            jax.random.PRNGKey(4),
            24,
            teacher=algorithm._teacher_actions,
        )[1]
    )
    transitions = play(runner)
    done = np.asarray(transitions.done)
    matched = np.asarray((transitions.actions == transitions.view.teacher_actions).all(-1))
    shares = []
    for table in range(done.shape[1]):
        ends = np.flatnonzero(done[:, table]) + 1
        for episode in np.split(matched[:, table], ends):
            if episode.size >= 6:
                shares.append(episode.mean())
    return np.asarray(shares)


def test_mixing_by_episode_gives_each_episode_to_the_teacher_or_the_learner_whole():
    by_episode = teacher_played_share_by_episode("episode")
    teacher_episodes = by_episode == 1.0
    # The learner's episodes: an untrained learner matches the teacher on few steps.
    assert (by_episode[~teacher_episodes] < 0.75).all()
    # Drawn at a share of 1/2: both kinds, in about equal numbers.
    assert 0.2 <= teacher_episodes.mean() <= 0.8 and by_episode.size >= 16
    # Drawn at every step instead, almost no episode is the teacher's throughout.
    assert (teacher_played_share_by_episode("step") == 1.0).sum() <= 2


def test_a_forbidden_teacher_action_is_relabelled_as_the_wait_it_amounts_to():
    """Resource ordering keeps grabbing a fork a neighbour holds (the mask forbids it, the
    grab fails): the labels are waits there, and every label is one the learner can take."""
    algorithm = dagger(1000)
    runner = algorithm.init(jax.random.PRNGKey(1))
    vec_env, params = algorithm.vec_env, algorithm.env_params
    teacher = alemlite.spec("dining").policy("resource_ordering", ENV)

    @jax.jit
    def labels_along_a_rollout(runner):
        def one_step(state, key):
            raw = jax.vmap(teacher, in_axes=(0, 0, None))(
                jax.random.split(key, vec_env.num_envs), state.env_state.env_state, params
            )
            labels = algorithm._teacher_actions(key, state, params)
            mask = vec_env.action_mask(state, params)
            _, state, *_ = vec_env.step(key, state, labels, params)
            return state, (raw, labels, mask)

        keys = jax.random.split(jax.random.PRNGKey(2), 12)
        return jax.lax.scan(one_step, runner.rollout.env_state, keys)[1]

    raw, labels, mask = map(np.asarray, labels_along_a_rollout(runner))
    raw_allowed = np.take_along_axis(mask, raw[..., None], -1)[..., 0]
    assert (~raw_allowed).sum() > 0, "no forbidden grab on this rollout: nothing was checked"
    assert (labels[~raw_allowed] == WAIT).all()
    assert (labels[raw_allowed] == raw[raw_allowed]).all()
    assert np.take_along_axis(mask, labels[..., None], -1).all()


def test_dagger_without_a_teacher_is_refused_naming_the_flag():
    with pytest.raises(ConfigError, match=r"--imitation\.teacher, one of all_wait, backoff"):
        TrainConfig(algorithm="dagger", options=OPTIONS)
    with pytest.raises(ConfigError, match=r"imitation\.teacher='oracle'"):
        TrainConfig(
            algorithm="dagger", options=OPTIONS, imitation=ImitationConfig(teacher="oracle")
        )


def test_a_negative_mixing_length_is_refused():
    with pytest.raises(ConfigError, match=r"imitation\.mixing_updates=-1"):
        ImitationConfig(teacher="backoff", mixing_updates=-1)


def test_a_final_teacher_share_outside_zero_to_one_is_refused():
    with pytest.raises(ConfigError, match=r"imitation\.final_teacher_share=1\.5"):
        ImitationConfig(teacher="backoff", final_teacher_share=1.5)


def test_negative_cloning_updates_are_refused():
    with pytest.raises(ConfigError, match=r"imitation\.cloning_updates=-3"):
        ImitationConfig(teacher="backoff", cloning_updates=-3)


def test_the_imitation_settings_survive_a_config_round_trip():
    config = TrainConfig(
        algorithm="dagger",
        options=OPTIONS,
        imitation=ImitationConfig(teacher="backoff", mixing_updates=7, final_teacher_share=0.25),
    )
    assert TrainConfig.from_dict(config.to_dict()) == config
    assert dataclasses.asdict(config)["imitation"] == {
        "teacher": "backoff",
        "cloning_updates": 0,
        "mixing_updates": 7,
        "final_teacher_share": 0.25,
        "mix_by": "step",
        "kickstart_coef": 0.0,
    }
