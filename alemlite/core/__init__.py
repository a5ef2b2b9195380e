"""The environment contract and the wrappers every environment plugs into."""

from alemlite.core.environment import Environment, StepResult, TimeLimit, Wrapper
from alemlite.core.errors import ConfigError, require
from alemlite.core.jaxmarl import JaxMARLAdapter
from alemlite.core.logging import LogState, LogWrapper
from alemlite.core.registry import (
    DEFAULT_ENV,
    make,
    register,
    registered_environments,
    resolve_options,
    spec,
)
from alemlite.core.spaces import Box, Discrete
from alemlite.core.spec import SHARED_OPTIONS, Curriculum, EnvOptions, EnvSpec
from alemlite.core.vec import VecEnv, VecState

__all__ = [
    "DEFAULT_ENV",
    "SHARED_OPTIONS",
    "Box",
    "ConfigError",
    "Curriculum",
    "Discrete",
    "EnvOptions",
    "EnvSpec",
    "Environment",
    "JaxMARLAdapter",
    "LogState",
    "LogWrapper",
    "StepResult",
    "TimeLimit",
    "VecEnv",
    "VecState",
    "Wrapper",
    "make",
    "register",
    "registered_environments",
    "require",
    "resolve_options",
    "spec",
]
