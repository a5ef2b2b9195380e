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

# One case per configuration: the default layer, the base world, each part switched
# off alone, a few sizes, difficulties and layouts.
CASES: dict[str, dict[str, Any]] = {
    "default_p3_s32": {"num_agents": 3, "map_size": 32},
    "plain_p4_s16": {"num_agents": 4, "map_size": 16, "coordination": False},
    "no_specialisation": {"map_size": 16, "specialisation": False},
    "no_tasks": {"map_size": 16, "tasks": False},
    "no_trading": {"map_size": 16, "trading": False},
    "no_elites": {"map_size": 16, "elites": False},
    "no_construction": {"map_size": 16, "construction": False},
    "no_messages": {"map_size": 16, "num_message_tokens": 0},
    "easy_p4_s32": {"num_agents": 4, "map_size": 32, "difficulty": "easy"},
    "hard_p1_s16": {"num_agents": 1, "map_size": 16, "difficulty": "hard"},
    "plain_p1_s32": {"num_agents": 1, "map_size": 32, "coordination": False},
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
    "no_specialisation": "cc82a81e91dafbd38a4f181bb4eff7d831fbbbf7386e6afcc7ece70f7c8aff81",
    "no_tasks": "68901f3afe4866ac7323df33ecc720bb9fffd9a76c49530d24cccc91d692e51f",
    "no_trading": "bdeb77ec2d7cfc7d142ec9e90a36757cdd4dc3061647c233be456f04b8b254c6",
    "no_elites": "571521b0166202b12836bd5d6a4feac019f8816235d60dea344bde91cbc7b6a3",
    "no_construction": "0540209f96543b0caba0e261c84f3aa45864cce75a0d3162e9c60de08a06212f",
    "no_messages": "ed8545e985eac4005e931c928e632d0ee9dd30eb3b8a496cef94305efdad8b8c",
    "easy_p4_s32": "7a23076166ef14069585dd8519c4510cc32b62b2ebe23f5a3c59c3f5768d5b47",
    "hard_p1_s16": "134a7b1fbcee3fc05d92fb1597c8832c04c17b1a8f1ab68dd4da7ad52ca081c4",
    "plain_p1_s32": "7420d4ffb0e2f1cf9795bc2cc804cf753ccd3c7bba9d706f5ea849a46e76b060",
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
    first = jax.tree.map(lambda leaf: leaf[0], state)
    _update(digest, jax.jit(lambda s: spec.render_rgb(env, s, params))(first))
    return digest.hexdigest()


@pytest.mark.parametrize("name", list(CASES))
def test_rollout_matches_its_recorded_digest(name):
    assert rollout_digest(name) == GOLDEN[name]


def test_every_case_is_recorded():
    assert set(GOLDEN) == set(CASES)


if __name__ == "__main__":
    for case in CASES:
        print(f'    "{case}": "{rollout_digest(case)}",', flush=True)
