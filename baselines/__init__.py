"""Reference MARL agents (IPPO, MAPPO) trained end to end against the jitted environments.

`baselines.load("ippo-dining-5")` returns a shipped pretrained policy
`(key, obs, mask) -> actions`; a path to any exported `policy/` directory works too.
"""

from __future__ import annotations

from pathlib import Path

from alemlite.core.errors import require

PRETRAINED_DIR = Path(__file__).parent / "pretrained"


def pretrained_names() -> tuple[str, ...]:
    """Names of the policies shipped in `baselines/pretrained/`."""
    return tuple(
        sorted(path.name for path in PRETRAINED_DIR.iterdir() if (path / "policy.json").exists())
    )


def load(name: str):
    """A trained policy by shipped name (see `pretrained_names()`) or by exported directory."""
    from baselines.common.checkpoints import import_policy
    from baselines.common.policy import TrainedPolicy

    directory = PRETRAINED_DIR / name
    if not directory.is_dir():
        directory = Path(name)
    require(
        (directory / "policy.json").exists(),
        f"no policy named {name!r}; choose one of {pretrained_names()} or pass an exported "
        "policy directory (a run's policy/best)",
    )
    actor, params, description = import_policy(directory)
    return TrainedPolicy(actor, params, description)
