"""alemlite: JAX-vectorised environments for measuring multi-agent coordination."""

from alemlite.core import (
    ConfigError,
    Environment,
    EnvOptions,
    EnvSpec,
    JaxMARLAdapter,
    LogWrapper,
    VecEnv,
    make,
    register,
    registered_environments,
    spec,
)

__all__ = [
    "ConfigError",
    "EnvOptions",
    "EnvSpec",
    "Environment",
    "JaxMARLAdapter",
    "LogWrapper",
    "VecEnv",
    "make",
    "register",
    "registered_environments",
    "spec",
]
__version__ = "0.1.0"
