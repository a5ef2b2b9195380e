"""Replay a run's episodes from its transcript and check them against what it recorded.

The transcript keeps every step's joint action (LLM and policy seats alike), so an episode
is played again on the seed protocol (`alemlite.evaluation`): episode i resets from
`PRNGKey(seed + i)` and step t draws its environment key from `fold_in(play_key, t)`. The
replay must end where the transcript says, and its metrics must be the ones the run
reported; otherwise the transcript is refused in one line (another environment version,
another config, an edited file), rather than drawn wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

import alemlite
from alemlite.core.environment import Environment
from alemlite.core.errors import ConfigError, require
from alemlite.core.spec import EnvSpec
from alemlite.evaluation import episode_keys, step_keys
from llm_bridge.viewer.records import RunRecords

# A replayed metric equals the recorded one up to float32 summation order.
RTOL, ATOL = 1e-4, 1e-5


@dataclass(frozen=True)
class Episode:
    """One episode as replayed: per position t (the state before step t; the last one is the
    final state), a frame; per step, the joint action and each seat's reward."""

    episode: int
    seed: int
    actions: np.ndarray  # (L, N) int
    rewards: np.ndarray  # (L, N) float
    frames: list[str]  # L + 1 frames, as `encode` made them of pictures, or texts
    finished: bool  # the episode ended at its last recorded step
    metrics: dict[str, float]

    @property
    def length(self) -> int:
        return len(self.actions)


