"""A run folder read back for the viewer: the transcript's header, turns, steps and end, and
the run's summary.json where it belongs to the same run."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alemlite.core.errors import ConfigError, require
from llm_bridge.transcripts import read_records

TurnKey = tuple[int, int, int]  # (episode, step, seat)


@dataclass(frozen=True)
class RunRecords:
    """What a run wrote, the latest record of each turn and step winning (a resumed run asks a
    failed turn again and may then play its step otherwise)."""

    folder: Path
    header: dict[str, Any]
    turns: dict[TurnKey, dict[str, Any]]
    steps: list[dict[str, Any]]
    """step t's record (live episode ids and their joint actions), t = 0, 1, ..."""
    end: dict[str, Any] | None
    """the end record; None while the run is unfinished"""
    summary: dict[str, Any] | None
    """summary.json of the same run, if present"""

    @property
    def config(self) -> dict[str, Any]:
        return self.header["config"]

    @property
    def episode_ids(self) -> list[int]:
        """Every episode of the run: all of them are live at step 0."""
        return list(self.steps[0]["live"]) if self.steps else []

    def llm_seats(self) -> set[int]:
        """Seats a language model played (seats without turns are policies)."""
        return {seat for _, _, seat in self.turns}


def read_run(folder: Path) -> RunRecords:
    """The records of the run in `folder` (the `--out` of `alemlite eval-llm`)."""
    folder = Path(folder)
    path = folder / "transcript.jsonl"
    if not path.is_file():
        runs = sorted(p.parent.name for p in folder.glob("*/transcript.jsonl"))
        hint = (
            f"; it holds the runs {', '.join(runs)} in subfolders (an ablation sweep): view "
            "each one"
            if runs
            else "; give the --out folder of an alemlite eval-llm run"
        )
        raise ConfigError(f"run_dir={folder} has no transcript.jsonl{hint}")
    header, end = None, None
    turns: dict[TurnKey, dict[str, Any]] = {}
    steps: dict[int, dict[str, Any]] = {}
    for record in read_records(path):
        kind = record.get("type")
        if kind == "header":
            header = record
        elif kind == "turn":
            turns[(record["episode"], record["step"], record["seat"])] = record
        elif kind == "step":
            steps[record["step"]] = record
        elif kind == "end":
            end = record
    require(header is not None, f"run_dir={folder}: {path.name} has no header record")
    missing = sorted(set(range(len(steps))) ^ set(steps))
    require(
        not missing,
        f"run_dir={folder}: {path.name} has no record of step {missing[0] if missing else 0} "
        "but has later ones; it cannot be replayed",
    )
    return RunRecords(
        folder=folder,
        header=header,
        turns=turns,
        steps=[steps[t] for t in range(len(steps))],
        end=end,
        summary=_summary(folder / "summary.json", header["config"]),
    )


def _summary(path: Path, config: dict[str, Any]) -> dict[str, Any] | None:
    """summary.json if it was written by the run of this transcript (same config)."""
    try:
        summary = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return summary if summary.get("config") == config else None
