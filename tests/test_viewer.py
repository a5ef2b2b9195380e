"""`alemlite view`: episode pages of LLM runs against the loopback server, replayed from the
transcript and checked in a real headless browser (Chromium driven by Playwright); and the
dining table's picture.

The browser tests need Chromium (Debian's `chromium` package; `make test` installs it where
it can) and the `playwright` package (no browser download: the system's Chromium is used).
They skip, saying which is missing, only where neither can be had.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import threading
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from PIL import Image

import alemlite
from alemlite.envs.craft.constants import AGENT_COLOURS as CRAFT_COLOURS
from alemlite.envs.dining import render as dining_render
from alemlite.envs.dining.state import initial_state
from alemlite_app.cli import main
from llm_bridge.transcripts import read_records
from llm_bridge.viewer.page import png_data_uri
from tests.llm_server import ChatServer, Reply, dining_resource_ordering

CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]  # fmt: skip
DOCS_FIGURE = Path(__file__).resolve().parents[1] / "docs" / "figures" / "viewer.png"


def _chromium() -> str | None:
    for candidate in (
        "/usr/bin/chromium",
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
    ):
        if candidate and Path(candidate).is_file():
            return candidate
    return None


@pytest.fixture(scope="module")
def browser(dining_run, matrix_run, craft_run, stepped_down_run):
    # The runs come first: Playwright's sync API holds an event loop in this thread while the
    # browser is open, and the LLM runner starts one of its own.
    executable = _chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    if executable is None or sync_playwright is None:
        missing = [
            *(["Chromium (apt-get install -y chromium)"] if executable is None else []),
            *(
                ["the playwright package (pip install playwright)"]
                if sync_playwright is None
                else []
            ),
        ]
        pytest.skip(f"no browser to test the viewer in: {' and '.join(missing)} not installed")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def _scripted_replies(garbage: int, cut_off: int):
    """The scripted dining policy (its replies carry a <think> part), except that request
    number `garbage` (1, 2, ...) gets a reply with no action in it and request `cut_off` is
    marked cut off by the token budget: one parse failure and one cut-off per run, at known
    steps (every step's requests are answered before the next step's are sent)."""
    lock, asked = threading.Lock(), [0]

    def reply(messages):
        with lock:
            asked[0] += 1
            number = asked[0]
        if number == garbage:
            return "I would rather think about lunch."
        return Reply(
            dining_resource_ordering(messages),
            finish_reason="length" if number == cut_off else "stop",
        )

    return reply


@pytest.fixture(scope="module")
def dining_run(tmp_path_factory):
    """Dining, 3 seats (two LLM seats and a scripted one), 2 episodes of 5 steps, viewed; with
    4 requests a step, the 9th (step 2) is answered with garbage and the 6th (step 1) is cut
    off."""
    run = tmp_path_factory.mktemp("dining_run")
    with ChatServer(_scripted_replies(garbage=9, cut_off=6)) as server:
        main(
            ["eval-llm", "--env", "dining", "--base-url", server.base_url, "--model", "scripted",
             "--episodes", "2", "--max-steps", "5", "--num-agents", "3", "--out", str(run),
             "--no-progress", "--team", "llm", "llm", "resource_ordering"]
        )  # fmt: skip
    main(["view", str(run), "--no-progress"])
    return run


def _turns(run: Path) -> list[dict]:
    return [r for r in read_records(run / "transcript.jsonl") if r["type"] == "turn"]


def _page_data(path: Path) -> dict:
    block = re.search(r'<script type="application/json" id="episode-data">(.*?)</script>',
                      path.read_text(encoding="utf-8"), re.S)  # fmt: skip
    return json.loads(block.group(1))


def test_view_writes_a_page_per_episode_replayed_from_the_transcript(dining_run, capsys):
    view = dining_run / "view"
    assert sorted(p.name for p in view.iterdir()) == [
        "episode-0000.html", "episode-0001.html", "index.html",
    ]  # fmt: skip
    summary = json.loads((dining_run / "summary.json").read_text())
    index = (view / "index.html").read_text()
    assert 'href="episode-0000.html"' in index and 'href="episode-0001.html"' in index
    for position, page in enumerate(("episode-0000.html", "episode-0001.html")):
        data = _page_data(view / page)
        assert data["episode"] == data["seed"] == position
        assert len(data["steps"]) == summary["episodes"]["episode_length"][position] == 5
        assert len(data["frames"]) == 6  # before each step, and the end
        assert data["frame_kind"] == "image"
        assert data["strings"][data["frames"][0]].startswith("data:image/png;base64,")
        assert data["metrics"]["meals_total"] == summary["episodes"]["meals_total"][position]
        assert [seat["kind"] for seat in data["seats"]] == ["llm", "llm", "policy"]
        # The policy seat has no turns; its actions are the ones the run played.
        assert all(step["turns"][2] is None for step in data["steps"])
        assert all(step["turns"][0] is not None for step in data["steps"])
    # Pages stay small: a few kilobytes of PNG per frame, prompts stored once.
    assert (view / "episode-0000.html").stat().st_size < 120_000


def test_view_refuses_a_transcript_that_does_not_replay(dining_run, tmp_path, capsys):
    edited = tmp_path / "edited"
    edited.mkdir()
    shutil.copy(dining_run / "summary.json", edited / "summary.json")
    lines = []
    for line in (dining_run / "transcript.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["type"] == "step":  # everyone waits: nobody eats, unlike the recorded run
            record["actions"] = [[0] * len(actions) for actions in record["actions"]]
        lines.append(json.dumps(record))
    (edited / "transcript.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(SystemExit) as stopped:
        main(["view", str(edited), "--no-progress"])
    assert stopped.value.code == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1
    assert error.startswith(f"alemlite view: error: run_dir={edited} does not replay")
    assert "episode 0" in error and "summary.json says" in error

    with pytest.raises(SystemExit):
        main(["view", str(tmp_path / "nothing")])
    assert "has no transcript.jsonl" in capsys.readouterr().err


def _open(browser, url: str):
    page = browser.new_page(viewport={"width": 1280, "height": 860})
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}")
            if m.type in ("error", "warning") else None)  # fmt: skip
    page.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    page.goto(url)
    page.wait_for_selector("#step-label")
    return page, problems


def test_the_episode_page_in_a_browser(dining_run, browser, tmp_path):
    view = dining_run / "view"
    (failure,) = [turn for turn in _turns(dining_run) if turn["parse"] == "failed"]
    assert failure["step"] == 2
    page_file = view / f"episode-{failure['episode']:04d}.html"
    page, problems = _open(browser, page_file.as_uri())
    label, frame = page.locator("#step-label"), page.locator("#frame-image")
    assert label.inner_text() == "step 0 of 5"
    first = frame.get_attribute("src")
    agents = page.locator("#agents").inner_text()

    page.locator("#slider").fill("3")
    assert label.inner_text() == "step 3 of 5"
    assert frame.get_attribute("data-step") == "3"
    assert frame.get_attribute("src") != first  # forks were taken in between
    assert page.locator("#agents").inner_text() != agents
    page.keyboard.press("ArrowRight")
    assert label.inner_text() == "step 4 of 5"
    page.locator("#next").click()
    assert label.inner_text() == "end (after 5 steps)"
    assert page.locator("#next").is_disabled()

    # The failed reply: highlighted in its seat's panel and on the timeline.
    step, seat = failure["step"], failure["seat"]
    page.locator("#slider").fill(str(step))
    panel = page.locator(f'.agent[data-seat="{seat}"]')
    assert "failed" in panel.get_attribute("class").split()
    assert "PARSE FAILED" in panel.inner_text()
    assert failure["reply"] in panel.locator(".reply").inner_text()
    assert "fail" in page.locator(f'#timeline .cell[data-step="{step}"]').get_attribute("class")
    assert page.locator(".agent.failed").count() == 1
    assert "policy" in page.locator('.agent[data-seat="2"]').inner_text()
    other = page.locator(f'.agent[data-seat="{1 - seat}"]')  # the other LLM seat answered
    assert other.locator(".reasoning").inner_text() == "reasoning\nfork order"
    assert "<think>" not in other.locator(".reply").inner_text()
    # The prompt is collapsed until opened.
    prompt = panel.locator("details.prompt")
    assert prompt.get_attribute("open") is None
    prompt.locator("summary").click()
    assert "philosopher" in prompt.locator(".messages").inner_text()
    page.locator("#slider").fill(str(step + 1))
    assert page.locator(".agent.failed").count() == 0

    # The cut-off reply, opened at its step through the page's address.
    (cut,) = [turn for turn in _turns(dining_run) if turn["cut_off"]]
    assert cut["step"] == 1 and cut["parse"] != "failed"
    url = (view / f"episode-{cut['episode']:04d}.html").as_uri() + "#step=1"
    cut_page, cut_problems = _open(browser, url)
    assert cut_page.locator("#step-label").inner_text() == "step 1 of 5"
    cell = cut_page.locator('#timeline .cell[data-step="1"]')
    assert "cut" in cell.get_attribute("class").split()
    panel = cut_page.locator(f'.agent[data-seat="{cut["seat"]}"]')
    assert "cut-off" in panel.get_attribute("class").split() and "CUT OFF" in panel.inner_text()
    assert cut_problems == []
    cut_page.close()

    page.locator("#slider").fill(str(step))
    shot = DOCS_FIGURE if os.environ.get("ALEMLITE_WRITE_DOCS") == "1" else tmp_path / "viewer.png"
    shot.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(shot))
    pixels = np.asarray(Image.open(shot).convert("RGB"), np.float32)
    assert pixels.shape[:2] == (860, 1280) and pixels.std() > 20  # not a blank page
    assert problems == []
    page.close()


def test_the_index_lists_the_episodes_with_their_scores(dining_run, browser):
    index, problems = _open_index(browser, dining_run / "view" / "index.html")
    summary = json.loads((dining_run / "summary.json").read_text())
    rows = index.locator("table.episodes tbody tr")
    assert rows.count() == 2
    header = index.locator("table.episodes thead th").all_inner_texts()
    meals = header.index("meals_total")
    for position in range(2):
        cells = rows.nth(position).locator("td").all_inner_texts()
        assert float(cells[meals]) == summary["episodes"]["meals_total"][position]
    failures = header.index("parse failures")
    assert sum(int(rows.nth(i).locator("td").all_inner_texts()[failures]) for i in range(2)) == 1
    rows.nth(1).locator("a").click()
    index.wait_for_selector("#step-label")
    assert index.locator("h1").inner_text().startswith("dining · episode 1")
    assert problems == []
    index.close()


def _open_index(browser, path: Path):
    page = browser.new_page()
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.goto(path.as_uri())
    return page, problems


@pytest.fixture(scope="module")
def matrix_run(tmp_path_factory):
    """The matrix game draws no pictures: its frames are its text view."""
    run = tmp_path_factory.mktemp("matrix_run")
    with ChatServer(lambda messages: "<action>PLAY_A</action>") as server:
        main(["eval-llm", "--env", "matrix", "--base-url", server.base_url, "--model", "scripted",
              "--episodes", "1", "--max-steps", "3", "--num-agents", "2", "--out", str(run),
              "--no-progress", "--team", "llm", "optimal"])  # fmt: skip
    main(["view", str(run), "--no-progress"])
    return run


def test_an_environment_that_draws_no_pictures_shows_text_frames(matrix_run, browser):
    page, problems = _open(browser, (matrix_run / "view" / "episode-0000.html").as_uri())
    assert "rounds played" in page.locator("#frame-text").inner_text()
    page.locator("#slider").fill("2")
    assert "2 of 3 rounds played" in page.locator("#frame-text").inner_text()
    assert problems == []
    page.close()


@pytest.fixture(scope="module")
def craft_run(tmp_path_factory):
    """Craft, two LLM seats and a random one, one episode of 2 steps on a small map."""
    run = tmp_path_factory.mktemp("craft_run")
    with ChatServer(lambda messages: "<action>noop</action>") as server:
        main(["eval-llm", "--env", "craft", "--base-url", server.base_url, "--model", "scripted",
              "--episodes", "1", "--max-steps", "2", "--num-agents", "3", "--map-size", "16",
              "--no-coordination", "--out", str(run), "--no-progress",
              "--team", "llm", "llm", "random"])  # fmt: skip
    main(["view", str(run), "--no-progress"])
    return run


def test_the_craft_map_has_a_legend_of_seat_colours(craft_run, dining_run, browser):
    page, problems = _open(browser, (craft_run / "view" / "episode-0000.html").as_uri())
    items = page.locator("#legend li")
    assert items.all_inner_texts() == ["seat 0 \u00b7 scripted", "seat 1 \u00b7 scripted",
                                       "seat 2 \u00b7 random"]  # fmt: skip
    expected = [f"rgb({r}, {g}, {b})" for r, g, b in CRAFT_COLOURS[:3].tolist()]
    shown = "nodes => nodes.map(node => getComputedStyle(node).backgroundColor)"
    assert page.locator("#legend .swatch").evaluate_all(shown) == expected
    # Each seat's card wears its colour too, and the legend stays as the steps change.
    assert page.locator("#agents h3 .swatch").evaluate_all(shown) == expected
    page.locator("#slider").fill("2")
    assert page.locator("#legend li").count() == 3
    assert problems == []
    page.close()
    # Dining tells seats apart by their place at the table, not by colour: no legend.
    page, problems = _open(browser, (dining_run / "view" / "episode-0000.html").as_uri())
    assert page.locator("#legend").count() == 0 and page.locator(".swatch").count() == 0
    assert problems == []
    page.close()


@pytest.fixture(scope="module")
def stepped_down_run(tmp_path_factory):
    """Dining, constrained, against a server that refuses every constraint: the client steps
    down to free text during the first step, and the later turns are asked in free text."""
    run = tmp_path_factory.mktemp("stepped_down_run")
    refusing = ("guided_choice", "response_format")
    with ChatServer(dining_resource_ordering, unsupported=refusing) as server:
        main(
            ["eval-llm", "--env", "dining", "--base-url", server.base_url, "--model", "scripted",
             "--episodes", "1", "--max-steps", "3", "--num-agents", "3", "--out", str(run),
             "--no-progress", "--constrained"]
        )  # fmt: skip
    main(["view", str(run), "--no-progress"])
    return run


def test_a_run_stepped_down_to_free_text_shows_both_system_prompts(
    stepped_down_run, dining_run, browser
):
    header = next(read_records(stepped_down_run / "transcript.jsonl"))
    page, problems = _open(browser, (stepped_down_run / "view" / "episode-0000.html").as_uri())
    prompts = page.locator("details.system")
    assert prompts.count() == 2
    prompts.locator("summary").last.click()
    assert page.locator("#free-system pre").inner_text() == header["free_system_prompt"]
    # The first step was asked with the constrained prompt, the next ones with the free one.
    assert page.locator(".badge.free").count() == 0
    page.locator("#slider").fill("1")
    assert page.locator(".badge.free").count() == 3
    assert problems == []
    page.close()
    # A free-text run has the one prompt.
    page, problems = _open(browser, (dining_run / "view" / "episode-0000.html").as_uri())
    assert page.locator("details.system").count() == 1 and page.locator(".badge.free").count() == 0
    assert problems == []
    page.close()


def test_the_dining_picture_shows_who_eats_waits_and_holds_forks():
    spec = alemlite.spec("dining")
    env = spec.build(spec.options(num_agents=4))
    params = env.default_params
    draw = jax.jit(lambda state: spec.render_rgb(env, state, params))

    def colours(state) -> set[tuple[int, ...]]:
        frame = np.asarray(draw(state))
        assert frame.shape == (dining_render.SIZE, dining_render.SIZE, 3)
        return set(map(tuple, frame.reshape(-1, 3).tolist()))

    empty = initial_state(4)
    drawn = colours(empty)
    assert dining_render.HUNGRY in drawn and dining_render.FORK_FREE in drawn
    assert dining_render.EATING not in drawn and dining_render.WAITING not in drawn
    # Philosopher 1 eats with forks 1 and 2; philosopher 3 holds fork 3 and waits.
    busy = dataclasses.replace(
        empty,
        fork_holder=jnp.array([-1, 1, 1, 3], jnp.int32),
        eating=jnp.array([False, True, False, False]),
        meals=jnp.array([0, 12, 0, 0], jnp.int32),
    )
    drawn = colours(busy)
    assert dining_render.EATING in drawn and dining_render.WAITING in drawn
    assert dining_render.FOOD in drawn and dining_render.DEADLOCK_RIM not in drawn
    assert dining_render.DEADLOCK_RIM in colours(dataclasses.replace(busy, deadlocked=True))
    # The meal count is written on the plate: another count draws other pixels.
    fed = dataclasses.replace(busy, meals=busy.meals + 1)
    assert (np.asarray(draw(fed)) != np.asarray(draw(busy))).any()


def test_image_prompts_show_their_pictures(dining_run, browser, tmp_path):
    """A turn whose prompt carries OpenAI content parts (text, then a PNG) shows both."""
    run = tmp_path / "images"
    run.mkdir()
    shutil.copy(dining_run / "summary.json", run / "summary.json")
    picture = np.zeros((8, 8, 3), np.uint8)
    picture[:, :4] = (250, 30, 30)
    url = png_data_uri(picture, 256)
    lines = []
    for line in (dining_run / "transcript.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["type"] == "turn" and (record["episode"], record["step"]) == (1, 0):
            text = record["prompt"][-1]["content"]
            record["prompt"][-1]["content"] = [
                {"type": "text", "text": text},
                {"type": "image_url", "image_url": {"url": url}},
            ]
        lines.append(json.dumps(record))
    (run / "transcript.jsonl").write_text("\n".join(lines) + "\n")
    main(["view", str(run), "--no-progress"])
    page, problems = _open(browser, (run / "view" / "episode-0001.html").as_uri())
    prompt = page.locator('.agent[data-seat="0"] details.prompt')
    prompt.locator("summary").click()
    assert prompt.locator("img").get_attribute("src") == url
    assert "philosopher 0" in prompt.locator("pre").last.inner_text()
    assert prompt.locator("img").evaluate("image => image.naturalWidth") == 8
    assert problems == []
    page.close()
