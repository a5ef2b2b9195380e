"""Kickstarting (`--imitation.kickstart-coef` with IPPO or MAPPO): PPO's loss gains a
cross-entropy towards the teacher on the learner's own states, and the learner learns it."""

from __future__ import annotations

import jax
import numpy as np
import pytest

import alemlite
from alemlite.core.errors import ConfigError
from baselines.common.config import ImitationConfig, NetworkConfig, TrainConfig
from baselines.common.trainer import build_algorithm, run_updates

OPTIONS = alemlite.spec("dining").options(num_agents=5, max_steps=12)
UPDATES = 40


def kickstarted(algorithm: str = "ippo", coef: float = 1.0, teacher: str = "resource_ordering"):
    return TrainConfig(
        algorithm=algorithm,
        options=OPTIONS,
        num_envs=16,
        num_steps=12,
        network=NetworkConfig(hidden_size=16, num_layers=1),
        imitation=ImitationConfig(teacher=teacher, kickstart_coef=coef),
        progress=False,
    )


def test_the_learner_plays_its_own_moves_and_learns_the_teachers():
    config = kickstarted()
    env = alemlite.spec("dining").build(OPTIONS)
    algorithm = build_algorithm(config, env)
    runner = jax.vmap(algorithm.init)(jax.random.PRNGKey(0)[None])
    _, metrics = jax.jit(lambda r: run_updates(algorithm, UPDATES, r))(runner)
    loss = np.asarray(metrics["loss/kickstart"])[:, 0]
    # untrained: about log(legal moves) nats; the teacher is deterministic
    assert loss[0] > 0.5
    assert loss[-5:].mean() < 0.5 * loss[0], loss


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: kickstarted(teacher=""), r"^imitation.teacher='': ippo imitates one of dining"),
        (lambda: kickstarted("grpo"), r"kickstarting adds a teacher's loss to ippo and mappo"),
        (lambda: kickstarted(coef=-1.0), r"kickstart_coef=-1.0 must be 0 \(off\) or positive"),
    ],
)
def test_kickstarting_settings_that_cannot_apply_are_refused(build, message):
    with pytest.raises(ConfigError, match=message):
        build()
