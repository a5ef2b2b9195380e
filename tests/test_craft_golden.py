"""Golden rollouts: seeded Craft episodes hash to the digests recorded below.

Each case plays two episodes with the scripted team and two with the random policy for
STEPS steps and hashes, per step, the actions, observations, rewards, dones and action
masks, then the final state, global state, episode metrics and a rendered map, and the
environment's static description. Any change to the dynamics, the observation, the
action layout or the metrics changes a digest. Floats are rounded to ROUND decimals so
that a last-bit difference between platforms does not count.

A deliberate change re-records the digests (`python -m tests.test_craft_golden`) and
says why in its commit.
"""

from __future__ import annotations

import hashlib
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import alemlite

STEPS = 300
SEEDS = (0, 1)
ROUND = 5

# The default layer, the base world, and the remaining switches and layouts together. The
# split of Craft into world/ and coordination/ was checked against twelve cases recorded on
# the code before it (each part off alone, 1 to 4 agents, maps 16 and 32, every difficulty;
# commit a8e549d); three are kept here, as each compiles for a minute on two CPU cores.
CASES: dict[str, dict[str, Any]] = {
    "default_p3_s32": {"num_agents": 3, "map_size": 32},
    "plain_p4_s16": {"num_agents": 4, "map_size": 16, "coordination": False},
    "sampled_image_p2": {
        "num_agents": 2,
        "map_size": 16,
        "difficulty": "sampled",
        "observation": "image",
        "hard_specialisation": True,
        "give_range": 3,
    },
}

GOLDEN: dict[str, str] = {
    "default_p3_s32": "820215df37b001f1282529577185c69df500b7937a38624b6173fe900dd61132",
    "plain_p4_s16": "a976076e1fde410bf7c674d6b7a2d461af75a70814abc1930a841b0d51ab6a19",
    "sampled_image_p2": "43e0d1bb242074b972f3dcfd68957c8690e5111d939619da492f8e95135aa13a",
}


def _update(digest: Any, tree: Any) -> None:
    for leaf in jax.tree.leaves(tree):
        array = np.asarray(leaf)
        if np.issubdtype(array.dtype, np.floating):
            array = np.round(array.astype(np.float64), ROUND) + 0.0  # -0.0 -> 0.0
        digest.update(str(array.dtype).encode() + str(array.shape).encode())
        digest.update(np.ascontiguousarray(array).tobytes())


def rollout_digest(name: str) -> str:
    """The hex digest of the case's episodes (see the module docstring)."""
    spec = alemlite.spec("craft")
    env = spec.make(**CASES[name])
    params = env.default_params
    team, random = spec.policy("team", env), spec.policy("random", env)

    def episode(key: jax.Array, use_team: jax.Array):
        reset_key, key = jax.random.split(key)
        obs, state = env.reset(reset_key, params)

        def one(carry, key):
            state, obs = carry
            policy_key, step_key = jax.random.split(key)
            mask = env.action_mask(state, params)
            actions = jnp.where(
                use_team, team(policy_key, state, params), random(policy_key, state, params)
            )
            obs, state, reward, done, info = env.step(step_key, state, actions, params)
            return (state, obs), (actions, mask, obs, reward, done, info)

        (state, obs), trace = jax.lax.scan(one, (state, obs), jax.random.split(key, STEPS))
        final = (
            state,
            env.global_state(state, params),
            env.episode_metrics(state, params),
        )
        return trace, final

    keys = jnp.stack([jax.random.PRNGKey(seed) for seed in SEEDS for _ in range(2)])
    use_team = jnp.array([True, False] * len(SEEDS))
    trace, (state, global_state, metrics) = jax.jit(jax.vmap(episode))(keys, use_team)
    digest = hashlib.sha256()
    digest.update(repr((env.action_names, env.observation_shape)).encode())
    digest.update(repr((env.global_state_shape, list(metrics))).encode())
    _update(digest, (trace, state, global_state, metrics))
    # The first episode's final state, picked inside the program (eagerly, each leaf's
    # index would compile on its own).
    first = lambda s: jax.tree.map(lambda leaf: leaf[0], s)  # noqa: E731
    _update(digest, jax.jit(lambda s: spec.render_rgb(env, first(s), params))(state))
    return digest.hexdigest()


# The digests hash the programs XLA optimises, as every run outside the suite compiles them;
# the suite's unoptimised compiles (tests/conftest.py) round some floats apart.
pytestmark = pytest.mark.usefixtures("xla_optimised")


@pytest.mark.parametrize("name", list(CASES))
def test_rollout_matches_its_recorded_digest(name):
    assert rollout_digest(name) == GOLDEN[name]


def test_every_case_is_recorded():
    assert set(GOLDEN) == set(CASES)


if __name__ == "__main__":
    for case in CASES:
        print(f'    "{case}": "{rollout_digest(case)}",', flush=True)
