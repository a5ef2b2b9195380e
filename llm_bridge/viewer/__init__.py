"""`alemlite view RUN_DIR`: an LLM run's episodes as self-contained HTML pages.

Each episode is replayed from the run's transcript (`replay`: the header's environment, the
episode's seed, the recorded joint actions; checked against the run's own numbers) and
written as one page (`page`) with a step slider, the environment drawn at every step (its
spec's `render_rgb` as PNG, else `render_text`) and, for every seat, its prompt, reasoning,
reply, parsed action and reward, parse failures and cut-off answers marked. An index page
lists the episodes with their scores. Pages need no server: open `index.html` from disk.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from tqdm.auto import tqdm
from tyro.conf import Positional

from alemlite.core.errors import require
from alemlite.outputs import writable_folder
from llm_bridge.viewer.page import (
    episode_data,
    episode_page,
    index_page,
    png_data_uri,
    write_page,
)
from llm_bridge.viewer.records import read_run
from llm_bridge.viewer.replay import Replayer, check_means


@dataclass(frozen=True)
class ViewConfig:
    """Write one HTML page per episode of an LLM run (the --out folder of alemlite eval-llm)
    and an index of them; open index.html in a browser, no server needed."""

    run_dir: Positional[Path] = Path("runs/llm")
    """the run folder: its transcript.jsonl (and summary.json), or a leaderboard folder
    (leaderboard.json); default: eval-llm's default --out"""
    out: Path | None = None
    """the folder of the pages (default: RUN_DIR/view)"""
    frame_px: int = 256
    """the longest side of a drawn frame, in pixels (a larger frame is shrunk by a whole factor)"""
    progress: bool = True
    """a progress bar over the episodes"""

    def __post_init__(self) -> None:
        require(self.frame_px >= 16, f"frame_px={self.frame_px} must be at least 16")
        require(
            self.out is None or not self.out.is_file(), f"out={self.out} is a file; give a folder"
        )


def view(config: ViewConfig) -> Path:
    """Write one HTML page per episode of an LLM run (replayed from its transcript) and an
    index of them, or a leaderboard folder's page; returns the index's path."""
    board = config.run_dir / "leaderboard.json"
    if board.is_file():
        from llm_bridge.viewer.leaderboard import page

        index = (config.run_dir if config.out is None else config.out) / "index.html"
        writable_folder(index.parent)
        write_page(index, page(json.loads(board.read_text())))
        print(f"wrote {index}; open it in a browser")
        return index
    records = read_run(config.run_dir)
    require(
        bool(records.steps),
        f"run_dir={config.run_dir}: the transcript has no step yet; nothing to show",
    )
    replayer = Replayer(records, lambda frame: png_data_uri(frame, config.frame_px))
    out = config.run_dir / "view" if config.out is None else config.out
    writable_folder(out)
    names = replayer.env.action_names
    headline = [*replayer.spec.metrics, "episode_return", "episode_length"]
    rows, episodes = [], []
    bar = tqdm(total=len(records.episode_ids), unit="ep", desc="pages", disable=not config.progress)
    for episode in replayer.episodes():
        name = f"episode-{episode.episode:04d}.html"
        data = episode_data(
            records, episode, names, replayer.draws, headline, replayer.seat_colours
        )
        rows.append((episode, name, write_page(out / name, episode_page(data))))
        episodes.append(episode)
        bar.update()
    bar.close()
    check_means(records, episodes)
    headline = [name for name in headline[:-1] if name in episodes[0].metrics]
    index = out / "index.html"
    write_page(index, index_page(records, rows, headline))
    sizes = sorted(size for _, _, size in rows)
    print(
        f"wrote {len(rows)} episode page{'s' * (len(rows) != 1)} and {index} (a page is about "
        f"{sizes[len(sizes) // 2] / 1024:.0f} KiB); open it in a browser"
    )
    return index
