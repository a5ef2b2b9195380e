"""Test-session settings shared by every test file."""

from pathlib import Path

import jax

# Many files compile the same programs (a Craft step of one size, a dining rollout): a
# persistent compilation cache lets each be compiled once per session and machine, by
# whichever test worker gets there first. Only the compile is skipped; results are the same.
CACHE = Path(__file__).resolve().parents[1] / ".pytest_cache" / "jax-compilation"


def pytest_configure(config):
    jax.config.update("jax_compilation_cache_dir", str(CACHE))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
