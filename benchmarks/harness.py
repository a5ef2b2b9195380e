"""The measurement protocol every benchmark follows (see the performance spec).

Compile ahead of time and report compile time apart; warm up once; time at
least five `block_until_ready` repeats and report the median with min and max;
write one JSON per run that carries the run's provenance (`benchmarks/provenance.py`:
commit, dirty tree, command, machine, device, library versions, wall time), beside a
plot of the sweep.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp

from alemlite.core.errors import require
from benchmarks.peers import protocol
from benchmarks.peers.protocol import hash_actions
from benchmarks.provenance import RunProvenance, begin_run

RESULTS_DIR = Path(__file__).resolve().parent / "results"
# Unpublished runs: one fresh folder per run, runs/bench/BENCHMARK/UTC-TIME.
RUNS_DIR = Path("runs") / "bench"


@dataclass(frozen=True)
class Timing:
    compile_s: float
    median_s: float
    min_s: float
    max_s: float
    repeats: int


@cache
def load_results(name: str) -> dict[str, Any]:
    """A published results file under benchmarks/results/, read once per process."""
    return json.loads((RESULTS_DIR / name).read_text())


def time_compiled(function: Callable, *args: Any, repeats: int = 5) -> Timing:
    """AOT-compile `function(*args)`, warm up once, then time `repeats` runs: the protocol
    the peers are timed with, so both sides of every ratio are measured alike."""
    return Timing(**protocol.time_compiled(function, *args, repeats=repeats))


def time_python(function: Callable[[], Any], repeats: int = 5) -> Timing:
    """Time a plain-Python callable the same way (no compile step)."""
    function()
    durations = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        durations.append(time.perf_counter() - start)
    return Timing(0.0, statistics.median(durations), min(durations), max(durations), repeats)


def format_interval(summary: Mapping[str, float], digits: int = 2) -> str:
    """`mean [low, high]` of a summary, or the mean alone when the interval has no width."""
    if summary["low"] == summary["high"]:
        return f"{summary['mean']:.{digits}f}"
    mean, low, high = (f"{summary[key]:.{digits}f}" for key in ("mean", "low", "high"))
    return f"{mean} [{low}, {high}]"


def fresh_run_folder(benchmark: str) -> Path:
    """A new, empty folder `runs/bench/BENCHMARK/UTC-TIME[-K]` that no other run writes."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    for attempt in range(1000):
        folder = RUNS_DIR / benchmark / (stamp if attempt == 0 else f"{stamp}-{attempt}")
        try:
            folder.mkdir(parents=True)
            return folder
        except FileExistsError:
            continue
    raise RuntimeError(f"no free run folder under {RUNS_DIR / benchmark}")


def output_path(out: Path | None, publish: bool, published: Path, benchmark: str) -> Path:
    """Where a benchmark writes: `out` when given, `published` (a file or folder under
    benchmarks/results/ or docs/) with `publish`, and otherwise a fresh run folder (holding a
    file named like `published` when `published` is a file)."""
    if out is not None:
        return out
    if publish:
        return published
    folder = fresh_run_folder(benchmark)
    return folder / published.name if published.suffix else folder


def refuse_earlier_runs(run_dirs: Iterable[Path], reuse_runs: bool) -> None:
    """Training afresh would delete these run directories: refuse unless `reuse_runs` says
    to collect (or resume) them."""
    earlier = [path for path in run_dirs if path.exists()]
    require(
        reuse_runs or not earlier,
        f"{earlier[0] if earlier else ''} holds an earlier run; pass --reuse-runs to collect or "
        "resume it, or --runs-dir to train elsewhere (or remove it to train it again)",
    )


@dataclass(frozen=True)
class ResultsFolder:
    """The output options of every benchmark that writes one results folder."""

    out: Path | None = None
    """The folder the results go to; default: a fresh folder under runs/bench/
    (benchmarks/results/ with --publish)."""
    publish: bool = False
    """Write the published results in benchmarks/results/, replacing them."""
    allow_dirty: bool = False
    """Publish from a tree with uncommitted changes (the results are marked dirty)."""

    def begin(self, benchmark: str) -> tuple[Path, RunProvenance]:
        """The folder this run writes and its provenance, checked before any work."""
        out = output_path(self.out, self.publish, RESULTS_DIR, benchmark)
        return out, begin_run([out], self.allow_dirty, self.publish)


def write_results(name: str, payload: dict[str, Any], out_dir: Path, run: RunProvenance) -> Path:
    """Write `payload` and the run's provenance as `<name>_<platform>.json`; returns the path."""
    out_dir.mkdir(parents=True, exist_ok=True)
    provenance = run.describe()
    path = out_dir / f"{name}_{provenance['platform']}.json"
    body = {"benchmark": name, **provenance, **_plain(payload)}
    path.write_text(json.dumps(body, indent=2) + "\n")
    return path


def _plain(value: Any) -> Any:
    if isinstance(value, Timing):
        return asdict(value)
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    return value


# How benchmark actions are chosen: a cheap hash of (step, env, agent), which times the
# environment alone (the performance spec); uniform over every action id; uniform over the
# legal actions (the action mask), as a random policy plays.
ACTIONS = ("hashed", "uniform_random", "legal_random")


def vec_rollout(
    env: Any,
    num_envs: int,
    steps: int,
    actions: str,
    pool_size: int = 0,
    refresh_per_step: int = 1,
) -> Callable[[jax.Array], jax.Array]:
    """`run(key)`: reset a `VecEnv` batch and play `steps` auto-resetting steps, the actions
    chosen as `actions` (one of `ACTIONS`) says."""
    from alemlite.core import VecEnv, threefry

    require(actions in ACTIONS, f"actions={actions!r}; choose one of {ACTIONS}")
    vec = VecEnv(env, num_envs, pool_size=pool_size, refresh_per_step=refresh_per_step)
    params = env.default_params
    shape = (num_envs, env.num_agents)

    def choose(step, key, state):
        if actions == "hashed":
            return hash_actions(step, num_envs, env.num_agents, env.num_actions)
        if actions == "uniform_random":
            return jax.random.randint(key, shape, 0, env.num_actions)
        legal = vec.action_mask(state, params)
        return jax.random.categorical(key, jnp.where(legal, 0.0, -jnp.inf)).astype(jnp.int32)

    def run(key: jax.Array) -> jax.Array:
        _, state = vec.reset(key, params)

        def one_step(carry, step):
            state, key = carry
            # The keys `jax.random.split` makes, from one fused kernel: on CPU JAX's own
            # hash is a loop of small kernels that would be timed (and compiled) with the step.
            key, env_key, policy_key = threefry.split(key, 3)
            chosen = choose(step, policy_key, state)
            _, state, reward, _, _ = vec.step(env_key, state, chosen, params)
            return (state, key), reward.sum()

        _, rewards = jax.lax.scan(one_step, (state, key), jnp.arange(steps))
        return rewards.sum()

    return run
