"""`alemlite bench gpu` (or `python -m benchmarks.gpu_suite`): what an accelerator shows, in one
command.

Four sections, in order, each under its share of one time budget (time a section leaves
unused passes to the next): dining and Craft env-only sweeps, the batch growing fourfold or
more up to the largest that fits in device memory (agent steps/s, device memory per
environment, compile time), then IPPO whole-update speed on both at several batch sizes,
and the projected wall time of one billion IPPO agent steps at the fastest. A sweep ends at
its largest batch, at an out-of-memory error (recorded with the batch that failed), or where
its next point would overrun the budget (recorded, and printed); every section measures at
least its first point. The timing is the harness's (`time_batch`, `training.measure`); the
full scale times three repeats per point (median, min and max), to fit the budget.

One JSON, `gpu_suite_<device>.json` (`--publish`: in benchmarks/results/), names the
device and holds the targets set for one NVIDIA H200, each met, missed, or unmeasured (on
another device); a plot beside it.

    alemlite bench gpu                  # about 8 minutes on one GPU
    alemlite bench gpu --scale tiny     # well under a minute on a CPU (CI)
"""

from __future__ import annotations

import dataclasses
import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import jax
import matplotlib.pyplot as plt
from tqdm import tqdm

import alemlite
from alemlite.core.errors import require
from alemlite.core.spec import EnvOptions
from baselines.common.config import NetworkConfig
from benchmarks.engine import training
from benchmarks.engine.throughput import pool_for, state_bytes, time_batch
from benchmarks.harness import ResultsFolder, write_results

AGENT_STEPS = 1_000_000_000  # the projection's horizon
TARGET_DEVICE = "NVIDIA H200"


@dataclass(frozen=True)
class Scale:
    """The sizes one scale sweeps (`full`: a GPU; `tiny`: a CPU in CI)."""

    envs: tuple[str, ...]
    """the environments run unless `--envs` names others"""
    small_options: bool
    """each environment's small options (its spec's), else its defaults"""
    env_log2: dict[str, tuple[int, ...]]
    """env-only sweep: num_envs = 2**k, in order (per environment; `other`: the rest)"""
    env_steps_per_call: tuple[int, int]
    """steps per timed call: the most, and the fewest at the largest batches"""
    env_work_per_call: int
    """env steps per timed call the step count aims at (steps = work / num_envs)"""
    train_log2: dict[str, tuple[int, ...]]
    """IPPO whole updates: num_envs = 2**k"""
    num_steps: int
    """rollout length of an update"""
    network: NetworkConfig
    repeats: int
    time_budget_s: float


SCALES = {
    "full": Scale(
        envs=("dining", "craft"),
        small_options=False,
        # Every batch size is a compile (Craft's: tens of seconds): few points, growing fast
        # toward the batch that no longer fits (2**24 Craft states, 5.5 kB each, would fill
        # most of an H200).
        env_log2={"craft": (12, 16, 20, 22, 24), "other": (12, 16, 20, 22, 24, 26)},
        env_steps_per_call=(64, 8),
        env_work_per_call=2**23,
        train_log2={"craft": (10, 12, 14, 16), "other": (12, 14, 16, 18)},
        num_steps=32,
        network=NetworkConfig(),
        repeats=3,
        time_budget_s=420.0,
    ),
    "tiny": Scale(
        envs=("dining",),  # a Craft update alone compiles for minutes on a small CPU
        small_options=True,
        env_log2={"craft": (1,), "other": (0, 2, 4)},
        env_steps_per_call=(8, 2),
        env_work_per_call=64,
        train_log2={"craft": (2,), "other": (2,)},
        num_steps=4,
        network=NetworkConfig(hidden_size=8, num_layers=1),
        repeats=2,
        time_budget_s=600.0,
    ),
}
# Each section's weight in the budget (Craft's compiles and steps cost the most).
WEIGHTS = {"env": {"craft": 0.34, "other": 0.08}, "train": {"craft": 0.44, "other": 0.14}}


def planned(table: dict[str, Any], env: str) -> Any:
    """An environment's entry in a per-environment table (`other`: any it does not name)."""
    return table.get(env, table["other"])


