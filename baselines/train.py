"""`alemlite train ippo|mappo ...`: train a reference agent and report held-out returns.

Example: `alemlite train ippo --env dining --philosophers 5 --num-updates 300`, or
`alemlite train ippo --env craft --map-size 32 --agents 3 --max-steps 500 --difficulty hard`.
The run directory receives config.json, metrics.jsonl, learning_curve.png,
checkpoints/, policy/{final,best}/ and summary.json.
"""

from __future__ import annotations

import importlib

import alemlite
from alemlite.core.environment import Environment
from alemlite.evaluation import Policy
from baselines.common.config import TrainConfig
from baselines.common.trainer import train

# environment -> "module:attribute" of its scripted reference policies, drawn on every curve
REFERENCE_POLICIES = {"dining": "alemlite.envs.dining.policies:DINING_POLICIES"}
# Craft's reference teams are built for an environment's shapes: uniform random and the
# scripted coordinating team.
CRAFT_REFERENCE_TEAMS = ("random", "team")


def reference_policies(env_name: str, env: Environment | None = None) -> dict[str, Policy]:
    """The scripted policies a run is compared with (Craft needs the environment)."""
    if env_name == "craft" and env is not None:
        from alemlite.envs.craft.policies import POLICIES

        return {name: POLICIES[name](env) for name in CRAFT_REFERENCE_TEAMS}
    if env_name not in REFERENCE_POLICIES:
        return {}
    module_name, attribute = REFERENCE_POLICIES[env_name].split(":")
    return dict(getattr(importlib.import_module(module_name), attribute))


def main(config: TrainConfig) -> None:
    """Train a reference agent on a jitted environment; report final and best held-out returns."""
    env = alemlite.make(config.env, **config.env_kwargs())
    summary = train(config, env, references=reference_policies(config.env, env))
    rows = [("final", summary["final"]), ("best", summary["best"])]
    for size, results in summary.get("curriculum", {}).get("per_size", {}).items():
        rows += [(f"{name}, N = {size}", results[name]) for name in ("final", "best")]
    rows += sorted(summary["references"].items())
    print(f"\nheld-out return, {summary['test_episodes']} test episodes per seed (95% CI):")
    for name, result in rows:
        ci = result["episodes"]["episode_return"]
        print(f"  {name:>20}: {ci['mean']:8.3f}  [{ci['low']:.3f}, {ci['high']:.3f}]")
    print(f"run directory: {config.output_dir}")


if __name__ == "__main__":
    import tyro

    main(tyro.cli(TrainConfig))
