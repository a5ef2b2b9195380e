"""The leaderboard's files: leaderboard.md, figures/leaderboard.png and index.html, a
self-contained page in the viewer's style (`alemlite view` writes it for a leaderboard
folder)."""

from __future__ import annotations

import html
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from llm_bridge.leaderboard import SCORED, leaderboard_rows
from llm_bridge.viewer.page import _asset, write_page


def _intro(board: Mapping[str, Any]) -> str:
    strata = ", ".join(board["strata"])
    return (
        f"{board['env']}: {len(board['teams'])} teams on strata {strata}, {board['episodes']} "
        f"episodes each (seeds {board['seed']} to {board['seed'] + board['episodes'] - 1}). "
        f"Ranked by the interquartile mean of {SCORED[0]} (`{board['roles'][SCORED[0]]}`) over "
        "every episode of every stratum, with a 95% stratified bootstrap interval; P(beats "
        "next) is the probability that an episode of the team outscores one of the next team "
        "down, averaged over strata. Model teams are `MODEL (decoding)`; references are named "
        "`marl:CHECKPOINT` and `scripted:POLICY`. zero base: episodes whose base score "
        f"(`{board['roles']['base']}`) is 0."
    )


def markdown(board: Mapping[str, Any], figure: Path, folder: Path) -> str:
    """leaderboard.md: the intro, the table, the figure and where the numbers come from."""
    header, rows = leaderboard_rows(board)
    table = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    table += ["| " + " | ".join(row) + " |" for row in rows]
    sources = sorted({team["report"] for team in board["teams"].values()})
    lines = [f"# Leaderboard: {board['env']}", "", _intro(board), "", *table, "",
             f"![leaderboard]({os.path.relpath(figure, folder)})", "",
             "Gap reports read: " + ", ".join(f"`{s}`" for s in sources) + "."]  # fmt: skip
    provenance = board.get("provenance")
    if provenance:
        lines += ["", f"`{provenance['command']}` at commit `{provenance['commit'][:12]}`"
                  + (" (dirty tree)" if provenance.get("dirty") else "") + "."]  # fmt: skip
    return "\n".join(lines) + "\n"


def plot(board: Mapping[str, Any], path: Path) -> Path:
    """Each team's IQM with its interval, best on top, references in grey."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = board["ranking"]
    figure, axis = plt.subplots(figsize=(7.0, 0.4 * len(names) + 1.3))
    for y, name in enumerate(names):
        team = board["teams"][name]
        score = team["scores"][SCORED[0]]
        colour = "C0" if team["kind"] == "model" else "grey"
        axis.errorbar(
            score["iqm"], y, xerr=[[score["iqm"] - score["low"]], [score["high"] - score["iqm"]]],
            fmt="o", capsize=3, color=colour,
        )  # fmt: skip
    axis.set_yticks(range(len(names)), names, fontsize=8)
    axis.invert_yaxis()
    axis.set_xlabel(f"IQM of {board['roles'][SCORED[0]]}, 95% stratified bootstrap interval")
    axis.set_title(f"{board['env']}: strata {', '.join(board['strata'])}", fontsize=9)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def page(board: Mapping[str, Any]) -> str:
    """index.html: the table, model rows marked, the figure inlined from figures/."""
    header, rows = leaderboard_rows(board)
    body = []
    for name, row in zip(board["ranking"], rows, strict=True):
        kind = board["teams"][name]["kind"]
        cells = "".join(f"<td>{html.escape(cell)}</td>" for cell in row)
        body.append(f'<tr class="{kind}" data-team="{html.escape(name)}">{cells}</tr>')
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>Leaderboard: {html.escape(board['env'])}</title>"
        f"<style>{_asset('viewer.css')} tr.model td {{ font-weight: bold; }}</style>"
        '</head>\n<body><div id="index">'
        f"<h1>Leaderboard: {html.escape(board['env'])}</h1><p>{html.escape(_intro(board))}</p>"
        '<table class="episodes" id="leaderboard"><thead><tr>'
        + "".join(f"<th>{html.escape(name)}</th>" for name in header)
        + "</tr></thead><tbody>"
        + "\n".join(body)
        + '</tbody></table><p><img id="figure" src="figures/leaderboard.png" '
        'alt="each team\'s IQM with its interval"></p></div></body></html>\n'
    )


def write_leaderboard(board: Mapping[str, Any], out: Path) -> Path:
    """leaderboard.json, leaderboard.md, figures/leaderboard.png and index.html in `out`;
    returns the page's path."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "leaderboard.json").write_text(json.dumps(board, indent=2) + "\n")
    figure = plot(board, out / "figures" / "leaderboard.png")
    (out / "leaderboard.md").write_text(markdown(board, figure, out))
    index = out / "index.html"
    write_page(index, page(board))
    print(f"wrote {out / 'leaderboard.md'}, {out / 'leaderboard.json'} and {index}")
    return index