@dataclass(frozen=True)
class GpuSuiteConfig(ResultsFolder):
    """Env-only sweeps to the largest batch that fits, IPPO training speed and the projected
    time of one billion agent steps, on dining and Craft (one JSON and a plot)."""

    scale: Literal["full", "tiny"] = "full"
    """full: the accelerator run (about 8 minutes); tiny: a CPU check of the suite itself"""
    time_budget_s: float | None = None
    """the whole suite's budget; a sweep's next point that would overrun its share is not
    started (the JSON says so); None: the scale's (full: 420 s)"""
    envs: tuple[str, ...] = ()
    """the environments (alemlite.registered_environments()); empty: the scale's (full:
    dining and Craft, which the targets name; tiny: dining)"""

    def __post_init__(self) -> None:
        known = alemlite.registered_environments()
        for env in self.envs:
            require(env in known, f"envs={env!r} is not registered; choose from {known}")
        require(
            len(set(self.envs)) == len(self.envs),
            f"envs={list(self.envs)} must name each environment once",
        )
        require(
            self.time_budget_s is None or self.time_budget_s > 0,
            f"time_budget_s={self.time_budget_s} must be positive (or left out)",
        )

    @property
    def sizes(self) -> Scale:
        return SCALES[self.scale]

    @property
    def environments(self) -> tuple[str, ...]:
        return self.envs or self.sizes.envs

    @property
    def budget_s(self) -> float:
        return self.sizes.time_budget_s if self.time_budget_s is None else self.time_budget_s

    def options(self, env: str) -> EnvOptions:
        env_spec = alemlite.spec(env)
        return env_spec.options(**(env_spec.small_options if self.sizes.small_options else {}))


# ---- a sweep that stops at the budget or at the device's memory ---------------------------
def is_out_of_memory(error: Exception) -> bool:
    """Whether XLA ran out of device memory (at compile or run time)."""
    return isinstance(error, jax.errors.JaxRuntimeError) and bool(
        re.search(r"RESOURCE_EXHAUSTED|[Oo]ut of memory", str(error))
    )


