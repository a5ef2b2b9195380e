"""Two result files, metric by metric: Welch's t, Hedges' g, bootstrap CIs, Mann-Whitney U,
and rliable's interquartile mean and probability of improvement with bootstrap intervals
(the episodes are the runs; each file is one task).

Any two evaluation results compare: two models, a model before and after training, an LLM
against a MARL agent (`alemlite eval` and `alemlite eval-llm` write the same `config`,
`summary` and `episodes` sections). Only results measured under the same environment
settings and seed protocol compare, unless `--allow-mismatch` says otherwise.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import tyro

from alemlite.core.errors import ConfigError, require
from alemlite.stats import bootstrap_ci, compare, iqm_ci, probability_of_improvement_ci

IMPROVEMENT_RESAMPLES = 2_000
"""Bootstrap resamples for P(A > B): each ranks both sides again, so 10,000 would take
seconds per metric on a thousand episodes (rliable's examples use 2,000 for it too)."""

RESULT_SECTIONS = ("config", "summary", "episodes")
"""What `alemlite eval` (`write_report`) and `alemlite eval-llm` (summary.json) both write."""

EXPECTED = (
    "give a result file of `alemlite eval` (its report .json) or `alemlite eval-llm` (summary.json)"
)

NOT_RECORDED = "(not recorded)"


@dataclass(frozen=True)
class CompareConfig:
    """Compare the per-episode metrics of two result files."""

    a: tyro.conf.Positional[Path]
    """first result file (summary.json of eval-llm, or a report of alemlite eval)"""
    b: tyro.conf.Positional[Path]
    """second result file"""
    metrics: tuple[str, ...] = ()
    """metrics to compare; default: every metric both files have"""
    out: Path | None = None
    """also write the comparison as JSON here"""
    allow_mismatch: bool = False
    """compare results measured under different environment settings or seeds (the output
    lists the settings that differ)"""

    def __post_init__(self) -> None:
        repeated = sorted({name for name in self.metrics if self.metrics.count(name) > 1})
        require(
            not repeated,
            f"metrics={' '.join(self.metrics)} must name each metric once; "
            f"repeated: {', '.join(repeated)}",
        )


def read_result(path: Path) -> dict[str, Any]:
    """The evaluation result in `path`; a ConfigError naming what `path` is when it is not one."""
    path = Path(path)
    require(path.exists(), f"{path} does not exist; {EXPECTED}")
    if path.is_dir():
        inside = [
            str(file)
            for file in sorted({*path.glob("*.json"), *path.glob("*/summary.json")})
            if _is_result(file)
        ]
        hint = f"give a result file inside it: {', '.join(inside[:3])}" if inside else EXPECTED
        raise ConfigError(f"{path} is a directory; {hint}")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not a text file; {EXPECTED}") from None
    require(text.strip() != "", f"{path} is empty; {EXPECTED}")
    first_line = text.lstrip().partition("\n")[0]
    if _is_transcript_header(first_line):
        summary = path.parent / "summary.json"
        hint = (
            f"give the run's result file {summary}"
            if summary.exists()
            else f"the run has not finished: rerun its `alemlite eval-llm` command to resume it "
            f"and write {summary}"
        )
        raise ConfigError(f"{path} is an eval-llm transcript (one record a line); {hint}")
    try:
        body = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(
            f"{path} is not JSON ({error.msg}, line {error.lineno}); {EXPECTED}"
        ) from None
    if isinstance(body, dict) and "algorithm" in body and "final" in body:
        recorded = body.get("env")
        trained_on = recorded.get("name", "ENV") if isinstance(recorded, dict) else "ENV"
        raise ConfigError(
            f"{path} is a training summary (`alemlite train`): test aggregates without "
            f"per-episode values; evaluate the trained policy with `alemlite eval --env "
            f"{trained_on} --team checkpoint:{path.parent / 'policy' / 'best'}` (and the options "
            "it was trained with) and compare that report"
        )
    if isinstance(body, dict) and "metrics" in body and "mismatched_settings" in body:
        raise ConfigError(f"{path} is a comparison written by `alemlite compare`; {EXPECTED}")
    # Before its sections: a run stopped as not valid writes no summary or episodes.
    if isinstance(body, dict) and not body.get("valid", True):
        raise ConfigError(
            f"{path} is from a run marked not valid ({body.get('reason', 'no reason recorded')}); "
            "rerun its `alemlite eval-llm` command to ask the failed turns again"
        )
    missing = [
        name
        for name in RESULT_SECTIONS
        if not (isinstance(body, dict) and isinstance(body.get(name), dict))
    ]
    require(
        not missing,
        f"{path} is not an evaluation result: it has no {', '.join(missing)} "
        f"section{'s' if len(missing) > 1 else ''}; {EXPECTED}",
    )
    return body


def _is_result(path: Path) -> bool:
    try:
        read_result(path)
    except ConfigError:
        return False
    return True


def _is_transcript_header(line: str) -> bool:
    try:
        record = json.loads(line)
    except json.JSONDecodeError:
        return False
    return isinstance(record, dict) and record.get("type") == "header" and "fingerprint" in record


def settings(config: Mapping[str, Any]) -> dict[str, Any]:
    """What makes a result's episodes what they are: its environment, each of the
    environment's options by name, and the base seed of the protocol (episode i plays
    seed + i). The team is what a comparison compares, and the number of episodes is no
    setting either: unequal samples compare, and each metric reports its n. A shard
    (`--shard`) plays from its first episode's seed on, which is its seed here. Numbers typed
    differently (a difficulty of "0.5" and "0.50") are one value."""
    recorded = {"env": config.get("env"), **dict(config.get("options") or {})}
    seed = config.get("seed")
    recorded["seed"] = None if seed is None else seed + config.get("first_episode", 0)
    return {name: _number_or_text(value) for name, value in recorded.items() if value is not None}


def _number_or_text(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return float(value)
    except ValueError:
        return value


def mismatched_settings(
    config_a: Mapping[str, Any], config_b: Mapping[str, Any]
) -> dict[str, list[Any]]:
    """Each setting whose value differs between two results, as [A's value, B's value].

    A setting only one of them records counts as differing, except where the environments
    differ: then only the environment and the settings both record are listed.
    """
    settings_a, settings_b = settings(config_a), settings(config_b)
    other_envs = (
        "env" in settings_a and "env" in settings_b and settings_a["env"] != settings_b["env"]
    )
    differing = {}
    for name in dict.fromkeys([*settings_a, *settings_b]):
        if other_envs and (name not in settings_a or name not in settings_b):
            continue
        value_a = settings_a.get(name, NOT_RECORDED)
        value_b = settings_b.get(name, NOT_RECORDED)
        if value_a != value_b:
            differing[name] = [value_a, value_b]
    return differing


def format_mismatches(mismatches: Mapping[str, list[Any]]) -> str:
    """`name A vs B, ...` for one line."""
    return ", ".join(f"{name} {a} vs {b}" for name, (a, b) in mismatches.items())


def check_settings(
    a: Path, result_a: Mapping[str, Any], b: Path, result_b: Mapping[str, Any], allow: bool
) -> dict[str, list[Any]]:
    """The mismatched settings of two results; a ConfigError naming them unless `allow`."""
    mismatches = mismatched_settings(result_a["config"], result_b["config"])
    require(
        allow or not mismatches,
        f"{a} and {b} were measured under different settings: {format_mismatches(mismatches)}; "
        "compare results of the same settings, or pass --allow-mismatch to compare them anyway",
    )
    return mismatches


def compare_results(
    a: Path, b: Path, metrics: tuple[str, ...] = (), allow_mismatch: bool = False
) -> dict[str, dict[str, float]]:
    """Read, check and compare two result files (see `compare_episodes`)."""
    result_a, result_b = read_result(a), read_result(b)
    check_settings(a, result_a, b, result_b, allow_mismatch)
    return compare_episodes(result_a["episodes"], result_b["episodes"], metrics)


def compare_episodes(
    episodes_a: Mapping[str, Any], episodes_b: Mapping[str, Any], metrics: tuple[str, ...] = ()
) -> dict[str, dict[str, float]]:
    """Per metric: means, bootstrap CIs of each mean, Welch t and p, Hedges' g, U and p,
    the IQM of each side and P(A > B) (ties half), each with a bootstrap interval."""
    episodes_a = {name: np.asarray(values) for name, values in episodes_a.items()}
    episodes_b = {name: np.asarray(values) for name, values in episodes_b.items()}
    common = [name for name in episodes_a if name in episodes_b and np.ndim(episodes_a[name]) == 1]
    chosen = list(metrics) or common
    missing = [name for name in chosen if name not in common]
    require(
        not missing, f"metrics {missing} are not in both files; choose from: {', '.join(common)}"
    )
    results = {}
    for name in chosen:
        values_a, values_b = episodes_a[name].astype(float), episodes_b[name].astype(float)
        _, low_a, high_a = bootstrap_ci(values_a)
        _, low_b, high_b = bootstrap_ci(values_b)
        iqm_a, *iqm_interval_a = iqm_ci([values_a])
        iqm_b, *iqm_interval_b = iqm_ci([values_b])
        improvement, *improvement_interval = probability_of_improvement_ci(
            [values_a], [values_b], resamples=IMPROVEMENT_RESAMPLES
        )
        # Tests need two values a side, and some spread on at least one side.
        enough = values_a.size >= 2 and values_b.size >= 2
        spread = np.ptp(values_a) > 0 or np.ptp(values_b) > 0
        tests = {}
        if enough and spread:
            with warnings.catch_warnings():  # one constant side: scipy warns, the numbers stand
                warnings.simplefilter("ignore", RuntimeWarning)
                tests = compare(values_a, values_b)
        results[name] = {
            "n_a": int(values_a.size),
            "n_b": int(values_b.size),
            "mean_a": float(values_a.mean()),
            "mean_b": float(values_b.mean()),
            "ci_a": [low_a, high_a],
            "ci_b": [low_b, high_b],
            "iqm_a": iqm_a,
            "iqm_b": iqm_b,
            "iqm_ci_a": iqm_interval_a,
            "iqm_ci_b": iqm_interval_b,
            "probability_of_improvement": improvement,
            "probability_of_improvement_ci": improvement_interval,
            **{key: value for key, value in tests.items() if key not in ("mean_a", "mean_b")},
        }
    return results


def format_comparison(results: dict[str, dict[str, float]], label_a: str, label_b: str) -> str:
    """The per-metric tests, then the robust aggregates: IQM of each side and P(A > B)."""
    tests = [("metric", f"A: {label_a}", f"B: {label_b}", "Welch p", "Hedges g", "MWU p")]
    robust = [("metric", "IQM of A", "IQM of B", "P(A > B)")]
    for name, entry in results.items():
        tests.append(
            (
                name,
                _interval(entry["mean_a"], entry["ci_a"]),
                _interval(entry["mean_b"], entry["ci_b"]),
                _number(entry.get("welch_p")),
                _number(entry.get("hedges_g")),
                _number(entry.get("mann_whitney_p")),
            )
        )
        robust.append(
            (
                name,
                _interval(entry["iqm_a"], entry["iqm_ci_a"]),
                _interval(entry["iqm_b"], entry["iqm_ci_b"]),
                _interval(
                    entry["probability_of_improvement"], entry["probability_of_improvement_ci"]
                ),
            )
        )
    return (
        _table(tests)
        + "\n\nmeans with 95% bootstrap intervals; g > 0 when A is higher\n\n"
        + _table(robust)
        + "\n\ninterquartile means (rliable) and P(A > B), the chance that an episode of A "
        "scores above one of B (ties half), with 95% percentile bootstrap intervals over "
        "episodes; P > 0.5 is an improvement only where higher is better"
    )


def _table(rows: list[tuple[str, ...]]) -> str:
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        for row in rows
    ]
    lines.insert(1, "  ".join("-" * width for width in widths))
    return "\n".join(lines)


def _interval(value: float, interval: list[float]) -> str:
    return f"{value:.3f} [{interval[0]:.3f}, {interval[1]:.3f}]"


def _number(value: float | None) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:.3g}"


