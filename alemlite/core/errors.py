"""Errors raised when an environment or run is configured wrongly."""


class ConfigError(ValueError):
    """A configuration value is invalid; the message names the value and the fix."""


def require(condition: bool, message: str) -> None:
    """Raise `ConfigError(message)` unless `condition` holds."""
    if not condition:
        raise ConfigError(message)
