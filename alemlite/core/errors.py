"""Errors raised when an environment or run is configured wrongly."""


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
