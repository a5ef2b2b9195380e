"""Run outputs: JSONL metrics, the learning-curve plot and held-out summaries."""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from alemlite.stats import mean_ci, summarise


def _plain(value: Any) -> Any:
    """JSON-safe: arrays become lists, NaN becomes null."""
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, np.ndarray | np.generic):
        return _plain(value.tolist())
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Path):
        return str(value)
    return value


def to_json(value: Any) -> str:
    return json.dumps(_plain(value), indent=2) + "\n"


class MetricsLog:
    """Append-only `metrics.jsonl`: one `train` record per update, one `eval` per checkpoint."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def truncate_after(self, update: int) -> None:
        """Drop records past `update` (a resumed run rewrites them).

        A last line cut short (a run killed while appending; its chunk had no checkpoint
        yet) goes too. The file is replaced whole, so a run stopped here loses nothing.
        """
        if not self.path.exists():
            return
        lines = self.path.read_text().splitlines(keepends=True)
        if lines and not lines[-1].endswith("\n"):
            lines.pop()
        kept = [line for line in lines if line.strip() and json.loads(line)["update"] <= update]
        partial = self.path.with_name(f".{self.path.name}.partial")
        partial.write_text("".join(kept))
        partial.replace(self.path)

    def append(self, records: list[dict[str, Any]]) -> None:
        with self.path.open("a") as file:
            for record in records:
                file.write(json.dumps(_plain(record)) + "\n")

    def read(self) -> list[dict[str, Any]]:
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text().splitlines() if line]


def train_records(metrics: Mapping[str, np.ndarray], first_update: int, agent_steps_before: int):
    """One record per update from chunk metrics `(updates, seeds)`: means over seeds.

    `agent_steps` counts up from `agent_steps_before` by each update's `agent_steps`
    metric (seats in play, the same for every seed).
    """
    num_updates = next(iter(metrics.values())).shape[0]
    agent_steps = agent_steps_before + np.cumsum(np.asarray(metrics["agent_steps"])[:, 0])
    records = []
    for index in range(num_updates):
        record: dict[str, Any] = {
            "kind": "train",
            "update": first_update + index + 1,
            "agent_steps": int(agent_steps[index]),
        }
        for name, values in metrics.items():
            if name == "agent_steps":
                continue
            per_seed = values[index]
            finite = per_seed[np.isfinite(per_seed)]
            record[name] = float(finite.mean()) if finite.size else None
        record["episode/return_per_seed"] = metrics["episode/return"][index]
        records.append(record)
    return records


def held_out_summary(per_episode: Mapping[str, np.ndarray]) -> dict[str, Any]:
    """Per-seed mean returns, a CI across seeds, and every metric pooled over episodes with CIs.

    `per_episode` maps metric names to `(seeds, episodes)` arrays.
    """
    per_seed = per_episode["episode_return"].mean(axis=1)
    mean, low, high = mean_ci(per_seed)
    pooled = {name: np.asarray(values).reshape(-1) for name, values in per_episode.items()}
    return {
        "return_per_seed": per_seed.tolist(),
        "return_across_seeds": {"mean": mean, "low": low, "high": high, "n": int(per_seed.size)},
        "episodes": summarise(pooled),
    }


def plot_learning_curve(
    records: list[dict[str, Any]],
    references: Mapping[str, float],
    path: Path,
    title: str,
    stage_name: str = "value",
) -> None:
    """Training return (seed mean, min-max band), validation returns and reference lines;
    a curriculum's stages are marked by the value of its option (`stage_name`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    train = [r for r in records if r["kind"] == "train"]
    evals = [r for r in records if r["kind"] == "eval"]
    figure, axis = plt.subplots(figsize=(7, 4.2))
    if train:
        steps = np.array([r["agent_steps"] for r in train])
        per_seed = np.array(
            [[np.nan if v is None else v for v in r["episode/return_per_seed"]] for r in train]
        )
        with warnings.catch_warnings():  # updates where no episode ended are NaN: left blank
            warnings.simplefilter("ignore", RuntimeWarning)
            mean, low, high = (
                np.nanmean(per_seed, 1),
                np.nanmin(per_seed, 1),
                np.nanmax(per_seed, 1),
            )
        axis.plot(steps, mean, label="training episodes (seed mean)")
        axis.fill_between(steps, low, high, alpha=0.25)
    if evals:
        steps = [r["agent_steps"] for r in evals]
        curriculum = "stage_validation_return" in evals[0]
        label = f"validation at the largest {stage_name}" if curriculum else "validation"
        axis.plot(steps, [np.mean(r["validation_return"]) for r in evals], "o-", label=label)
        if curriculum:
            axis.plot(
                steps,
                [np.mean(r["stage_validation_return"]) for r in evals],
                "s:",
                label=f"validation at the stage's {stage_name}",
            )
    _mark_curriculum_stages(axis, train, stage_name)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for index, (name, value) in enumerate(sorted(references.items())):
        axis.axhline(
            value,
            linestyle="--",
            linewidth=1,
            color=colours[(index + 3) % len(colours)],
            label=name,
        )
    axis.set_xlabel("agent steps (per seed)")
    axis.set_ylabel("episode return (mean over seats)")
    axis.set_title(title)
    axis.legend(fontsize=7, loc="best")
    figure.tight_layout()
    figure.savefig(path, dpi=120)
    plt.close(figure)


def _mark_curriculum_stages(axis, train: list[dict[str, Any]], stage_name: str) -> None:
    """The value of each curriculum stage, with a dotted line where it began."""
    previous_value, previous_steps = None, 0
    for record in train:
        value = record.get("curriculum/value")
        if value is not None and value != previous_value:
            where = (0, 0)  # the first stage: at the left edge
            if previous_value is not None:
                axis.axvline(previous_steps, color="grey", linestyle=":", linewidth=1)
                where = (previous_steps, 0)
            axis.annotate(
                f"{stage_name}={value}",
                where,
                # a first value of 0 (a free Craft building) is a stage like any other
                xycoords=("axes fraction" if previous_value is None else "data", "axes fraction"),
                fontsize=7,
                xytext=(2, 3),
                textcoords="offset points",
            )
            previous_value = value
        previous_steps = record["agent_steps"]
