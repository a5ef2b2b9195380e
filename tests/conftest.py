"""Test-session settings shared by every test file."""

import os
from pathlib import Path

import jax
import pytest

# Many files compile the same programs (a Craft step of one size, a dining rollout): a
# persistent compilation cache lets each be compiled once per session and machine, by
# whichever test worker gets there first. Only the compile is skipped; results are the same.
CACHE = Path(__file__).resolve().parents[1] / ".pytest_cache" / "jax-compilation"


def pytest_addoption(parser):
    parser.addoption(
        "--compile-report", metavar="DIR", default=None,
        help="write each test's JAX trace, lowering and compile seconds to DIR "
        "(tests/compile_report.py)",
    )  # fmt: skip


# The tests run small programs a few times each, so XLA's optimisation passes cost more than
# they save: without them the suite compiles its programs in about a third less time. The
# commands the tests start (README commands, trainers) inherit the setting.
os.environ["JAX_DISABLE_MOST_OPTIMIZATIONS"] = "1"


# xdist (`--dist loadfile`) hands out whole files as the two workers free up; a heavy file
# handed out last runs alone while the other worker idles. So the heaviest files (cold
# `--durations`, 2 workers) start first, and xdist keeps this order (as with
# `--no-loadscope-reorder`) instead of its own, which puts files with many tests first.
HEAVIEST_FIRST = (
    "test_finetune.py",
    "test_llm_real_model.py",
    "test_baselines_training.py",
    "test_benchmarks.py",
    "test_baselines_craft.py",
    "test_llama_server.py",
    "test_llm_cli.py",
    "test_craft_golden.py",
    "test_readme_commands.py",
    "test_contract.py",
)


def pytest_collection_modifyitems(items):
    rank = {name: place for place, name in enumerate(HEAVIEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(HEAVIEST_FIRST)))


def pytest_configure(config):
    if hasattr(config.option, "loadscopereorder"):  # xdist is loaded
        config.option.loadscopereorder = False
    jax.config.update("jax_disable_most_optimizations", True)
    jax.config.update("jax_compilation_cache_dir", str(CACHE))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
    folder = config.getoption("--compile-report")
    if folder:
        from tests.compile_report import CompileReport

        worker = getattr(config, "workerinput", {}).get("workerid", "main")
        config.pluginmanager.register(CompileReport(Path(folder), worker), "compile_report")


@pytest.fixture(scope="module")
def xla_optimised():
    """XLA's optimisations back on for a module: for programs whose results must be those of
    every run outside the suite, or that run long enough to repay the slower compile."""
    jax.config.update("jax_disable_most_optimizations", False)
    yield
    jax.config.update("jax_disable_most_optimizations", True)


@pytest.fixture(scope="module")
def one_torch_thread():
    """torch on one thread for a module: the tests' models are too small to share out (a
    second thread waits at every barrier beside the other test worker), and one thread
    sums in the same order on every machine, so a learning test's run is the same in CI."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)
