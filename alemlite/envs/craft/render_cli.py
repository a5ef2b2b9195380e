"""`alemlite render craft`: play one episode with a reference policy and save a GIF."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import jax
import numpy as np

from alemlite.core.errors import require, require_at_least
from alemlite.envs.craft import make_craft
from alemlite.envs.craft.config import CraftConfig
from alemlite.envs.craft.policies import POLICIES
from alemlite.envs.craft.world.rendering import render_map, write_gif


@dataclass(frozen=True)
class RenderCraftConfig:
    """Render a Craft episode (the whole map, every `stride` steps) to a GIF."""

    seed: int = 0
    policy: Literal["random", "noop", "scripted", "team"] = "scripted"
    out: Path = Path("episode.gif")
    map_size: int = 32
    num_agents: int = 3
    steps: int = 300
    """steps to play (the episode may end earlier)"""
    stride: int = 2
    """keep one frame every `stride` steps"""
    fps: int = 12

    def __post_init__(self):
        require_at_least(1, steps=self.steps, stride=self.stride, fps=self.fps)
        CraftConfig(num_agents=self.num_agents, map_size=self.map_size)


def rollout_frames(config: RenderCraftConfig) -> np.ndarray:
    """Frames `(T, H, W, 3)` uint8 of one episode, cut at its end."""
    require(config.steps >= 1, f"steps={config.steps} must be at least 1")
    require(config.stride >= 1, f"stride={config.stride} must be at least 1")
    env = make_craft(map_size=config.map_size, num_agents=config.num_agents)
    params = env.default_params
    policy = POLICIES[config.policy](env)

    def play(key):
        reset_key, run_key = jax.random.split(key)
        _, state = env.reset(reset_key, params)

        def one_step(carry, step_key):
            state, finished = carry
            policy_key, env_key = jax.random.split(step_key)
            actions = policy(policy_key, state, params)
            _, next_state, _, done, _ = env.step(env_key, state, actions, params)
            frame = render_map(env.config, state, params)
            return (next_state, finished | done), (frame, finished)

        keys = jax.random.split(run_key, config.steps)
        _, (frames, finished) = jax.lax.scan(one_step, (state, False), keys)
        return frames, finished

    frames, finished = jax.device_get(jax.jit(play)(jax.random.PRNGKey(config.seed)))
    return frames[~finished][:: config.stride]


def render_craft(config: RenderCraftConfig) -> Path:
    """Play one Craft episode with a reference policy and write it as a GIF."""
    path = write_gif(rollout_frames(config), config.out, fps=config.fps)
    print(f"wrote {path} ({path.stat().st_size / 1024:.0f} KiB)")
    return path
