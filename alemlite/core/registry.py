"""Name -> environment factory, so `alemlite.make("dining", ...)` builds any environment."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from alemlite.core.environment import Environment
from alemlite.core.errors import ConfigError

# Factories are imported lazily so that `import alemlite` stays cheap.
_FACTORIES: dict[str, str | Callable[..., Environment]] = {
    "dining": "alemlite.envs.dining:make_dining",
    "craft": "alemlite.envs.craft:make_craft",
}


def register(name: str, factory: str | Callable[..., Environment]) -> None:
    """Register `factory` (a callable or a "module:attribute" path) under `name`."""
    if name in _FACTORIES:
        raise ConfigError(f"environment {name!r} is already registered; choose another name")
    _FACTORIES[name] = factory


def registered_environments() -> tuple[str, ...]:
    return tuple(sorted(_FACTORIES))


def make(name: str, **config: Any) -> Environment:
    """Build the environment `name` from static config keyword arguments."""
    if name not in _FACTORIES:
        known = ", ".join(registered_environments())
        raise ConfigError(f"unknown environment {name!r}; choose one of: {known}")
    factory = _FACTORIES[name]
    if isinstance(factory, str):
        module_name, attribute = factory.split(":")
        factory = getattr(importlib.import_module(module_name), attribute)
    return factory(**config)
