"""Training survives its faults: stopped runs resume exactly, damage is found, runs do not collide.

Every run here is one small configuration on dining with 3 philosophers. The reference
run trains uninterrupted in this process; two `alemlite train` runs start
(and compile) beside it and are stopped at their first checkpoint, one by SIGINT
(Ctrl-C), one by SIGKILL. Resumed here, each must end exactly where the reference
ended. The other faults are made on copies of the reference run, so every resume
reuses its compiled program.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

import chex
import numpy as np
import pytest
from etils import epath

import alemlite
from alemlite.core.errors import ConfigError
from alemlite_app.cli import main
from baselines.common.checkpoints import DIGEST_FILE, LOCK_FILE, RunCheckpoints, run_lock
from baselines.common.config import NetworkConfig, PPOConfig, TrainConfig
from baselines.common.reporting import MetricsLog
from baselines.common.trainer import make_env, train

REPO = Path(__file__).resolve().parents[1]
CONFIG = TrainConfig(
    algorithm="ippo",
    env="dining",
    options=alemlite.spec("dining").options(num_agents=3, max_steps=8),
    num_envs=4,
    num_steps=8,
    num_updates=12,
    updates_per_chunk=2,
    eval_interval=2,
    eval_episodes=4,
    test_episodes=4,
    progress=False,
    network=NetworkConfig(hidden_size=8, num_layers=1),
    ppo=PPOConfig(num_epochs=1, num_minibatches=1),
)
# The same run on the command line.
FLAGS = [
    *("ippo", "--env", "dining", "--num-agents", "3", "--max-steps", "8"),
    *("--num-envs", "4", "--num-steps", "8", "--num-updates", "12", "--updates-per-chunk", "2"),
    *("--eval-interval", "2", "--eval-episodes", "4", "--test-episodes", "4", "--no-progress"),
    *("--network.hidden-size", "8", "--network.num-layers", "1"),
    *("--ppo.num-epochs", "1", "--ppo.num-minibatches", "1"),
]
ENV = make_env(CONFIG)
FIRST_CHECKPOINT = CONFIG.eval_interval
LAST, BEFORE_LAST = CONFIG.num_updates, CONFIG.num_updates - CONFIG.eval_interval
STOP_TIMEOUT_S = 300  # a safety net for a hung child, never a measurement


@dataclass(frozen=True)
class StoppedRun:
    run_dir: Path
    pid: int
    returncode: int
    stderr: str
    lock_after_stop: str | None  # the lock file's contents once the run had stopped
    refusal: str | None  # what a second run into the busy directory was told


def stop_at_first_checkpoint(run_dir: Path, stop: signal.Signals, xla_cache: Path) -> StoppedRun:
    """Start the run on the command line; once its first checkpoint is saved, stop it.

    The runs share a persistent compilation cache, so only the first one compiles.
    """
    environment = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "JAX_PLATFORMS": "cpu",
        "JAX_COMPILATION_CACHE_DIR": str(xla_cache),
        "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0",
        "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES": "0",
    }
    # A terminal delivers Ctrl-C to the command; a test started from a background job
    # inherits an ignored SIGINT, which Python would keep, so the child restores its handler.
    command = [
        sys.executable,
        "-c",
        "import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
        "sys.argv[0] = 'alemlite'; runpy.run_module('alemlite_app.cli', run_name='__main__')",
        *("train", *FLAGS, "--out", str(run_dir)),
    ]
    process = subprocess.Popen(
        command, cwd=REPO, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    refusal = None
    try:
        marker = run_dir / "checkpoints" / str(FIRST_CHECKPOINT) / DIGEST_FILE
        while not marker.exists() and process.poll() is None:
            time.sleep(0.01)
        if process.poll() is None:
            if stop == signal.SIGKILL:
                # Meanwhile a second run into the same directory is refused.
                try:
                    train(replace(CONFIG, out=str(run_dir)), env=ENV)
                except ConfigError as error:
                    refusal = str(error)
            process.send_signal(stop)
        _, stderr = process.communicate(timeout=STOP_TIMEOUT_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    lock = run_dir / LOCK_FILE
    return StoppedRun(
        run_dir,
        process.pid,
        process.returncode,
        stderr.decode(errors="replace"),
        lock.read_text() if lock.exists() else None,
        refusal,
    )


@pytest.fixture(scope="module")
def stopped_runs(tmp_path_factory) -> dict[signal.Signals, Future]:
    """The two command-line runs, one after the other while the reference run trains."""
    root = tmp_path_factory.mktemp("stopped")
    with ThreadPoolExecutor(max_workers=1) as pool:
        yield {
            stop: pool.submit(stopped_run, root / stop.name, stop, root / "xla")
            for stop in (signal.SIGINT, signal.SIGKILL)
        }


def stopped_run(run_dir: Path, stop: signal.Signals, xla_cache: Path, tries: int = 3) -> StoppedRun:
    """A run stopped at its first checkpoint. Python drops a Ctrl-C that lands in a garbage
    collection callback ("Exception ignored in ..."), and the tiny run then simply finishes:
    that start is thrown away and the run started again, as a person would press Ctrl-C."""
    for _ in range(tries):
        stopped = stop_at_first_checkpoint(run_dir, stop, xla_cache)
        if not (stop == signal.SIGINT and stopped.returncode == 0):
            return stopped
        shutil.rmtree(run_dir)
    return stopped


@pytest.fixture(scope="module")
def reference(stopped_runs, tmp_path_factory) -> tuple[Path, dict]:
    """The uninterrupted run (after the stopped runs have started)."""
    run_dir = tmp_path_factory.mktemp("reference")
    return run_dir, train(replace(CONFIG, out=str(run_dir)), env=ENV)


def copy_of(reference, tmp_path: Path) -> Path:
    run_dir = tmp_path / "run"
    shutil.copytree(reference[0], run_dir)
    return run_dir


def resume(run_dir: Path, **changes) -> dict:
    return train(replace(CONFIG, out=str(run_dir), resume=True, **changes), env=ENV)


def final_state(run_dir: Path):
    checkpoints = RunCheckpoints(run_dir / "checkpoints")
    state, meta = checkpoints.restore(checkpoints.latest_update(), None)
    checkpoints.close()
    return state, meta


def metric_records(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def assert_same_run(run_dir: Path, reference) -> None:
    """The final checkpoint, the metrics and the held-out report equal the reference run's."""
    expected_state, expected_meta = final_state(reference[0])
    state, meta = final_state(run_dir)
    assert meta["update"] == expected_meta["update"] == LAST
    chex.assert_trees_all_close(state, expected_state, rtol=1e-5, atol=1e-6)
    expected_records, records = metric_records(reference[0]), metric_records(run_dir)
    assert [(r["kind"], r["update"]) for r in records] == [
        (r["kind"], r["update"]) for r in expected_records
    ]
    for expected, actual in zip(expected_records, records, strict=True):
        assert actual.keys() == expected.keys()
        for name, value in expected.items():
            if not isinstance(value, str):
                np.testing.assert_allclose(actual[name], value, rtol=1e-5, atol=1e-6, err_msg=name)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["num_updates"] == LAST
    for name in ("final", "best"):
        assert summary[name]["return_per_seed"] == pytest.approx(
            reference[1][name]["return_per_seed"]
        )
    assert not (run_dir / LOCK_FILE).exists()


