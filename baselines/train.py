"""`alemlite train ippo|mappo|grpo|srpo|teamtr ...`: train an agent, report held-out returns.

Example: `alemlite train ippo --env dining --num-agents 5 --num-updates 300`, or
`alemlite train ippo --env craft --map-size 32 --num-agents 3 --max-steps 500 --difficulty hard`
(the environment's options are flags of the command: `alemlite train --env NAME --help`).
The run directory receives config.json, metrics.jsonl, learning_curve.png,
checkpoints/, policy/{final,best}/ and summary.json.
"""

from __future__ import annotations

import alemlite
from alemlite.core.environment import Environment
from alemlite.evaluation import Policy
from baselines.common import distributed
from baselines.common.config import TrainConfig
from baselines.common.trainer import make_env, train


def reference_policies(env_name: str, env: Environment) -> dict[str, Policy]:
    """The scripted policies a run is compared with (the spec's `reference_policies`),
    built for `env`."""
    env_spec = alemlite.spec(env_name)
    return {name: env_spec.policy(name, env) for name in env_spec.reference_policies}


def main(config: TrainConfig) -> None:
    """Train an agent on a jitted environment; report final and best held-out returns."""
    # Before the environment is built: building some (Craft) starts JAX, after which the
    # processes can no longer join.
    distributed.initialise(config.distributed)
    env = make_env(config)
    summary = train(config, env, references=reference_policies(config.env, env))
    rows = [("final", summary["final"]), ("best", summary["best"])]
    curriculum = summary.get("curriculum", {})
    for value, results in curriculum.get("per_value", {}).items():
        option = curriculum["option"]
        rows += [(f"{name}, {option} = {value}", results[name]) for name in ("final", "best")]
    rows += sorted(summary["references"].items())
    print(f"\nheld-out return, {summary['test_episodes']} test episodes per seed (95% CI):")
    width = max(len(name) for name, _ in rows)
    for name, result in rows:
        ci = result["episodes"]["episode_return"]
        print(f"  {name:>{width}}: {ci['mean']:8.3f}  [{ci['low']:.3f}, {ci['high']:.3f}]")
    print(f"run directory: {config.output_dir}")
