"""alemlite: JAX-vectorised environments for measuring multi-agent coordination."""

from alemlite.core import (
    ConfigError,
    Environment,
    JaxMARLAdapter,
    LogWrapper,
    VecEnv,
    make,
    register,
    registered_environments,
)

__all__ = [
    "ConfigError",
    "Environment",
    "JaxMARLAdapter",
    "LogWrapper",
    "VecEnv",
    "make",
    "register",
    "registered_environments",
]
__version__ = "0.1.0"