def garble(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def largest_file(directory: Path) -> Path:
    return max((p for p in directory.rglob("*") if p.is_file()), key=lambda p: p.stat().st_size)


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGKILL], ids=["sigint", "sigkill"])
def test_a_stopped_run_resumes_to_the_uninterrupted_run(stop, stopped_runs, reference):
    stopped = stopped_runs[stop].result()
    # Ctrl-C: the command's own exit (130) and line; SIGKILL: killed by the signal.
    assert stopped.returncode == (130 if stop == signal.SIGINT else -stop), stopped.stderr[-3000:]
    if stop == signal.SIGINT:
        line = (
            "alemlite train: interrupted; what it wrote is kept; rerun it with --resume to "
            "continue from its last checkpoint"
        )
        assert line in stopped.stderr.splitlines(), stopped.stderr[-3000:]
    assert not (stopped.run_dir / "summary.json").exists()
    if stop == signal.SIGINT:
        assert stopped.lock_after_stop is None  # released on the way out
    else:  # left behind by the killed process, which no longer holds it: stale
        assert json.loads(stopped.lock_after_stop)["pid"] == stopped.pid
    resume(stopped.run_dir)
    assert_same_run(stopped.run_dir, reference)


def test_a_run_stopped_while_logging_a_checkpoint_resumes_with_every_record(
    reference, tmp_path, monkeypatch
):
    """Stopped as the records of its second checkpoint are written: none is lost on resume."""
    run_dir = tmp_path / "run"
    append = MetricsLog.append

    def stop_at_the_second_checkpoint(log, records):
        if records[-1]["kind"] == "eval" and records[-1]["update"] == 2 * FIRST_CHECKPOINT:
            raise KeyboardInterrupt
        append(log, records)

    monkeypatch.setattr(MetricsLog, "append", stop_at_the_second_checkpoint)
    with pytest.raises(KeyboardInterrupt):
        train(replace(CONFIG, out=str(run_dir)), env=ENV)
    monkeypatch.undo()
    resume(run_dir)
    assert_same_run(run_dir, reference)


