"""Time alem-env (`step` with auto-reset and `step_env` without); run in the alem venv.

    /tmp/peer-alem/bin/python benchmarks/peers/alem_peer.py --num-envs 64 --num-agents 3

The per-step metrics dictionary is switched off (`compute_full_info=False`), alem's
own benchmark setting.
"""

from __future__ import annotations

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
from alem import make_alem_env_from_name
from alem.alem_coop.alem_state import StaticEnvParams

sys.path.insert(0, str(Path(__file__).resolve().parent))
from protocol import arguments, hash_actions, report, time_compiled


def rollout(env, num_envs: int, steps: int, auto_reset: bool):
    step_function = env.step if auto_reset else env.step_env
    reset = jax.vmap(env.reset)
    step = jax.vmap(step_function)
    num_actions = env.action_spaces[env.agents[0]].n

    def run(key):
        _, state = reset(jax.random.split(key, num_envs))

        def one_step(carry, t):
            state, key = carry
            key, step_key = jax.random.split(key)
            actions = hash_actions(t, num_envs, env.num_agents, num_actions)
            named = {agent: actions[:, index] for index, agent in enumerate(env.agents)}
            _, state, reward, _, _ = step(jax.random.split(step_key, num_envs), state, named)
            return (state, key), sum(r.sum() for r in reward.values())

        _, rewards = jax.lax.scan(one_step, (state, key), jnp.arange(steps))
        return rewards.sum()

    return run


def main() -> None:
    args = arguments()
    env = make_alem_env_from_name(
        "Alem-Coop-Symbolic",
        static_env_params=StaticEnvParams(player_count=args.num_agents),
        compute_full_info=False,
    )
    for mode, auto_reset in (("step", True), ("step_env", False)):
        timing = time_compiled(
            rollout(env, args.num_envs, args.steps, auto_reset),
            jax.random.PRNGKey(0),
            repeats=args.repeats,
        )
        report(
            "alem", mode, args.num_envs, args.steps, args.num_agents, timing,
            env.static_env_params.map_size,
        )  # fmt: skip


if __name__ == "__main__":
    main()
