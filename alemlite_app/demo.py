"""`alemlite demo`: a short tour of one environment that runs in a few minutes on a laptop CPU.

Evaluates every scripted policy of the environment, measures its throughput on a small
sweep, trains a small IPPO agent that visibly learns, and renders an episode. Everything
lands under `--out`.
"""

from __future__ import annotations

import dataclasses
import math
import shutil
from dataclasses import dataclass
from pathlib import Path

import alemlite
from alemlite.core.errors import require
from alemlite.core.registry import DEFAULT_ENV, registered_environments, resolve_options
from alemlite.core.spec import EnvOptions


@dataclass(frozen=True)
class DemoConfig:
    """Run the tour: scripted policies, throughput, a short training run, a rendered episode."""

    env: str = DEFAULT_ENV
    """the environment (alemlite.registered_environments())"""
    options: EnvOptions | None = None
    """the environment's options; `--env NAME --help` lists them"""
    out: Path = Path("runs/demo")
    episodes: int = 32
    train_updates: int = 80
    """IPPO updates of the training part (any positive number)."""

    def __post_init__(self):
        object.__setattr__(self, "options", resolve_options(self.env, self.options))
        require(self.episodes >= 1, f"episodes={self.episodes} must be at least 1")
        require(self.train_updates >= 1, f"train_updates={self.train_updates} must be at least 1")


def _training(config: DemoConfig, run_dir: Path):
    """The IPPO run, evaluated about four times (and at the end), each time at the end of a
    compiled chunk: chunks of up to 10 updates that divide the run."""
    from baselines.common.config import TrainConfig

    updates = config.train_updates
    chunk = math.gcd(updates, 10)
    interval = chunk * max(1, round(updates / 4 / chunk))
    return TrainConfig(
        algorithm="ippo",
        env=config.env,
        options=config.options,
        num_updates=updates,
        updates_per_chunk=chunk,
        num_seeds=2,
        eval_interval=interval,
        out=run_dir,
    )


def demo(config: DemoConfig) -> None:
    """A few-minute tour of alemlite; prints where every result went."""
    from alemlite_app.bench import PoliciesConfig, ThroughputConfig
    from alemlite_app.bench import policies as evaluate_policies
    from alemlite_app.bench import throughput as bench_throughput
    from alemlite_app.render import RenderConfig, render
    from baselines.train import main as train

    run_dir = config.out / f"ippo-{config.env}"
    training = _training(config, run_dir)  # checked now, not after the first parts
    setting = f"{config.env} ({config.options.describe()})"
    config.out.mkdir(parents=True, exist_ok=True)
    print(f"== {setting}: the scripted policies over {config.episodes} episodes\n")
    evaluate_policies(
        PoliciesConfig(
            env=config.env, options=config.options, episodes=config.episodes, out=config.out
        )
    )
    print(f"\n== {setting}: throughput, a small sweep (the full one: alemlite bench)")
    bench_throughput(
        ThroughputConfig(env=config.env, options=config.options, max_log2_envs=10, out=config.out)
    )
    print(f"\n== IPPO on {setting}: a short run that learns")
    shutil.rmtree(run_dir, ignore_errors=True)  # each demo trains afresh; it resumes nothing
    train(training)

    env_spec = alemlite.spec(config.env)
    if env_spec.render_rgb is not None or env_spec.render_text is not None:
        print(f"\n== {setting}: one episode of its default scripted team")
        episode = RenderConfig(env=config.env, options=config.options, seed=1)
        render(dataclasses.replace(episode, out=config.out / episode.path().name))
    others = ", ".join(name for name in registered_environments() if name != config.env)
    print(f"\nAll demo results are under {config.out.resolve()}")
    print(f"The same tour of another environment: alemlite demo --env NAME ({others})")