def test_a_second_run_into_a_busy_run_directory_is_refused(stopped_runs):
    stopped = stopped_runs[signal.SIGKILL].result()
    assert stopped.refusal is not None
    assert "is in use by another training run" in stopped.refusal
    assert f"process {stopped.pid} on " in stopped.refusal
    assert "pass another --out" in stopped.refusal and "\n" not in stopped.refusal


def test_a_held_lock_refuses_and_a_stale_one_is_taken(reference, tmp_path):
    run_dir = copy_of(reference, tmp_path)
    with run_lock(run_dir), pytest.raises(ConfigError, match="in use by another training run"):
        resume(run_dir)
    # A lock file whose process is gone (no process holds the lock) does not stop a run.
    (run_dir / LOCK_FILE).write_text(json.dumps({"host": "h", "pid": 2**22 + 1, "started": "-"}))
    resume(run_dir)
    assert not (run_dir / LOCK_FILE).exists()


def test_a_resume_below_the_updates_done_is_refused(reference, tmp_path):
    run_dir = copy_of(reference, tmp_path)
    before = {name: (run_dir / name).read_bytes() for name in ("summary.json", "config.json")}
    with pytest.raises(ConfigError) as refusal:
        resume(run_dir, num_updates=BEFORE_LAST)
    assert str(refusal.value) == (
        f"num_updates={BEFORE_LAST} is below the {LAST} updates this run has already done; "
        f"pass --num-updates {LAST} or more (a resume continues a run, it cannot rewind it)"
    )
    assert {name: (run_dir / name).read_bytes() for name in before} == before


def test_a_raised_target_is_recorded_in_the_run_config(reference, tmp_path):
    run_dir = copy_of(reference, tmp_path)
    summary = resume(run_dir, num_updates=LAST + CONFIG.eval_interval)
    assert summary["num_updates"] == LAST + CONFIG.eval_interval
    saved = TrainConfig.load(run_dir / "config.json")
    assert saved.num_updates == LAST + CONFIG.eval_interval and not saved.resume


