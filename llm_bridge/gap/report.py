"""gap.md: the headline gaps, one table per difficulty, the mixed teams, the model's parse
and cut-off rates, tokens and wall time, the notes (where no checkpoint plays), the figures."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from llm_bridge.gap.scores import ROLES

ROLE_TITLES = {
    "base": "base task",
    "coordination": "coordination",
    "total": "total",
    "return": "return",
}


def markdown_report(results: Mapping[str, Any], figures: Mapping[str, Path], folder: Path) -> str:
    config, roles = results["config"], results["roles"]
    shown = [role for role in ROLES if role in roles]
    lines = [
        f"# Coordination gap: {config['env']}, model {config['model']}",
        "",
        f"`{config['model']}` in every seat against the MARL reference agents and the scripted "
        f"teams on the same {config['episodes']} episodes per stratum (seeds {config['seed']} "
        f"to {config['seed'] + config['episodes'] - 1}); mixed teams seat the model in the "
        f"first {config['mixed_llm_seats']} seat(s) beside a MARL checkpoint. Strata: "
        + ", ".join(stratum["title"] for stratum in results["strata"])
        + ".",
        "",
        "Scores (higher is better): "
        + "; ".join(f"{ROLE_TITLES[role]} = `{roles[role]}`" for role in shown)
        + ". Means with 95% percentile-bootstrap intervals over episodes; gaps with 95% "
        "stratified-bootstrap intervals (strata: difficulty x team size); each gap names the "
        "reference it is taken against.",
        "",
        "## Gaps",
        "",
        gap_table(results),
        "",
    ]
    difficulties = list(dict.fromkeys(stratum["difficulty"] for stratum in results["strata"]))
    for difficulty in difficulties:
        strata = [s for s in results["strata"] if s["difficulty"] == difficulty]
        lines += [f"## Difficulty {difficulty}" if difficulty else "## Scores by team", ""]
        rows = []
        for stratum in strata:
            for label, team in stratum["teams"].items():
                scores = team["scores"]
                reference = " (reference)" if label in stratum["references"].values() else ""
                rows.append(
                    [
                        str(stratum["team_size"]),
                        f"{label}{reference}",
                        *(_interval(scores.get(role)) for role in shown),
                    ]
                )
            for comparison, entry in stratum["gaps"].items():
                if entry["strata"]:
                    rows.append(
                        [
                            str(stratum["team_size"]),
                            f"**{comparison_label(comparison, entry)}**",
                            *(_gap(entry.get(role)) for role in shown),
                        ]
                    )
        lines += [_table(["team size", "team", *(ROLE_TITLES[r] for r in shown)], rows), ""]
    lines += ["## The model's turns", "", _usage_table(results), ""]
    notes = [f"- {s['title']}: {note}" for s in results["strata"] for note in s["notes"]]
    if notes:
        lines += ["## Notes", "", *notes, ""]
    if figures:
        lines += ["## Figures", ""]
        for name, path in figures.items():
            lines += [f"![{name}]({os.path.relpath(path, folder)})", ""]
    provenance = results.get("provenance")
    if provenance:
        lines += [
            "## Provenance",
            "",
            f"`{provenance['command']}` at commit `{provenance['commit'][:12]}`"
            + (" (dirty tree)" if provenance.get("dirty") else "")
            + f", {provenance['date']}, on {provenance['machine']} "
            f"({provenance['cpu_count']} CPUs, {provenance['platform']}); "
            f"{results['wall_s']:.0f} s.",
            "",
        ]
    return "\n".join(lines)


def gap_table(results: Mapping[str, Any]) -> str:
    """The headline gaps, one row per comparison (also the README's table)."""
    shown = [role for role in ROLES if role in results["roles"]]
    return _table(
        ["comparison", *(ROLE_TITLES[role] for role in shown), "strata", "not measured"],
        [
            [
                comparison_label(comparison, entry),
                *(_gap(entry.get(role)) for role in shown),
                ", ".join(entry["strata"]) or "none",
                ", ".join(entry["missing"]) or "",
            ]
            for comparison, entry in results["gaps"].items()
        ],
    )


def comparison_label(comparison: str, entry: Mapping[str, Any]) -> str:
    """`LLM - MARL (ippo-dining-5)`: the comparison and the reference team(s) it is taken
    against, by checkpoint or policy name."""
    references = dict.fromkeys(pair[1] for pair in entry.get("teams", {}).values())
    if not references:
        return comparison
    return f"{comparison} ({', '.join(name.split(':', 1)[-1] for name in references)})"


def number(value: float, signed: bool = False, digits: int = 3) -> str:
    """`value` to `digits` decimals, never `-0.000` (a value that rounds to zero is 0)."""
    rounded = round(float(value), digits) or 0.0  # -0.0 is falsy: it becomes 0.0
    return f"{rounded:{'+' if signed else ''}.{digits}f}"


def _usage_table(results: Mapping[str, Any]) -> str:
    rows = []
    for stratum in results["strata"]:
        for label, team in stratum["teams"].items():
            usage = team.get("usage")
            if usage is None:
                continue
            requests = usage["requests"]
            cut_off = usage.get("cut_off")
            rows.append(
                [
                    stratum["key"],
                    label,
                    str(requests),
                    f"{usage['parse_rate']:.3f}",
                    "not recorded" if cut_off is None else f"{cut_off / max(requests, 1):.3f}",
                    str(usage["prompt_tokens"]),
                    str(usage["completion_tokens"]),
                    f"{team['wall_s']:.1f}",
                ]
            )
    header = ["stratum", "team", "turns", "parse rate", "cut-off rate", "prompt tokens",
              "completion tokens", "wall s"]  # fmt: skip
    return _table(header, rows)


def _interval(entry: Mapping[str, float] | None) -> str:
    if entry is None:
        return "-"
    return f"{number(entry['mean'])} [{number(entry['low'])}, {number(entry['high'])}]"


def _gap(entry: Mapping[str, float] | None) -> str:
    if entry is None:
        return "-"
    gap, low, high = (number(entry[key], signed=True) for key in ("gap", "low", "high"))
    return f"{gap} [{low}, {high}]"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)