def compare_command(config: CompareConfig) -> dict[str, dict[str, float]]:
    """Compare two result files: Welch's t-test, Hedges' g, bootstrap CIs, Mann-Whitney U,
    IQM and probability of improvement."""
    result_a, result_b = read_result(config.a), read_result(config.b)
    mismatches = check_settings(config.a, result_a, config.b, result_b, config.allow_mismatch)
    replacing = config.out is not None and _check_out(config.out, config.a, config.b)
    results = compare_episodes(result_a["episodes"], result_b["episodes"], config.metrics)
    if mismatches:
        print(f"settings differ (--allow-mismatch): {format_mismatches(mismatches)}\n")
    print(format_comparison(results, str(config.a), str(config.b)))
    if config.out is not None:
        body = {
            "a": str(config.a),
            "b": str(config.b),
            "settings": {"a": settings(result_a["config"]), "b": settings(result_b["config"])},
            "mismatched_settings": mismatches,
            "metrics": results,
        }
        config.out.parent.mkdir(parents=True, exist_ok=True)
        config.out.write_text(json.dumps(body, indent=2) + "\n")
        print(f"\n{'replaced' if replacing else 'wrote'} {config.out}")
    return results


def _check_out(out: Path, a: Path, b: Path) -> bool:
    """Whether `out` holds an earlier comparison of the same two files, to be replaced;
    a ConfigError if it holds anything else, which writing would lose."""
    if not out.exists():
        return False
    require(not out.is_dir(), f"out={out} must be a file path; it is a directory")
    try:
        earlier = json.loads(out.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        earlier = None
    same = isinstance(earlier, dict) and [earlier.get("a"), earlier.get("b")] == [str(a), str(b)]
    require(
        same and "metrics" in earlier,
        f"out={out} must be a new file or an earlier comparison of the same two files; "
        "it holds something else, which writing would lose: choose another --out",
    )
    return True
