"""The entry point of every `python -m benchmarks.*` script.

tyro builds the script's config from its flags; a value the script refuses (a `ConfigError`,
raised while the config is built or while it runs) prints as one line naming the value and
the fix, with exit status 2, as the `alemlite` commands do; `--debug` shows the traceback.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import tyro

from alemlite.core.errors import ConfigError
from benchmarks.provenance import command_line

Config = TypeVar("Config")


def run_script(
    config_type: type[Config],
    run: Callable[[Config], Any],
    args: Sequence[str] | None = None,
) -> None:
    """Parse `args` (default: the command line) into `config_type` and call `run` on it."""
    args = list(sys.argv[1:] if args is None else args)
    debug = "--debug" in args
    args = [arg for arg in args if arg != "--debug"]
    try:
        run(tyro.cli(config_type, args=args))
    except ConfigError as error:
        if debug:
            raise
        program = command_line().split(" ")[: 3 if command_line().startswith("python -m") else 1]
        print(f"{' '.join(program)}: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
