"""Name -> environment spec, so `alemlite.make("dining", ...)` builds any environment and
every command finds what it needs to know about one (`spec(name)`).

Adding an environment: one folder under `alemlite/envs/` whose package holds a `SPEC`
(`alemlite.core.spec.EnvSpec`), and one line in `_SPECS` below (or `register(SPEC)` at run time).
"""

from __future__ import annotations

import importlib
from typing import Any

from alemlite.core.environment import Environment
from alemlite.core.errors import ConfigError
from alemlite.core.spec import EnvOptions, EnvSpec

# Specs are imported lazily ("module:attribute"), so that `import alemlite` stays cheap.
_SPECS: dict[str, str | EnvSpec] = {
    "dining": "alemlite.envs.dining.spec:SPEC",
    "craft": "alemlite.envs.craft.spec:SPEC",
    "matrix": "alemlite.envs.matrix.spec:SPEC",
}
DEFAULT_ENV = "dining"


def register(env_spec: EnvSpec) -> None:
    """Register an environment at run time (one outside `alemlite/envs/`)."""
    if env_spec.name in _SPECS:
        raise ConfigError(
            f"environment {env_spec.name!r} is already registered; choose another name"
        )
    _SPECS[env_spec.name] = env_spec


def registered_environments() -> tuple[str, ...]:
    return tuple(sorted(_SPECS))


def spec(name: str) -> EnvSpec:
    """The spec of environment `name`; refuses an unknown name in one line."""
    if name not in _SPECS:
        known = ", ".join(registered_environments())
        raise ConfigError(f"unknown environment {name!r}; choose one of: {known}")
    found = _SPECS[name]
    if isinstance(found, str):
        module_name, attribute = found.split(":")
        found = _SPECS[name] = getattr(importlib.import_module(module_name), attribute)
    return found


def make(name: str, **config: Any) -> Environment:
    """Build the environment `name` from static config keyword arguments."""
    return spec(name).make(**config)


def resolve_options(env: str, options: EnvOptions | None) -> EnvOptions:
    """`options` for environment `env`: its defaults when None; refuses another env's options.

    Commands keep `env` and `options` side by side; their `__post_init__` calls this, so a
    config built in code (`EvalConfig(env="craft")`) gets the right defaults."""
    env_spec = spec(env)
    if options is None:
        return env_spec.options()
    if not isinstance(options, env_spec.options):
        raise ConfigError(
            f"env={env!r} takes {env_spec.options.__name__}, not {type(options).__name__}; "
            f"build the options with alemlite.spec({env!r}).options(...)"
        )
    return options
