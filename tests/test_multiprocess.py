"""Two processes on the loopback address (JAX's CPU collectives, gloo) train one data-parallel
IPPO run on dining; it equals the single-process run on the same global batch.

Each child parses the `alemlite train` flags, `--distributed.*` included, the way the command
does and trains through the project's trainer; process 0 alone writes the run's files, and
every process writes its shard of each checkpoint.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import textwrap
import time
import typing
from pathlib import Path

import jax
import numpy as np
import pytest
import tyro

import baselines
from alemlite.core.errors import ConfigError
from baselines.common.checkpoints import RunCheckpoints
from baselines.common.config import DistributedConfig, TrainConfig
from baselines.common.resume import differences_that_break_resume
from baselines.common.trainer import program_key, train

REPO = Path(__file__).resolve().parents[1]
NUM_PROCESSES = 2
NUM_ENVS = 4  # the global batch: two environments per process
# Bounded waits: a child that cannot join or hangs in a collective fails the test, with its log.
CHILD_TIMEOUT_S = 600

TINY_RUN = [
    "ippo",
    *("--env", "dining", "--num-agents", "3", "--max-steps", "6"),
    *("--num-envs", str(NUM_ENVS), "--num-steps", "8", "--num-seeds", "1"),
    *("--num-updates", "2", "--updates-per-chunk", "2", "--eval-interval", "2"),
    *("--eval-episodes", "4", "--test-episodes", "4", "--no-progress"),
    *("--network.hidden-size", "8", "--network.num-layers", "1"),
    *("--ppo.num-epochs", "2", "--ppo.num-minibatches", "2"),
]

# A child: the flags as `alemlite train` parses them, then the trainer; it reports what it saw.
CHILD = textwrap.dedent(
    """
    import json, sys
    from tests.test_multiprocess import parse_train_flags
    from baselines.common.trainer import train

    config = parse_train_flags(sys.argv[1:])
    summary = train(config)
    import jax

    print("REPORT " + json.dumps({
        "process_index": jax.process_index(),
        "process_count": jax.process_count(),
        "local_devices": jax.local_device_count(),
        "devices": jax.device_count(),
        "final_return": summary["final"]["return_per_seed"],
    }), flush=True)
    """
)


def parse_train_flags(args: list[str]) -> TrainConfig:
    """`args` parsed into the config `alemlite train` would run."""
    from alemlite_app.cli import COMMANDS, _load, with_env_options

    config_type = typing.get_type_hints(_load(COMMANDS[("train",)]))["config"]
    return tyro.cli(with_env_options(config_type, args), args=args)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def saved_state(run_dir: Path, like=None):
    """The latest checkpoint of a run, on this process's one device; `like` (a checkpoint as
    restored) lays it out where the run that saved it had other devices."""
    if like is not None:
        device = jax.sharding.SingleDeviceSharding(jax.devices()[0])
        like = jax.tree.map(
            lambda leaf: jax.ShapeDtypeStruct(leaf.shape, leaf.dtype, sharding=device), like
        )
    checkpoints = RunCheckpoints(run_dir / "checkpoints")
    update = checkpoints.latest_update()
    state, meta = checkpoints.restore(update, like)
    checkpoints.close()
    return update, state, meta


def records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def start_processes(tmp_path: Path, run_dir: Path) -> list[tuple[subprocess.Popen, Path]]:
    port = free_port()
    environment = {**os.environ, "PYTHONPATH": str(REPO), "JAX_PLATFORMS": "cpu"}
    environment.pop("XLA_FLAGS", None)  # one CPU device per process
    children = []
    for process_id in range(NUM_PROCESSES):
        log = tmp_path / f"process{process_id}.log"
        flags = [
            *TINY_RUN,
            *("--out", str(run_dir), "--distributed.enabled"),
            *("--distributed.coordinator", f"127.0.0.1:{port}"),
            *("--distributed.num-processes", str(NUM_PROCESSES)),
            *("--distributed.process-id", str(process_id)),
        ]
        with log.open("w") as stream:
            child = subprocess.Popen(
                [sys.executable, "-c", CHILD, *flags],
                cwd=REPO,
                env=environment,
                stdout=stream,
                stderr=subprocess.STDOUT,
            )
        children.append((child, log))
    return children


def wait_for(children: list[tuple[subprocess.Popen, Path]]) -> list[dict]:
    """Each child's report; stops every child and fails, showing their logs, on a failure."""
    deadline = time.monotonic() + CHILD_TIMEOUT_S
    try:
        for child, _ in children:
            child.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        pass
    finally:
        for child, _ in children:
            if child.poll() is None:
                child.kill()
                child.wait()
    logs = [log.read_text() for _, log in children]
    shown = "\n".join(
        f"--- process {index} (exit {child.returncode}):\n{text[-4000:]}"
        for index, ((child, _), text) in enumerate(zip(children, logs, strict=True))
    )
    assert all(child.returncode == 0 for child, _ in children), shown
    reports = [
        json.loads(line.removeprefix("REPORT "))
        for text in logs
        for line in text.splitlines()
        if line.startswith("REPORT ")
    ]
    assert len(reports) == NUM_PROCESSES, shown
    return reports


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """(single-process run dir and summary, two-process run dir and the children's reports)."""
    tmp_path = tmp_path_factory.mktemp("multiprocess")
    two = tmp_path / "two"
    children = start_processes(tmp_path, two)  # they compile while this process trains
    try:
        one = tmp_path / "one"
        summary = train(parse_train_flags([*TINY_RUN, "--out", str(one)]))
    finally:
        reports = wait_for(children)
    return one, summary, two, reports


