"""`alemlite leaderboard`: gap reports side by side (ranking, IQM, probability of improvement
between neighbours, usage), refusals of reports not played alike, and the page that
`alemlite view` writes, checked in headless Chromium."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from alemlite_app.cli import main
from tests.test_viewer import CHROMIUM_ARGS, _chromium

OPTIONS = {"num_agents": 5, "max_steps": 30, "reward": "shaped"}
USAGE = {"requests": 150, "parse_rate": 0.9, "cut_off": 15, "prompt_tokens": 1000,
         "completion_tokens": 200, "cost": 0.5}  # fmt: skip


def _team(kind: str, coordination: list[float], base: list[float], usage=None) -> dict:
    entry = {"kind": kind, "result": "none.json",
             "episodes": {"coordination": coordination, "base": base}}  # fmt: skip
    return entry if usage is None else {**entry, "usage": usage}


def _report(folder: Path, model: str, llm: list[float], seed: int = 0, **options) -> Path:
    """A gap.json of format 2 at n5: the model, a MARL checkpoint and a scripted policy."""
    teams = {
        "llm": _team("llm", llm, [0.0, *llm[1:]], USAGE),
        "marl:ippo-dining-5": _team("marl", [0.5] * len(llm), [0.5] * len(llm)),
        "scripted:resource_ordering": _team("scripted", [0.76] * len(llm), [0.7] * len(llm)),
    }
    report = {
        "format": 2,
        "config": {
            "env": "dining",
            "model": model,
            "decoding": "generate",
            "constrained": False,
            "seed": seed,
            "episodes": len(llm),
            "options": OPTIONS,
        },
        "roles": {"base": "throughput", "coordination": "meal_efficiency"},
        "strata": [{"key": "n5", "options": {**OPTIONS, **options}, "teams": teams}],
    }
    folder.mkdir(parents=True)
    (folder / "gap.json").write_text(json.dumps(report))
    return folder


def test_the_leaderboard_ranks_models_beside_named_references(tmp_path, capsys):
    good = _report(tmp_path / "good", "good-model", [0.9, 0.8, 0.85, 0.95])
    weak = _report(tmp_path / "weak", "weak-model", [0.1, 0.2, 0.0, 0.3])
    out = tmp_path / "board"
    main(["leaderboard", str(good), str(weak), "--out", str(out)])
    board = json.loads((out / "leaderboard.json").read_text())
    assert board["ranking"] == ["good-model (free)", "scripted:resource_ordering",
                                "marl:ippo-dining-5", "weak-model (free)"]  # fmt: skip
    good_team = board["teams"]["good-model (free)"]
    # Four episodes: the IQM keeps the middle two (0.85, 0.9); the model always beats 0.76.
    assert good_team["scores"]["coordination"]["iqm"] == pytest.approx(0.875)
    assert good_team["beats_next"]["next"] == "scripted:resource_ordering"
    assert good_team["beats_next"]["p"] == 1.0
    assert good_team["zero_share"] == 0.25 and good_team["usage"]["cut_off_rate"] == 0.1
    assert board["teams"]["marl:ippo-dining-5"]["beats_next"]["p"] == 1.0
    assert "beats_next" not in board["teams"]["weak-model (free)"]
    markdown = (out / "leaderboard.md").read_text()
    assert "| 1 | good-model (free) | 0.875 |" in markdown and "-0.000" not in markdown
    assert (out / "figures" / "leaderboard.png").stat().st_size > 0


def _refusal(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as caught:
        main(["leaderboard", *argv])
    assert caught.value.code == 2
    [line] = capsys.readouterr().err.splitlines()
    return line.removeprefix("alemlite leaderboard: error: ")


def test_reports_not_played_alike_are_refused_in_one_line(tmp_path, capsys):
    base = _report(tmp_path / "a", "a", [0.5, 0.6, 0.7, 0.8])
    seeds = _report(tmp_path / "b", "b", [0.5, 0.6, 0.7, 0.8], seed=100)
    paper = _report(tmp_path / "c", "c", [0.5, 0.6, 0.7, 0.8], reward="paper")
    short = _report(tmp_path / "d", "d", [0.5, 0.6])
    out = ["--out", str(tmp_path / "board")]
    assert _refusal([str(base), str(seeds), *out], capsys) == (
        f"runs={seeds}: seed=100, but {base} has seed=0; give reports played alike"
    )
    assert "n5 played reward=paper, but" in _refusal([str(base), str(paper), *out], capsys)
    assert _refusal([str(base), str(short), *out], capsys).endswith(
        "or pass --first-episodes N to use the seeds both played"
    )
    assert not (tmp_path / "board").exists()
    # The seeds both played: the first two episodes of each.
    main(["leaderboard", str(base), str(short), "--first-episodes", "2", *out])
    board = json.loads((tmp_path / "board" / "leaderboard.json").read_text())
    assert board["episodes"] == 2
    assert board["teams"]["a (free)"]["values"]["coordination"]["n5"] == [0.5, 0.6]


def test_first_episodes_counts_the_tokens_and_cost_of_the_episodes_kept(tmp_path):
    base = _report(tmp_path / "a", "a", [0.5, 0.6, 0.7, 0.8])
    # The model's usage per episode, as `alemlite gap` records it: 1000 and 200 tokens in all.
    report = json.loads((base / "gap.json").read_text())
    report["strata"][0]["teams"]["llm"]["episode_usage"] = {
        "prompt_tokens": [100, 200, 300, 400],
        "completion_tokens": [20, 40, 60, 80],
        "cost": [0.05, 0.1, 0.15, 0.2],
    }
    (base / "gap.json").write_text(json.dumps(report))
    older = _report(tmp_path / "b", "b", [0.5, 0.6, 0.7, 0.8])  # no per-episode usage
    out = tmp_path / "board"
    main(["leaderboard", str(base), str(older), "--first-episodes", "2", "--out", str(out)])
    teams = json.loads((out / "leaderboard.json").read_text())["teams"]
    kept = teams["a (free)"]["usage"]
    assert (kept["prompt_tokens"], kept["completion_tokens"]) == (300, 60)
    assert kept["cost"] == pytest.approx(0.15)
    # Without per-episode usage the cut run's tokens are unknown, not the whole run's.
    unknown = teams["b (free)"]["usage"]
    assert unknown["prompt_tokens"] is unknown["completion_tokens"] is unknown["cost"] is None
    assert "| 300 / 60 | 0.1500 |" in (out / "leaderboard.md").read_text()
    # Every episode kept: the whole run's usage, as recorded.
    main(["leaderboard", str(base), str(older), "--out", str(out)])
    teams = json.loads((out / "leaderboard.json").read_text())["teams"]
    assert (
        teams["b (free)"]["usage"]["prompt_tokens"]
        == teams["a (free)"]["usage"]["prompt_tokens"]
        == 1000
    )


def test_view_shows_the_leaderboard_page_in_a_browser(tmp_path):
    good = _report(tmp_path / "good", "good-model", [0.9, 0.8, 0.85, 0.95])
    out = tmp_path / "board"
    main(["leaderboard", str(good), "--out", str(out)])
    (out / "index.html").unlink()
    main(["view", str(out)])
    executable = _chromium()
    playwright = pytest.importorskip("playwright.sync_api")
    if executable is None:
        pytest.skip("no browser to test the page in: Chromium not installed")
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        page = browser.new_page()
        page.goto((out / "index.html").as_uri())
        rows = page.locator("#leaderboard tbody tr")
        assert rows.count() == 3
        assert rows.nth(0).get_attribute("data-team") == "good-model (free)"
        assert "marl:ippo-dining-5" in page.locator("#leaderboard").inner_text()
        # The figure loads from figures/ beside the page.
        assert page.locator("#figure").evaluate("image => image.naturalWidth") > 0
        browser.close()
    assert np.isfinite(json.loads((out / "leaderboard.json").read_text())["seed"])
