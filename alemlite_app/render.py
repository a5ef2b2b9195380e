"""`alemlite render`: play one episode with a scripted policy and save what it looked like.

An environment that draws pictures (its spec's `render_rgb`) is saved as a GIF of the
whole scene; one that describes its state in words (`render_text`) as a text file of
frames. Either way, one frame every `--stride` steps, cut where the episode ends.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import imageio.v3 as iio
import jax
import numpy as np

import alemlite
from alemlite.core.environment import Environment
from alemlite.core.errors import ConfigError, require_at_least
from alemlite.core.registry import DEFAULT_ENV, resolve_options
from alemlite.core.spec import EnvOptions, EnvSpec


@dataclass(frozen=True)
class RenderConfig:
    """Play one episode with a scripted policy; save it as a GIF (or as text frames where the
    environment draws no pictures)."""

    env: str = DEFAULT_ENV
    """the environment (alemlite.registered_environments())"""
    options: EnvOptions | None = None
    """the environment's options; `--env NAME --help` lists them"""
    policy: str = ""
    """a scripted policy of the environment; empty: its default team"""
    seed: int = 0
    out: Path | None = None
    """the file to write; default: runs/render/ENV_SETTING_POLICY_SEED.gif (.txt for text)"""
    steps: int = 300
    """steps to play (the episode may end earlier)"""
    stride: int = 2
    """keep one frame every `stride` steps"""
    fps: int = 12
    """frames per second of a GIF"""

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", resolve_options(self.env, self.options))
        require_at_least(1, steps=self.steps, stride=self.stride, fps=self.fps)
        env_spec = alemlite.spec(self.env)
        if env_spec.render_rgb is None and env_spec.render_text is None:
            raise ConfigError(
                f"env={self.env!r} has no renderer (its spec gives neither render_rgb nor "
                "render_text); choose another environment"
            )

    @property
    def policy_name(self) -> str:
        return self.policy or alemlite.spec(self.env).default_policy

    def path(self) -> Path:
        if self.out is not None:
            return self.out
        suffix = ".gif" if alemlite.spec(self.env).render_rgb is not None else ".txt"
        name = f"{self.env}_{self.options.label()}_{self.policy_name}_{self.seed}{suffix}"
        return Path("runs") / "render" / name


def rollout(config: RenderConfig) -> tuple[Environment, Any, Any]:
    """The environment, its params and the episode's frames: `(T, H, W, 3)` uint8 pictures
    where it draws them, else the states themselves (leaves batched over `T`)."""
    env_spec: EnvSpec = alemlite.spec(config.env)
    env = env_spec.build(config.options)
    params = env.default_params
    policy = env_spec.policy(config.policy_name, env)
    draw = env_spec.render_rgb

    def play(key):
        reset_key, run_key = jax.random.split(key)
        _, state = env.reset(reset_key, params)

        def one_step(carry, step_key):
            state, finished = carry
            policy_key, env_key = jax.random.split(step_key)
            actions = policy(policy_key, state, params)
            _, next_state, _, done, _ = env.step(env_key, state, actions, params)
            shown = state if draw is None else draw(env, state, params)
            return (next_state, finished | done), (shown, finished)

        keys = jax.random.split(run_key, config.steps)
        _, (shown, finished) = jax.lax.scan(one_step, (state, False), keys)
        return shown, finished

    shown, finished = jax.device_get(jax.jit(play)(jax.random.PRNGKey(config.seed)))
    kept = np.flatnonzero(~finished)[:: config.stride]
    return env, params, jax.tree.map(lambda leaf: leaf[kept], shown)


def render(config: RenderConfig) -> Path:
    """Play one episode with a scripted policy and write it as a GIF or as text frames."""
    env_spec = alemlite.spec(config.env)
    env, params, frames = rollout(config)
    path = config.path()
    path.parent.mkdir(parents=True, exist_ok=True)
    if env_spec.render_rgb is not None:
        iio.imwrite(path, np.asarray(frames), duration=1000 / config.fps, loop=0)
    else:
        count = len(jax.tree.leaves(frames)[0])
        host_params = jax.device_get(params)
        texts = [
            env_spec.render_text(env, jax.tree.map(lambda leaf, i=i: leaf[i], frames), host_params)
            for i in range(count)
        ]
        path.write_text("\n\n".join(texts) + "\n")
    print(f"wrote {path} ({path.stat().st_size / 1024:.0f} KiB)")
    return path
