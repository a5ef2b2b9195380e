"""Evaluation reports: a metrics table with confidence intervals, and its JSON."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from alemlite.stats import summarise


def format_table(summary: Mapping[str, Mapping[str, Any]], title: str = "") -> str:
    """A plain-text table: metric, mean, 95% interval, n, interval method."""
    rows = [("metric", "mean", "95% CI", "n", "CI")]
    for name, entry in summary.items():
        interval = f"[{entry['low']:.3f}, {entry['high']:.3f}]"
        rows.append((name, f"{entry['mean']:.3f}", interval, str(entry["n"]), entry["ci"]))
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(([title] if title else []) + lines)


def fingerprint(parts: Mapping[str, Any], length: int = 16) -> str:
    """A stable hash of everything that decides a result (JSON with sorted keys)."""
    text = json.dumps(parts, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:length]


def config_fingerprint(config: Mapping[str, Any]) -> str:
    """A short stable hash of a config (its output location left out)."""
    return fingerprint({name: value for name, value in config.items() if name != "out"}, 10)


def report_path(out: Path, label: str, config: Mapping[str, Any]) -> Path:
    """`out/LABEL_FINGERPRINT.json`: runs with other settings never share a file (the label
    is for people; the fingerprint covers every setting), and a rerun of the same settings
    replaces its own report."""
    return Path(out) / f"{label}_{config_fingerprint(config)}.json"


def write_report(
    path: Path,
    config: Mapping[str, Any],
    episodes: Mapping[str, np.ndarray],
    provenance: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Write config, summary and per-episode values to `path` (JSON), with the run's
    `provenance` block (commit, dirty flag, command) when given; returns the summary."""
    summary = summarise(episodes)
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {
        "config": dict(config),
        "summary": summary,
        "episodes": {name: np.asarray(values).tolist() for name, values in episodes.items()},
        **({"provenance": dict(provenance)} if provenance is not None else {}),
    }
    path.write_text(json.dumps(body, indent=2, default=str) + "\n")
    return summary


def read_episodes(path: Path) -> dict[str, np.ndarray]:
    """Per-episode values of a report written by `write_report`."""
    body = json.loads(Path(path).read_text())
    return {name: np.asarray(values) for name, values in body["episodes"].items()}
