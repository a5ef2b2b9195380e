"""Errors raised when an environment or run is configured wrongly."""

import re
from collections.abc import Iterator
from contextlib import contextmanager


class ConfigError(Exception):
    """A configuration value is invalid; the message names the value and the fix.

    Not a `ValueError`: the command line's parser (tyro) reports value errors raised while
    it builds a config as parse failures in its own words, and this error must reach the
    `alemlite` command, which prints its message in one line under the flag the user typed.
    """


def require(condition: bool, message: str) -> None:
    """Raise `ConfigError(message)` unless `condition` holds."""
    if not condition:
        raise ConfigError(message)


def require_at_least(minimum: float, **values: float | tuple[float, ...]) -> None:
    """Raise a `ConfigError` naming the first value (or tuple with an entry) below `minimum`."""
    for name, value in values.items():
        entries = value if isinstance(value, tuple) else (value,)
        every = " (every entry)" if isinstance(value, tuple) else ""
        require(
            bool(entries) and all(entry >= minimum for entry in entries),
            f"{name}={value} must be at least {minimum}{every}",
        )


@contextmanager
def named_as(**names: str) -> Iterator[None]:
    """Re-raise a `ConfigError` from the block with each `field=` written as the caller calls
    that field (an environment's `num_agents` is a command's `craft_agents`)."""
    try:
        yield
    except ConfigError as error:
        message = str(error)
        for inner, outer in names.items():
            message = re.sub(rf"(?<![\w.]){re.escape(inner)}=", f"{outer}=", message)
        raise ConfigError(message) from None
