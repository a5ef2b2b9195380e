"""Where a shipped Craft imitation reference departs from the team it imitates.

Plays the reference (`baselines.load("craft-DIFFICULTY")`) on the validation episodes of
the seed protocol and asks the scripted team, on every state the reference reaches, what
it would do and why (its behaviour: gather, rally, build, ...). Writes, per behaviour, the
share of the steps where the team would choose it and how often the reference's action is
the team's there (on the steps where the agent can act; a forbidden team action counts as
the no-op, as DAgger learns it), to `craft_imitation_<platform>.json`.

    python -m benchmarks.craft_imitation --difficulties easy medium hard
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import jax
import jax.numpy as jnp
import numpy as np

import baselines
from alemlite.core.errors import require_at_least
from alemlite.envs.craft import constants as C
from alemlite.envs.craft.team_policy.team import BEHAVIOURS, team_actions
from alemlite.evaluation import episode_keys, step_keys
from benchmarks.harness import ResultsFolder, write_results
from benchmarks.script import run_script

VALIDATION_SEED = 1_000_000  # the trainer's validation episodes: never the test episodes


@dataclass(frozen=True)
class CraftImitationConfig(ResultsFolder):
    """Label the states each shipped Craft reference reaches with the team's choices."""

    difficulties: tuple[str, ...] = ("easy", "medium", "hard")
    episodes: int = 16

    def __post_init__(self):
        require_at_least(1, episodes=self.episodes)


def agreement_by_behaviour(name: str, episodes: int) -> dict:
    """The share of acting steps per team behaviour and the reference's agreement there."""
    policy = baselines.load(name)
    env = policy.make_env()
    params = env.default_params
    steps = env.config.max_steps

    def episode(key):
        reset_key, play_key = jax.random.split(key)
        _, state = env.reset(reset_key, params)

        def one_step(carry, step):
            state, running = carry
            policy_key, env_key = step_keys(play_key, step)
            observation, mask = env.observe(state, params), env.action_mask(state, params)
            played = policy(policy_key, observation, mask)
            taught, behaviour = team_actions(env, jax.random.fold_in(policy_key, 1), state, params)
            allowed = jnp.take_along_axis(mask, taught[:, None], 1)[:, 0]
            taught = jnp.where(allowed, taught, C.NOOP)
            # An agent that is down or asleep can only wait: no choice to compare.
            counted = running & (mask.sum(1) > 1)
            _, state, _, done, _ = env.step(env_key, state, played, params)
            return (state, running & ~done), (behaviour, played == taught, counted)

        carry = (state, jnp.array(True))
        return jax.lax.scan(one_step, carry, jnp.arange(steps))[1]

    behaviour, agree, counted = map(
        np.asarray, jax.jit(jax.vmap(episode))(episode_keys(VALIDATION_SEED, episodes))
    )
    behaviour, agree = behaviour[counted], agree[counted]
    rows = {}
    for index in np.unique(behaviour):
        chosen = behaviour == index
        rows[BEHAVIOURS[index]] = {
            "share": float(chosen.mean()),
            "agreement": float(agree[chosen].mean()),
        }
    ordered = dict(sorted(rows.items(), key=lambda item: -item[1]["share"]))
    return {"steps": int(agree.size), "agreement": float(agree.mean()), "behaviours": ordered}


def run(config: CraftImitationConfig) -> dict:
    out_dir, provenance = config.begin("craft_imitation")
    started = time.perf_counter()
    references = {
        difficulty: agreement_by_behaviour(f"craft-{difficulty}", config.episodes)
        for difficulty in config.difficulties
    }
    payload = {"config": {**asdict(config), "out": str(out_dir)}, "references": references}
    path = write_results("craft_imitation", payload, out_dir, provenance)
    for difficulty, found in references.items():
        print(f"craft-{difficulty}: agrees with the team on {found['agreement']:.1%} of steps")
        for behaviour, row in found["behaviours"].items():
            share, agreement = row["share"], row["agreement"]
            print(f"  {behaviour:>16}: {share:6.1%} of steps, agreement {agreement:.1%}")
    print(f"wrote {path} in {time.perf_counter() - started:.0f} s")
    return payload


if __name__ == "__main__":
    run_script(CraftImitationConfig, run)
