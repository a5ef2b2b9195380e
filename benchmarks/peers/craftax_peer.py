"""Time craftax Classic (symbolic) with and without auto-reset; run in the craftax venv.

/tmp/peer-craftax/bin/python benchmarks/peers/craftax_peer.py --num-envs 256
"""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
from craftax.craftax_env import make_craftax_env_from_name

sys.path.insert(0, str(Path(__file__).resolve().parent))
from protocol import arguments, hash_actions, report, time_compiled


def rollout(env, num_envs: int, steps: int):
    params = env.default_params
    reset = jax.vmap(env.reset, in_axes=(0, None))
    step = jax.vmap(env.step, in_axes=(0, 0, 0, None))

    def run(key):
        _, state = reset(jax.random.split(key, num_envs), params)

        def one_step(carry, t):
            state, key = carry
            key, step_key = jax.random.split(key)
            actions = hash_actions(t, num_envs, 1, env.action_space(params).n)[:, 0]
            _, state, reward, _, _ = step(
                jax.random.split(step_key, num_envs), state, actions, params
            )
            return (state, key), reward.sum()

        _, rewards = jax.lax.scan(one_step, (state, key), jnp.arange(steps))
        return rewards.sum()

    return run


def main() -> None:
    args = arguments()
    for mode, auto_reset in (("auto_reset", True), ("no_reset", False)):
        env = make_craftax_env_from_name("Craftax-Classic-Symbolic-v1", auto_reset=auto_reset)
        timing = time_compiled(
            rollout(env, args.num_envs, args.steps), jax.random.PRNGKey(0), repeats=args.repeats
        )
        report(
            "craftax", mode, args.num_envs, args.steps, 1, timing,
            env.static_env_params.map_size,
        )  # fmt: skip


if __name__ == "__main__":
    main()
