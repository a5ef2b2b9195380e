"""Reference MARL agents (IPPO, MAPPO) trained end to end against the jitted environments.

`baselines.load("ippo-dining-5")` returns a shipped pretrained policy
`(key, obs, mask) -> actions`; a path to any exported `policy/` directory works too.
"""

from __future__ import annotations

from pathlib import Path

from alemlite.core.errors import ConfigError, require

PRETRAINED_DIR = Path(__file__).parent / "pretrained"


def pretrained_names() -> tuple[str, ...]:
    """Names of the policies shipped in `baselines/pretrained/`."""
    return tuple(
        sorted(path.name for path in PRETRAINED_DIR.iterdir() if (path / "policy.json").exists())
    )


def load(name: str):
    """A trained policy by shipped name (see `pretrained_names()`) or by exported directory.

    Refusals (an unknown name, a damaged `policy.json` or parameters, and later an
    environment the policy was not trained on) are one-line `ConfigError`s that begin
    with `name`.
    """
    from baselines.common.checkpoints import POLICY_FILE, import_policy
    from baselines.common.policy import TrainedPolicy

    directory = PRETRAINED_DIR / name
    if not directory.is_dir():
        directory = Path(name)
    require(
        (directory / POLICY_FILE).exists(),
        f"{name}: no such policy; choose one of {pretrained_names()} or pass an exported "
        "policy directory (a run's policy/best)",
    )
    try:
        actor, params, description = import_policy(directory)
    except ConfigError as error:
        raise ConfigError(f"{name}: {error}") from None
    return TrainedPolicy(actor, params, description, name)
