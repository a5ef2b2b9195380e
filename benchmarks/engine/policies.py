"""An environment's scripted policies on the seed protocol: the anchors that trained agents
are read against.

`alemlite bench policies --env NAME` (`alemlite_app/bench.py`) plays every scripted policy
of the spec (or those named with `--policies`) on the same episodes and tables the return
and the spec's headline metrics with 95% intervals (Student-t; Wilson for 0/1 outcomes);
`benchmarks/dining_reference_policies.py` is the published dining table.
"""

from __future__ import annotations

import numpy as np

from alemlite.core.spec import EnvOptions, EnvSpec
from alemlite.evaluation import evaluate


def reported(env_spec: EnvSpec) -> tuple[str, ...]:
    """The metrics a policy table shows: the return, then the spec's headline metrics."""
    return ("episode_return", *(name for name in env_spec.metrics if name != "episode_return"))


def policy_episodes(
    env_spec: EnvSpec, options: EnvOptions, name: str, episodes: int, seed: int
) -> dict[str, np.ndarray]:
    """Per-episode metrics of the scripted policy `name` on the seed protocol."""
    env = env_spec.build(options)
    return evaluate(env, env_spec.policy(name, env), env.default_params, episodes, seed)
