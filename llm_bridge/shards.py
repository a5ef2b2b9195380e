"""Sharded evaluation: `--shard I/N` plays one block of a run's episodes, `alemlite merge`
joins the blocks into the run's own result.

A run of E episodes on base seed S splits into N contiguous blocks; shard I (1 to N) plays
episodes `(I-1)*E//N` up to `I*E//N - 1`, each on its own seed S + i as in the unsharded
run, and writes its own transcript and summary (or report, for a team without llm seats)
into its own `--out`, with a `shard` block in its config. Per-episode results depend only
on an episode's seed, so shards may run in any order, on any number of processes or hosts.

`alemlite merge` checks that the shards are of one configuration (equal configs apart from
the shard), that together they play every episode exactly once, and writes one result:
the per-episode values in episode order and the summary computed from them (so both equal
the unsharded run's), the LLM turn counts and tokens summed. What cannot be merged exactly
is combined and named in the result's `merged` block: wall time is summed (the compute
spent, not the elapsed time of shards run side by side), the latency mean is weighted by
answered turns, and its percentiles are the largest of the shards' (an upper bound).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import tyro

from alemlite.core.errors import ConfigError, require
from alemlite.outputs import writable_folder
from alemlite.report import format_table, report_path
from alemlite.stats import summarise
from llm_bridge.transcripts import write_file

SHARD_KEYS = ("shard", "first_episode", "episodes")
"""What differs between the configs of two shards of one run."""
SUMMED = (
    "requests",
    "reused_from_transcript",
    "retries",
    "failed_requests",
    "prompt_tokens",
    "completion_tokens",
    "cost",
    "wall_s",
)
MAXED = ("latency_p50_s", "latency_p95_s")
WEIGHTED = ("latency_mean_s",)
_SHARD_REPORT = re.compile(r"^(?P<label>.+)_shard\d+of\d+_[0-9a-f]+\.json$")


@dataclass(frozen=True)
class Shard:
    """Block `index` (1 to `count`) of a run's episodes."""

    index: int
    count: int

    def episodes(self, total: int) -> range:
        """The episode ids this shard plays of a run of `total` episodes."""
        return range((self.index - 1) * total // self.count, self.index * total // self.count)

    def describe(self, total: int) -> dict[str, int]:
        """The `shard` block of a shard's config."""
        return {"index": self.index, "count": self.count, "of_episodes": total}

    @property
    def label(self) -> str:
        return f"shard{self.index}of{self.count}"


def parse_shard(text: str, episodes: int) -> Shard:
    """`I/N` as a shard of a run of `episodes` episodes; refuses anything else in one line."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
    require(
        match is not None,
        f"shard={text} must be I/N (shard I of N, I from 1 to N), e.g. 1/4",
    )
    index, count = int(match.group(1)), int(match.group(2))
    require(
        1 <= index <= count,
        f"shard={text} must have I from 1 to N (shard I of N); there are {count} shards",
    )
    require(
        count <= episodes,
        f"shard={text} splits {episodes} episodes into {count} shards, leaving some empty; "
        f"use at most {episodes} shards or more --episodes",
    )
    return Shard(index, count)


# ---- reading shards ---------------------------------------------------------------------


@dataclass(frozen=True)
class _Part:
    path: Path
    body: dict[str, Any]

    @property
    def shard(self) -> dict[str, int]:
        return self.body["config"]["shard"]

    @property
    def played(self) -> range:
        first = self.body["config"].get("first_episode", 0)
        return range(first, first + self.body["config"]["episodes"])

    @property
    def is_llm_run(self) -> bool:
        return "usage" in self.body


def _results_in(path: Path) -> dict[str, Path]:
    """The shard's result files by ablation ("" for a plain run): `path` itself, its
    summary.json, its one report, or one summary.json per ablation folder."""
    path = Path(path)
    require(path.exists(), f"{path} does not exist; give the --out folder of a --shard run")
    if path.is_file():
        return {"": path}
    if (path / "summary.json").is_file():
        return {"": path / "summary.json"}
    ablations = {file.parent.name: file for file in sorted(path.glob("*/summary.json"))}
    if ablations:
        return ablations
    reports = sorted(file for file in path.glob("*.json") if _SHARD_REPORT.match(file.name))
    require(
        len(reports) == 1,
        f"{path} holds {len(reports)} shard reports ({', '.join(r.name for r in reports)}); "
        "give the report file itself"
        if reports
        else f"{path} holds no shard result (summary.json, or an `alemlite eval --shard` "
        "report); give the --out folder of a --shard run",
    )
    return {"": reports[0]}


def _read(path: Path) -> _Part:
    try:
        body = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ConfigError(f"{path} is not a JSON result; give the --out of a --shard run") from None
    config = body.get("config") if isinstance(body, dict) else None
    require(
        isinstance(config, dict) and isinstance(body.get("episodes"), dict),
        f"{path} is not an evaluation result; give the --out of a --shard run",
    )
    require(
        isinstance(config.get("shard"), dict),
        f"{path} is no shard (its config has no shard block); merge the results of "
        "`alemlite eval --shard I/N` or `alemlite eval-llm --shard I/N` runs",
    )
    require(
        body.get("valid", True) and body.get("complete", True),
        f"{path} is from a run that did not finish as valid "
        f"({body.get('reason') or 'stopped early'}); rerun its command to complete it first",
    )
    return _Part(path, body)


def _check_one_run(parts: Sequence[_Part]) -> None:
    """Equal configs apart from the shard, and every episode of the run played exactly once."""
    first = parts[0]
    common = {k: v for k, v in first.body["config"].items() if k not in SHARD_KEYS}
    for part in parts[1:]:
        other = {k: v for k, v in part.body["config"].items() if k not in SHARD_KEYS}
        differing = sorted(k for k in {*common, *other} if common.get(k) != other.get(k))
        counts = (first.shard["count"], first.shard["of_episodes"])
        if counts != (part.shard["count"], part.shard["of_episodes"]):
            differing.append("shard")
        require(
            not differing,
            f"{first.path} and {part.path} are shards of different runs: their configs differ "
            f"in {', '.join(differing)}; merge the shards of one command (same flags apart "
            "from --shard)",
        )
    require(
        len({part.is_llm_run for part in parts}) == 1,
        "the shards mix llm runs (summary.json) and compiled reports; merge one run's shards",
    )
    total = first.shard["of_episodes"]
    owner: dict[int, Path] = {}
    for part in sorted(parts, key=lambda part: part.played.start):
        for episode in part.played:
            require(
                episode not in owner,
                f"episode {episode} is in two shards, {owner.get(episode)} and {part.path}; "
                "give each shard once",
            )
            owner[episode] = part.path
    missing = [episode for episode in range(total) if episode not in owner]
    require(
        not missing,
        f"episodes {_ranges(missing)} of the run's {total} are in no shard given; run and add "
        f"the missing shards of {first.shard['count']}",
    )


def _ranges(ids: Sequence[int]) -> str:
    """`0-3, 7`: consecutive ids as ranges."""
    runs: list[list[int]] = []
    for episode in ids:
        if runs and episode == runs[-1][-1] + 1:
            runs[-1].append(episode)
        else:
            runs.append([episode])
    return ", ".join(str(r[0]) if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


# ---- merging ----------------------------------------------------------------------------


def merged_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """The unsharded run's config from a shard's: no shard block, every episode."""
    total = config["shard"]["of_episodes"]
    return {
        name: (total if name == "episodes" else value)
        for name, value in config.items()
        if name not in ("shard", "first_episode")
    }


def merge_episodes(parts: Sequence[Mapping[str, Any]]) -> dict[str, np.ndarray]:
    """Per-episode values of shards (in episode order) as one run's."""
    names = list(parts[0])
    return {name: np.concatenate([np.asarray(part[name]) for part in parts]) for name in names}


def merge_usage(usages: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The LLM accounting of one run from its shards' (see the module docstring)."""
    first = usages[0]
    merged: dict[str, Any] = {}
    requests = sum(usage["requests"] for usage in usages)
    answered = [usage["requests"] - usage["failed_requests"] for usage in usages]
    for name in first:
        values = [usage.get(name) for usage in usages]
        if name in SUMMED:
            merged[name] = sum(values)
        elif name in MAXED:
            merged[name] = max(values)
        elif name in WEIGHTED:
            merged[name] = float(np.average(values, weights=answered)) if sum(answered) else 0.0
        elif name == "parse_rate":
            parsed = sum(round(usage["parse_rate"] * usage["requests"]) for usage in usages)
            merged[name] = float(parsed / max(requests, 1))
        elif name == "requests_per_s":
            asked = requests - sum(usage["reused_from_transcript"] for usage in usages)
            merged[name] = asked / max(sum(usage["wall_s"] for usage in usages), 1e-9)
        elif all(isinstance(value, Mapping) for value in values):  # counts by name
            merged[name] = {key: sum(value.get(key, 0) for value in values) for key in values[0]}
        elif all(isinstance(value, int) and not isinstance(value, bool) for value in values):
            merged[name] = sum(values)  # counts (cut-off answers, empty answers, ...)
        else:  # settings (a mode) agree across shards; other numbers are listed per shard
            merged[name] = values[0] if all(v == values[0] for v in values) else values
    return merged


def _merge_llm_run(parts: Sequence[_Part], out: Path) -> dict[str, Any]:
    from llm_bridge.runner import _headline, _usage_table

    config = merged_config(parts[0].body["config"])
    episodes = merge_episodes([part.body["episodes"] for part in parts])
    summary = summarise(episodes)
    counts = [part.body["turns"] for part in parts]
    turns = {name: sum(count[name] for count in counts) for name in counts[0]}
    usage = merge_usage([part.body["usage"] for part in parts])
    headline = _headline(turns)
    agents = ", ".join(dict.fromkeys(config["team"]))
    title = f"{config['env']}: {agents} ({config['prompt']['variant']})"
    table = headline + "\n\n" + format_table(summary, title) + "\n\n" + _usage_table(usage)
    report = {
        "valid": True,
        "reason": None,
        "complete": True,
        "turns": turns,
        "headline": headline,
        "config": config,
        "summary": summary,
        "episodes": {name: values.tolist() for name, values in episodes.items()},
        "usage": usage,
        "table": table,
        "merged": _provenance(parts),
    }
    out.mkdir(parents=True, exist_ok=True)
    write_file(out / "summary.json", json.dumps(report, indent=2, default=str) + "\n")
    write_file(out / "summary.txt", table + "\n")
    print(table)
    print(f"\nwrote {out / 'summary.json'}")
    return report


def _merge_report(parts: Sequence[_Part], out: Path) -> dict[str, Any]:
    config = merged_config(parts[0].body["config"])
    episodes = merge_episodes([part.body["episodes"] for part in parts])
    named = _SHARD_REPORT.match(parts[0].path.name)
    # The shard's file name is the unsharded report's with its shard spliced in.
    label = named.group("label") if named else f"{config['env']}_merged"
    path = report_path(out, label, config)
    summary = summarise(episodes)
    body = {
        "config": config,
        "summary": summary,
        "episodes": {name: values.tolist() for name, values in episodes.items()},
        "merged": _provenance(parts),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    write_file(path, json.dumps(body, indent=2, default=str) + "\n")
    print(format_table(summary, f"{config['env']}, team={', '.join(config['team'])}"))
    print(f"\nwrote {path}")
    return body


def _provenance(parts: Sequence[_Part]) -> dict[str, Any]:
    return {
        "shards": [str(part.path) for part in parts],
        "summed": [name for name in SUMMED if name in parts[0].body.get("usage", {})],
        "maxed": [name for name in MAXED if name in parts[0].body.get("usage", {})],
        "weighted_by_answered_turns": [
            name for name in WEIGHTED if name in parts[0].body.get("usage", {})
        ],
    }


def merge_shards(paths: Sequence[Path], out: Path) -> dict[str, dict[str, Any]]:
    """Check and merge the shards in `paths` into `out`; returns each merged result by
    ablation ("" for a plain run). Refuses, in one line, shards of different runs, an
    episode played twice or not at all, and an `out` that is a shard or another run."""
    require(len(paths) >= 1, "give the --out folders of the shards to merge")
    out = Path(out)
    for path in paths:
        require(
            Path(path).resolve() != out.resolve(),
            f"out={out} is one of the shards; write the merged result to a new folder",
        )
    require(
        not (out / "transcript.jsonl").exists(),
        f"out={out} holds an LLM run (transcript.jsonl), whose summary merging would replace; "
        "write the merged result to a new folder",
    )
    found = [_results_in(Path(path)) for path in paths]
    names = list(found[0])
    for path, files in zip(paths, found, strict=True):
        require(
            list(files) == names,
            f"{paths[0]} holds the runs {names} and {path} holds {list(files)}; merge the "
            "shards of one command (same --ablation)",
        )
    runs = {}
    for name in names:
        parts = [_read(files[name]) for files in found]
        _check_one_run(parts)
        runs[name] = sorted(parts, key=lambda part: part.played.start)
    writable_folder(out)  # once the shards are found to merge, before anything is written
    merged = {}
    for name, parts in runs.items():
        target = out / name if name else out
        merged[name] = (
            _merge_llm_run(parts, target) if parts[0].is_llm_run else _merge_report(parts, target)
        )
    return merged


@dataclass(frozen=True)
class MergeConfig:
    """Merge the shards of one evaluation (`alemlite eval --shard I/N`, `alemlite eval-llm
    --shard I/N`) into the result the unsharded run writes."""

    shards: tyro.conf.Positional[tuple[Path, ...]]
    """the --out folders (or result files) of the shards, in any order"""
    out: Path
    """the folder of the merged result: summary.json (llm runs, one subfolder per ablation)
    or the report the unsharded `alemlite eval` writes"""


def merge_command(config: MergeConfig) -> dict[str, dict[str, Any]]:
    """Merge the shards of one evaluation into one summary equal to the unsharded run's."""
    return merge_shards(config.shards, config.out)