def sweep(
    sizes: Sequence[int],
    measure: Callable[[int], dict[str, Any]],
    work: Callable[[int], float],
    deadline: float,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """`measure(num_envs)` for each size in turn: the rows, and how the sweep ended.

    Each row carries `compile_s`, its compile time; the rest of its wall time is taken to
    grow with `work(num_envs)` (the steps a timed call takes). Before each point but the
    first, its wall time is predicted so from the last, and the point is not started if it
    would end after `deadline`. An out-of-memory error ends the sweep where it happened.
    """
    rows: list[dict[str, Any]] = []
    for num_envs in sizes:
        if rows:
            last = rows[-1]
            running = max(0.0, last["wall_s"] - last["compile_s"])
            predicted = last["compile_s"] + running * work(num_envs) / work(last["num_envs"])
            if clock() + predicted > deadline:
                return rows, {
                    "reason": "time_budget",
                    "next_num_envs": num_envs,
                    "predicted_s": predicted,
                    "left_s": max(0.0, deadline - clock()),
                }
        started = clock()
        try:
            row = measure(num_envs)
        except jax.errors.JaxRuntimeError as error:
            if not is_out_of_memory(error):
                raise
            return rows, {
                "reason": "out_of_memory",
                "num_envs": num_envs,
                "largest_that_fit": rows[-1]["num_envs"] if rows else None,
                "error": str(error).strip().splitlines()[0][:300],
            }
        rows.append({**row, "wall_s": clock() - started})
    return rows, {"reason": "largest_batch", "num_envs": rows[-1]["num_envs"]}


def steps_per_call(scale: Scale, num_envs: int) -> int:
    """Fewer steps per timed call at large batches, so each call does similar work."""
    most, fewest = scale.env_steps_per_call
    return max(fewest, min(most, scale.env_work_per_call // num_envs))


def fastest(rows: list[dict[str, Any]], key: str, keep: Sequence[str]) -> dict[str, Any] | None:
    """The `keep` fields of the row with the highest `key`; None when nothing was measured."""
    if not rows:
        return None
    best = max(rows, key=lambda row: row[key])
    return {name: best[name] for name in ("num_envs", *keep)}


# ---- the sections --------------------------------------------------------------------------
def peak_device_memory() -> dict[str, int] | None:
    """The device's own memory counters, where it keeps them (GPUs, TPUs; not the CPU)."""
    stats = jax.devices()[0].memory_stats()
    if not stats or "peak_bytes_in_use" not in stats:
        return None
    return {key: int(stats[key]) for key in ("peak_bytes_in_use", "bytes_limit") if key in stats}


def memory_per_env(before: dict | None, after: dict | None, num_envs: int, state: int) -> dict:
    """Device memory per environment of one point: where the device counts its memory and the
    point raised the peak, that peak (fixed costs included) over the batch; where it keeps
    no counters, the bytes of one environment's state."""
    if after is None:
        return {"memory_source": "state_size", "bytes_per_env": state}
    if before is not None and after["peak_bytes_in_use"] <= before["peak_bytes_in_use"]:
        # an earlier, larger point set the peak: this one's own is not known
        return {"memory_source": "below_earlier_peak", "bytes_per_env": None, **after}
    return {
        "memory_source": "device_peak_bytes_in_use",
        "bytes_per_env": after["peak_bytes_in_use"] / num_envs,
        **after,
    }


def env_section(config: GpuSuiteConfig, env_name: str, deadline: float) -> dict[str, Any]:
    """The env-only sweep of one environment (hashed actions, auto-reset)."""
    options = config.options(env_name)
    env = alemlite.spec(env_name).build(options)
    scale = config.sizes
    per_env_state = state_bytes(env)

    def measure(num_envs: int) -> dict[str, Any]:
        steps = steps_per_call(scale, num_envs)
        pool = pool_for(env_name, num_envs, pool_size=64)
        before = peak_device_memory()
        row = time_batch(env, num_envs, steps, scale.repeats, "hashed", pool)
        memory = memory_per_env(before, peak_device_memory(), num_envs, per_env_state)
        return {
            **row,
            **memory,
            "steps_per_call": steps,
            "pool_size": pool,
            "compile_s": row["timing"]["compile_s"],
        }

    sizes = [2**k for k in planned(scale.env_log2, env_name)]
    rows, end = sweep(sizes, measure, lambda n: n * steps_per_call(scale, n), deadline)
    return {
        "env": env_name,
        "options": dataclasses.asdict(options),
        "num_agents": env.num_agents,
        "state_bytes_per_env": per_env_state,
        "sweep": rows,
        "end": end,
        "best": fastest(rows, "agent_steps_per_s", ("agent_steps_per_s", "env_steps_per_s")),
        "bytes_per_env_at_largest": rows[-1]["bytes_per_env"] if rows else None,
    }


def train_section(config: GpuSuiteConfig, env_name: str, deadline: float) -> dict[str, Any]:
    """IPPO whole updates of one environment at several batch sizes, against env only."""
    scale = config.sizes

    def measure(num_envs: int) -> dict[str, Any]:
        point = training.measure(
            training.TrainingSpeedConfig(
                env=env_name,
                options=config.options(env_name),
                algorithms=("ippo",),
                log2_envs=(int(math.log2(num_envs)),),
                num_steps=scale.num_steps,
                network=scale.network,
                repeats=scale.repeats,
            )
        )["points"][0]
        return {
            "num_envs": num_envs,
            "agent_steps_per_update": point["agent_steps_per_call"],
            "ippo_agent_steps_per_s": point["ippo_agent_steps_per_s"],
            "env_only_agent_steps_per_s": point["env_only_agent_steps_per_s"],
            "ippo_fraction_of_env_only": point["ippo_fraction_of_env_only"],
            "ippo_timing": dataclasses.asdict(point["ippo"]),
            "env_only_timing": dataclasses.asdict(point["env_only"]),
            # both programs of the point (the update's, the env-only rollout's)
            "compile_s": point["ippo"].compile_s + point["env_only"].compile_s,
        }

    sizes = [2**k for k in planned(scale.train_log2, env_name)]
    rows, end = sweep(sizes, measure, float, deadline)
    best = fastest(rows, "ippo_agent_steps_per_s", ("ippo_agent_steps_per_s",))
    projection = None
    if best is not None:
        timing = next(r for r in rows if r["num_envs"] == best["num_envs"])["ippo_timing"]
        seconds = AGENT_STEPS / best["ippo_agent_steps_per_s"] + timing["compile_s"]
        projection = {
            "agent_steps": AGENT_STEPS,
            "num_envs": best["num_envs"],
            "seconds": seconds,
            "minutes": seconds / 60,
            "how": "one billion / IPPO agent steps per second at the fastest batch, plus the "
            "update's compile time (evaluation and checkpoints not counted)",
        }
    return {
        "env": env_name,
        "options": dataclasses.asdict(config.options(env_name)),
        "num_steps": scale.num_steps,
        "network": dataclasses.asdict(scale.network),
        "sweep": rows,
        "end": end,
        "best": best,
        "projected_1b_agent_steps": projection,
    }


# ---- targets -------------------------------------------------------------------------------
def targets(sections: dict[str, dict[str, Any]], device_kind: str) -> list[dict[str, Any]]:
    """The H200 targets, each `met`, `missed` or (measured elsewhere) `unmeasured`."""
    wanted = [
        ("craft env-only agent steps/s", "env", "craft", ">=", 10e6),
        ("1B IPPO agent steps on dining, seconds", "train", "dining", "<", 600.0),
        ("1B IPPO agent steps on Craft, seconds", "train", "craft", "<", 3600.0),
    ]
    rows = []
    on_target_device = device_kind == TARGET_DEVICE
    for name, kind, env, relation, value in wanted:
        section = sections.get(f"{kind}/{env}")
        row = {"target": name, "relation": relation, "value": value, "device": TARGET_DEVICE}
        if section is None or section["best"] is None:  # left out of this run, or no point fit
            rows.append({**row, "measured_here": None, "status": "unmeasured"})
            continue
        if kind == "env":
            here = section["best"]["agent_steps_per_s"]
        else:
            here = section["projected_1b_agent_steps"]["seconds"]
        met = here >= value if relation == ">=" else here < value
        status = ("met" if met else "missed") if on_target_device else "unmeasured"
        rows.append({**row, "measured_here": here, "status": status})
    return rows


def device_slug(device_kind: str) -> str:
    """`NVIDIA H200` -> `nvidia_h200`: the device in the results file's name."""
    return re.sub(r"[^a-z0-9]+", "_", device_kind.lower()).strip("_") or "device"


def run(config: GpuSuiteConfig) -> dict[str, Any]:
    """What this device shows, in one run within a time budget: dining and Craft env-only
    sweeps to the largest batch that fits, IPPO training speed, and the projected time of one
    billion agent steps (one JSON naming the device, and a plot)."""
    out, provenance = config.begin("gpu_suite")
    device = jax.devices()[0]
    started = time.monotonic()
    sections: dict[str, dict[str, Any]] = {}
    plan = [(kind, env) for kind in ("env", "train") for env in config.environments]
    weights = [planned(WEIGHTS[kind], env) for kind, env in plan]
    done = 0.0
    for (kind, env_name), weight in zip(tqdm(plan, desc="gpu suite"), weights, strict=True):
        done += weight  # time a section leaves unused passes to the next
        deadline = started + config.budget_s * done / sum(weights)
        measure = env_section if kind == "env" else train_section
        section = measure(config, env_name, deadline)
        sections[f"{kind}/{env_name}"] = {**section, "elapsed_s": time.monotonic() - started}
    ended_early = [name for name, s in sections.items() if s["end"]["reason"] != "largest_batch"]
    payload = {
        "device": {
            "kind": device.device_kind,
            "platform": device.platform,
            "count": jax.device_count(),
        },
        "config": {**dataclasses.asdict(config), "out": str(out)},
        "scale": dataclasses.asdict(config.sizes),
        "envs": list(config.environments),
        "time_budget_s": config.budget_s,
        "suite_s": time.monotonic() - started,
        "ended_early": ended_early,
        "sections": sections,
        "targets": targets(sections, device.device_kind),
    }
    written = write_results("gpu_suite", payload, out, provenance)
    path = written.with_name(f"gpu_suite_{device_slug(device.device_kind)}.json")
    written.replace(path)
    plot(payload, path.with_suffix(".png"))
    print_summary(payload)
    print(f"wrote {path} and {path.with_suffix('.png')}")
    return payload


def print_summary(payload: dict[str, Any]) -> None:
    for name, section in payload["sections"].items():
        best = section["best"]
        if best is None:
            print(f"{name:>14}: nothing measured; {section['end']}")
            continue
        speed = best.get("agent_steps_per_s", best.get("ippo_agent_steps_per_s"))
        line = f"{name:>14}: {speed:.3e} agent steps/s at {best['num_envs']} envs"
        if section.get("projected_1b_agent_steps"):
            line += f"; 1B agent steps in {section['projected_1b_agent_steps']['minutes']:.1f} min"
        end = section["end"]
        if end["reason"] == "out_of_memory":
            line += f"; out of memory at {end['num_envs']} envs"
        elif end["reason"] == "time_budget":
            line += f"; ended early by the time budget before {end['next_num_envs']} envs"
        print(line)
    for target in payload["targets"]:
        here = target["measured_here"]
        print(
            f"target ({target['device']}) {target['target']} {target['relation']} "
            f"{target['value']:.3g}: {target['status']}"
            + ("" if here is None else f" (here {here:.3g})")
        )


def plot(payload: dict[str, Any], path: Path) -> Path:
    figure, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    sections = payload["sections"]
    for env in payload["envs"]:
        rows = sections[f"env/{env}"]["sweep"]
        axes[0].plot(
            [r["num_envs"] for r in rows], [r["agent_steps_per_s"] for r in rows], "o-", label=env
        )
        rows = sections[f"train/{env}"]["sweep"]
        for key, style, label in (
            ("env_only_agent_steps_per_s", "s:", "env only"),
            ("ippo_agent_steps_per_s", "o-", "IPPO whole update"),
        ):
            envs, speeds = [r["num_envs"] for r in rows], [r[key] for r in rows]
            axes[1].plot(envs, speeds, style, label=f"{env}, {label}")
    for axis, title in zip(axes, ("env only (hashed actions)", "training"), strict=True):
        axis.set_xscale("log", base=2)
        axis.set_yscale("log")
        axis.set_xlabel("parallel environments")
        axis.set_ylabel("agent steps / s")
        axis.set_title(title)
        axis.grid(True, which="both", alpha=0.3)
        axis.legend(fontsize=7)
    device = payload["device"]
    figure.suptitle(f"alemlite on {device['kind']} ({device['platform']})")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)
    return path