@pytest.mark.parametrize("sums", [True, False], ids=["found-by-sums", "found-by-restore"])
def test_a_damaged_latest_checkpoint_is_set_aside_and_the_run_resumes_before_it(
    sums, reference, tmp_path, capfd
):
    """Without its sums (a run killed between saving and summing) the restore finds the damage."""
    run_dir = copy_of(reference, tmp_path)
    latest = run_dir / "checkpoints" / str(LAST)
    damaged = largest_file(latest / "state")
    garble(damaged)
    if not sums:
        (latest / DIGEST_FILE).unlink()
    capfd.readouterr()
    resume(run_dir)
    notes = [line for line in capfd.readouterr().err.splitlines() if line.startswith("checkpoint")]
    set_aside = run_dir / "damaged_checkpoints" / str(LAST)
    assert len(notes) == 1
    assert notes[0].startswith(f"checkpoint {latest} is damaged (")
    assert notes[0].endswith(f"moved it to {set_aside} and resuming from update {BEFORE_LAST}")
    if sums:
        assert f"{damaged.relative_to(latest).as_posix()} differs from what was saved" in notes[0]
    else:
        assert "does not restore: " in notes[0]
    assert (set_aside / damaged.relative_to(latest)).exists()  # kept, not deleted
    assert_same_run(run_dir, reference)


def test_when_no_checkpoint_is_whole_the_refusal_says_how_to_start_afresh(reference, tmp_path):
    run_dir = copy_of(reference, tmp_path)
    for update in (LAST, BEFORE_LAST):
        largest_file(run_dir / "checkpoints" / str(update) / "state").write_bytes(b"")
    with pytest.raises(ConfigError) as refusal:
        resume(run_dir)
    message = str(refusal.value)
    assert message.startswith(f"out={str(run_dir)!r} has no checkpoint that restores (")
    assert f"checkpoint {LAST}: " in message and f"checkpoint {BEFORE_LAST}: " in message
    assert message.endswith(
        "; start the run afresh without --resume in a new --out (this one keeps its "
        "metrics and checkpoints for inspection)"
    )
    assert "\n" not in message
    assert sorted(p.name for p in (run_dir / "checkpoints").iterdir()) == sorted(
        [str(BEFORE_LAST), str(LAST)]
    )


def test_a_metrics_line_cut_short_by_a_kill_is_dropped_on_resume(reference, tmp_path):
    run_dir = copy_of(reference, tmp_path)
    with (run_dir / "metrics.jsonl").open("a") as log:
        log.write('{"kind": "train", "update": 13, "agent_st')
    resume(run_dir)
    assert_same_run(run_dir, reference)


def test_a_full_disk_stops_training_in_one_line_and_the_run_resumes(
    reference, tmp_path, monkeypatch, capfd
):
    """The disk fills while the third checkpoint is saved (orbax's own writes fail, in its
    threads): one line, nothing of that checkpoint left, the metrics kept; once there is
    space, --resume ends where the uninterrupted run ended."""
    run_dir = tmp_path / "run"
    third = run_dir / "checkpoints" / str(3 * FIRST_CHECKPOINT)  # and its temporary folder
    write_text = epath.abstract_path.Path.write_text

    def disk_full(path, *args, **kwargs):
        if str(path).startswith(str(third)):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return write_text(path, *args, **kwargs)

    monkeypatch.setattr(epath.abstract_path.Path, "write_text", disk_full)
    capfd.readouterr()
    with pytest.raises(SystemExit) as caught:
        main(["train", *FLAGS, "--out", str(run_dir)])
    monkeypatch.undo()
    assert caught.value.code == 2
    # XLA's own logger may add a line on a loaded machine; it is not the command's output.
    err = capfd.readouterr().err.splitlines()
    assert [line for line in err if not re.match(r"[IWEF]\d{4} ", line)] == [
        f"alemlite train: error: could not write to {run_dir} (the disk is full); its metrics "
        "and every whole checkpoint are kept: free space and rerun it with --resume to continue "
        "from the last checkpoint"
    ]
    # Whole checkpoints only: a temporary folder orbax may leave counts for nothing (and goes).
    steps = [path.name for path in (run_dir / "checkpoints").iterdir() if path.name.isdigit()]
    assert sorted(steps) == [str(FIRST_CHECKPOINT), str(2 * FIRST_CHECKPOINT)]
    assert max(record["update"] for record in metric_records(run_dir)) == 3 * FIRST_CHECKPOINT
    assert not (run_dir / LOCK_FILE).exists()
    resume(run_dir)
    assert_same_run(run_dir, reference)