class Replayer:
    """The environment of a run's header, with its reset, step, metrics and drawing compiled."""

    def __init__(self, records: RunRecords, encode: Callable[[np.ndarray], str]):
        """`encode` turns a picture (H, W, 3) uint8 into the text kept for it (a data URI)."""
        config = records.config
        require(
            isinstance(config.get("options"), dict),
            f"run_dir={records.folder}: the transcript's header has no environment options "
            "(written by run_evaluation without describe); alemlite eval-llm writes them",
        )
        self.records = records
        self.encode = encode
        self.spec: EnvSpec = alemlite.spec(config["env"])
        try:
            options = self.spec.options(**config["options"])
        except TypeError as error:
            raise ConfigError(
                f"run_dir={records.folder}: the header's options do not fit env="
                f"{config['env']} ({error}); the run was written by another version"
            ) from None
        self.env: Environment = self.spec.build(options)
        params = self.env.default_params
        self.params = params
        env = self.env

        def start(key):
            reset_key, play_key = jax.random.split(key)
            return env.reset(reset_key, params)[1], play_key

        def advance(state, play_key, actions, t):
            _, env_key = step_keys(play_key, t)
            _, state, reward, done, _ = env.step(env_key, state, actions, params)
            return state, reward, done

        def metrics(state, total_reward, length):
            active = env.agent_active(state, params)
            return {
                **env.episode_metrics(state, params),
                "episode_return": jnp.sum(total_reward * active) / jnp.maximum(active.sum(), 1),
                "episode_length": length,
            }

        self._start, self._advance, self._metrics = map(jax.jit, (start, advance, metrics))
        draw = self.spec.render_rgb
        self._draw = None if draw is None else jax.jit(lambda state: draw(env, state, params))

    @property
    def draws(self) -> bool:
        """Whether frames are pictures (else texts)."""
        return self._draw is not None

    @property
    def seat_colours(self) -> list[str] | None:
        """The colour each seat is drawn in, as `#rrggbb` (the page's legend); None where the
        frames are no pictures or the spec tells no seat colours."""
        colours = self.spec.seat_colours
        if colours is None or not self.draws:
            return None
        return ["#" + bytes(rgb).hex() for rgb in np.asarray(colours(self.env), np.uint8)]

    def _frame(self, state: Any) -> str:
        if self._draw is not None:
            return self.encode(np.asarray(self._draw(state)))
        if self.spec.render_text is not None:
            return self.spec.render_text(self.env, jax.device_get(state), self.params)
        return ""

    def episodes(self) -> Iterator[Episode]:
        """Every episode of the run, replayed and checked, in episode order."""
        ids = self.records.episode_ids
        seed = int(self.records.config["seed"])
        keys = episode_keys(seed, max(ids) + 1)
        for position, episode in enumerate(ids):
            yield self._replay(position, episode, seed, keys[episode])

    def _replay(self, position: int, episode: int, seed: int, key: Any) -> Episode:
        actions = self._actions(episode)
        state, play_key = self._start(key)
        frames, rewards = [self._frame(state)], []
        total = jnp.zeros(self.env.num_agents, jnp.float32)
        done = False
        for t, joint in enumerate(actions):
            require(
                not done,
                f"{self._where(episode)}: the replay ended at step {t - 1}, but the transcript "
                f"plays it until step {len(actions) - 1}",
            )
            state, reward, done = self._advance(state, play_key, jnp.asarray(joint), t)
            total = total + reward
            rewards.append(np.asarray(reward))
            frames.append(self._frame(state))
            done = bool(done)
        finished = done
        if self.records.end is not None and self.records.end.get("summary") is not None:
            require(
                finished,
                f"{self._where(episode)}: the run finished, but the replay of its "
                f"{len(actions)} recorded steps did not end the episode",
            )
        values = jax.device_get(self._metrics(state, total, jnp.int32(len(actions))))
        # Per-seat vectors stay out, as in the run's summary.
        metrics = {name: float(value) for name, value in values.items() if np.ndim(value) == 0}
        self._check(position, episode, metrics)
        return Episode(
            episode=episode,
            seed=seed + episode,
            actions=np.asarray(actions, np.int64).reshape(len(actions), self.env.num_agents),
            rewards=np.asarray(rewards, np.float64).reshape(len(actions), self.env.num_agents),
            frames=frames,
            finished=finished,
            metrics=metrics,
        )

    def _actions(self, episode: int) -> list[list[int]]:
        """The episode's joint actions, step by step, while it was live."""
        actions = []
        for t, record in enumerate(self.records.steps):
            if episode not in record["live"]:
                break
            actions.append(record["actions"][record["live"].index(episode)])
            require(
                len(actions[-1]) == self.env.num_agents,
                f"{self._where(episode)}: step {t} records {len(actions[-1])} actions for "
                f"{self.env.num_agents} seats",
            )
        later = [t for t, r in enumerate(self.records.steps) if episode in r["live"]]
        require(
            len(later) == len(actions),
            f"{self._where(episode)}: it is live again at step {later[-1]} after it ended",
        )
        return actions

    def _check(self, position: int, episode: int, metrics: dict[str, float]) -> None:
        """The replay's metrics against summary.json's value for this episode."""
        recorded = (self.records.summary or {}).get("episodes") or {}
        for name, value in metrics.items():
            values = recorded.get(name)
            if not isinstance(values, list) or position >= len(values):
                continue
            require(
                bool(np.isclose(value, values[position], rtol=RTOL, atol=ATOL)),
                f"{self._where(episode)}: the replay gives {name}={value:.6g}, summary.json "
                f"says {values[position]:.6g}",
            )

    def _where(self, episode: int) -> str:
        return (
            f"run_dir={self.records.folder} does not replay (another environment version or "
            f"config?): episode {episode}"
        )


def check_means(records: RunRecords, episodes: list[Episode]) -> None:
    """The replay's metric means against the end record's summary (a finished run)."""
    summary = (records.end or {}).get("summary") or {}
    for name, entry in summary.items():
        values = [episode.metrics[name] for episode in episodes if name in episode.metrics]
        if len(values) != len(episodes) or not isinstance(entry, dict) or "mean" not in entry:
            continue
        mean = float(np.mean(values))
        require(
            bool(np.isclose(mean, entry["mean"], rtol=RTOL, atol=ATOL)),
            f"run_dir={records.folder} does not replay (another environment version or "
            f"config?): the replay's mean {name} is {mean:.6g}, the transcript's end record "
            f"says {entry['mean']:.6g}",
        )
