"""Which trained checkpoint is the MARL reference of a setting (`--team checkpoint:best`, and
`alemlite gap`'s MARL reference in each stratum).

A checkpoint plays a setting when its policy fits the environment built from it (the seats,
the map, the observation and the actions; `TrainedPolicy.check_fits`). Among those that
play, the reference is the one trained closest to the setting (fewest recorded options that
differ, such as the reward or the episode length), then a shipped reference with a
`CARD.md` (chosen on validation episodes among every algorithm trained for its setting),
then one that no other trained on from (`--init-actor`: a fine-tuned clone before the
clone), then the first by name.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any

import alemlite
from alemlite.core.environment import Environment
from alemlite.core.errors import ConfigError, require
from alemlite.core.spec import EnvOptions

BEST = "best"
"""The seat spec `checkpoint:best`: the reference of the setting the seat plays."""


@dataclasses.dataclass(frozen=True)
class Fit:
    """A checkpoint that plays a setting, and its recorded options that differ there
    (`{option: (trained, here)}`)."""

    name: str
    off: dict[str, tuple[Any, Any]]


def fit(name: str, env: Environment, options: EnvOptions) -> Fit:
    """How checkpoint `name` plays `env`, built from `options`; a one-line `ConfigError`
    beginning with `name` where it does not."""
    import baselines

    policy = baselines.load(name)
    policy.state_policy(env)
    here = dataclasses.asdict(options)
    off = {
        key: (trained, here[key])
        for key, trained in policy.recorded_settings.items()
        if key in here and here[key] != trained
    }
    return Fit(name, off)


def closest(fits: Iterable[Fit]) -> Fit | None:
    """The reference among checkpoints that play a setting (see the module docstring)."""
    import baselines

    fits = list(fits)
    superseded = {baselines.load(fit.name).description.get("init_actor") for fit in fits}

    def rank(candidate: Fit) -> tuple[int, bool, bool, str]:
        has_card = (baselines.PRETRAINED_DIR / candidate.name / "CARD.md").is_file()
        return (len(candidate.off), not has_card, candidate.name in superseded, candidate.name)

    return min(fits, key=rank, default=None)


def shipped_for(env_name: str) -> tuple[str, ...]:
    """The shipped checkpoints trained on `env_name`."""
    import baselines

    return tuple(
        name
        for name in baselines.pretrained_names()
        if baselines.load(name).description["env"]["name"] == env_name
    )


def best_checkpoint(env_name: str, options: EnvOptions) -> str:
    """The shipped reference of `options` (what `checkpoint:best` seats); refuses in one line
    where no shipped checkpoint plays them."""
    env = alemlite.spec(env_name).build(options)
    fits = []
    for name in shipped_for(env_name):
        try:
            fits.append(fit(name, env, options))
        except ConfigError:
            continue
    found = closest(fits)
    require(
        found is not None,
        f"checkpoint:{BEST}: no shipped checkpoint plays {env_name} ({options.describe()}); "
        f"train one (`alemlite train ippo --env {env_name}` with these options) and seat it "
        "as checkpoint:RUN/policy/best",
    )
    return found.name
