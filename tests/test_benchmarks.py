"""The benchmark scripts run end to end and write what the README quotes (no timing asserted)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks.dining_throughput import DiningBenchConfig, run
from benchmarks.harness import hash_actions


def test_hashed_actions_are_legal_ids_that_vary_by_step_env_and_agent():
    actions = np.asarray(hash_actions(jnp.int32(3), 64, 5, 4))
    assert actions.shape == (64, 5) and actions.min() >= 0 and actions.max() < 4
    assert len(np.unique(actions)) == 4
    assert not np.array_equal(actions, np.asarray(hash_actions(jnp.int32(4), 64, 5, 4)))


def test_dining_benchmark_writes_results_with_the_python_engine_ratio(tmp_path):
    config = DiningBenchConfig(
        table_sizes=(3,), max_log2_envs=1, steps_per_call=4, repeats=1, oracle_steps=50,
        out_dir=tmp_path,
    )  # fmt: skip
    run(config)
    result = json.loads(
        (tmp_path / f"dining_throughput_{jax.devices()[0].platform}.json").read_text()
    )
    assert result["libraries"]["jax"] == jax.__version__ and result["commit"]
    assert {row["num_envs"] for row in result["sweep"]} == {1, 2}
    assert result["best"]["N3_hashed"]["ratio_to_python"] > 0
    assert (tmp_path / f"dining_throughput_{jax.devices()[0].platform}.png").stat().st_size > 0


def test_dining_benchmark_times_the_python_engine_without_the_tests_folder(tmp_path):
    # An installed package has no tests/ beside benchmarks/: run a copy of benchmarks/ alone.
    source = Path(__file__).resolve().parents[1] / "benchmarks"
    shutil.copytree(source, tmp_path / "benchmarks", ignore=shutil.ignore_patterns("results"))
    script = (
        "import benchmarks, benchmarks.dining_throughput as bench;"
        "print(benchmarks.__file__);"
        "print(bench._oracle_timing(3, 20, 1).median_s > 0)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    package_file, timed = done.stdout.split()
    assert Path(package_file).is_relative_to(tmp_path) and timed == "True"