def test_each_process_joins_the_run_with_its_own_device(runs):
    _, _, _, reports = runs
    assert sorted(report["process_index"] for report in reports) == list(range(NUM_PROCESSES))
    for report in reports:
        assert report["process_count"] == NUM_PROCESSES
        assert (report["local_devices"], report["devices"]) == (1, NUM_PROCESSES)


def test_two_processes_train_the_same_parameters_as_one(runs):
    one, summary, two, reports = runs
    update, expected, _ = saved_state(one)
    assert update == 2
    two_update, actual, _ = saved_state(two, like=expected)
    assert two_update == update
    assert jax.tree.structure(actual) == jax.tree.structure(expected)
    paths = jax.tree_util.tree_flatten_with_path(expected)[0]
    for (path, want), got in zip(paths, jax.tree.leaves(actual), strict=True):
        np.testing.assert_allclose(
            got, want, rtol=1e-5, atol=1e-6, err_msg=jax.tree_util.keystr(path)
        )
    # Each process wrote its own shard of the environments' state.
    shards = sorted(p.name for p in (two / "checkpoints" / "2" / "state").glob("ocdbt.process_*"))
    assert shards == [f"ocdbt.process_{index}" for index in range(NUM_PROCESSES)]
    # Both processes report the same held-out return as the single-process run.
    for report in reports:
        assert report["final_return"] == pytest.approx(summary["final"]["return_per_seed"])
    for which in ("final", "best"):
        exported = baselines.load(str(two / "policy" / which))
        reference = baselines.load(str(one / "policy" / which))
        for got, want in zip(
            jax.tree.leaves(exported.params), jax.tree.leaves(reference.params), strict=True
        ):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_only_process_zero_writes_the_run_files(runs):
    one, _, two, _ = runs
    # Every record once: a second writer would have appended its own copies.
    assert [(r["kind"], r["update"]) for r in records(two)] == [
        (r["kind"], r["update"]) for r in records(one)
    ]
    for name in ("config.json", "learning_curve.png", "summary.json"):
        assert (two / name).exists(), name
    saved = TrainConfig.load(two / "config.json")
    assert saved.distributed.process_id == 0
    assert differences_that_break_resume(saved, TrainConfig.load(one / "config.json")) == []


def test_the_distributed_flags_parse_and_bad_values_are_refused():
    config = parse_train_flags(
        [
            *TINY_RUN,
            "--distributed.enabled",
            *("--distributed.coordinator", "10.0.0.1:1234"),
            *("--distributed.num-processes", "4", "--distributed.process-id", "3"),
        ]
    )
    assert config.distributed == DistributedConfig(True, "10.0.0.1:1234", 4, 3)
    # The launch is not part of what a run trains: the compiled program ignores it.
    assert program_key(config).to_dict() == program_key(parse_train_flags(TINY_RUN)).to_dict()
    # Alone, the switch leaves every value to JAX's cluster detection.
    assert parse_train_flags([*TINY_RUN, "--distributed.enabled"]).distributed == (
        DistributedConfig(enabled=True)
    )
    refusals = {
        "distributed.process_id=2 must be below distributed.num_processes=2": dict(
            enabled=True, num_processes=2, process_id=2
        ),
        "distributed.coordinator='10.0.0.1' must be HOST:PORT": dict(
            enabled=True, coordinator="10.0.0.1"
        ),
        "distributed.num_processes=2 joins a multi-process run; add --distributed.enabled": dict(
            num_processes=2
        ),
        "distributed.num_processes=0 must be at least 1": dict(enabled=True, num_processes=0),
        "distributed.process_id=-1 must be at least 0": dict(enabled=True, process_id=-1),
    }
    for message, values in refusals.items():
        with pytest.raises(ConfigError, match=re.escape(message)) as refusal:
            DistributedConfig(**values)
        assert "\n" not in str(refusal.value)
