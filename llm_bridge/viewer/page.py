"""The viewer's HTML: one self-contained page per episode and an index of the episodes.

A page is the viewer's own CSS and JavaScript (`assets/`) inlined, plus the episode as one
JSON block: a table of distinct strings (prompts repeat turn to turn through the history,
frames repeat while nothing moves) that everything else points into by number. Frames are
PNG data URIs, shrunk by a whole factor to at most `frame_px` pixels a side, so a page
opens from file:// with no server and nothing fetched.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from llm_bridge.viewer.records import RunRecords
from llm_bridge.viewer.replay import Episode

ASSETS = resources.files("llm_bridge.viewer") / "assets"


def _asset(name: str) -> str:
    return (ASSETS / name).read_text(encoding="utf-8")


def png_data_uri(frame: np.ndarray, frame_px: int) -> str:
    """A frame as a PNG data URI, shrunk by the smallest whole factor that fits `frame_px`;
    a frame of at most 256 colours is stored with its exact palette (a third of the bytes)."""
    image = Image.fromarray(np.asarray(frame, np.uint8))
    factor = math.ceil(max(image.size) / frame_px)
    if factor > 1:
        image = image.reduce(factor)
    pixels = np.asarray(image).reshape(-1, 3)
    palette, indices = np.unique(pixels, axis=0, return_inverse=True)
    if len(palette) <= 256:
        image = Image.fromarray(indices.astype(np.uint8).reshape(image.height, image.width), "P")
        image.putpalette(palette.astype(np.uint8).tobytes())
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=True)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


class _Strings:
    """Distinct strings, each stored once; values are their numbers."""

    def __init__(self) -> None:
        self.index: dict[str, int] = {}

    def __call__(self, text: str | None) -> int | None:
        if text is None:
            return None
        return self.index.setdefault(text, len(self.index))

    def table(self) -> list[str]:
        return list(self.index)


def _content(content: Any, strings: _Strings) -> int | list[dict[str, int]]:
    """A message's content: a text's number, or its OpenAI content parts as `{"text": n}` and
    `{"image": n}` (n: the text's or the image URL's number)."""
    if isinstance(content, str):
        return strings(content)
    parts = []
    for part in content or ():
        if part.get("type") == "image_url":
            parts.append({"image": strings(part["image_url"]["url"])})
        else:
            parts.append({"text": strings(str(part.get("text", "")))})
    return parts


def _turn(record: dict[str, Any], strings: _Strings) -> dict[str, Any]:
    return {
        "prompt": [
            [message["role"], _content(message["content"], strings)] for message in record["prompt"]
        ],
        "reasoning": strings(record.get("reasoning") or None),
        "reply": strings(record.get("reply") or ""),
        "action": record.get("action", ""),
        "parse": record.get("parse", ""),
        "failed": record.get("parse") == "failed",
        "cut_off": bool(record.get("cut_off")),
        "error": record.get("error") or "",
        "message": record.get("message") or "",
        "model": record.get("model", ""),
        "tokens": [record.get("prompt_tokens", 0), record.get("completion_tokens", 0)],
        "latency_s": record.get("latency_s", 0.0),
        "attempts": record.get("attempts", 1),
        "free_prompt": record.get("system") == "free",
    }


def turn_counts(records: RunRecords, episode: int) -> dict[str, int]:
    """An episode's LLM turns: all of them, parse failures, cut-offs and failed requests."""
    turns = [turn for (e, _, _), turn in records.turns.items() if e == episode]
    return {
        "turns": len(turns),
        "parse_failures": sum(turn.get("parse") == "failed" for turn in turns),
        "cut_off": sum(bool(turn.get("cut_off")) for turn in turns),
        "errors": sum(bool(turn.get("error")) for turn in turns),
    }


def episode_data(
    records: RunRecords,
    episode: Episode,
    action_names: tuple[str, ...],
    images: bool,
    headline: list[str],
    seat_colours: list[str] | None = None,
) -> dict[str, Any]:
    """Everything the episode page shows, as JSON (`headline`: the metrics shown first;
    `seat_colours`: each seat's colour in the pictures, for the legend)."""
    strings = _Strings()
    config = records.config
    team = list(config.get("team", ()))
    llm = records.llm_seats()
    seats = [
        {
            "name": name,
            "kind": "llm" if seat in llm else "policy",
            **({"colour": seat_colours[seat]} if seat_colours else {}),
        }
        for seat, name in enumerate(team)
    ]
    frames = [strings(frame) for frame in episode.frames]
    steps = []
    for t in range(episode.length):
        turns = [records.turns.get((episode.episode, t, seat)) for seat in range(len(seats))]
        steps.append(
            {
                "actions": episode.actions[t].tolist(),
                "rewards": [round(float(r), 6) for r in episode.rewards[t]],
                "turns": [None if turn is None else _turn(turn, strings) for turn in turns],
            }
        )
    return {
        "env": config.get("env", ""),
        "episode": episode.episode,
        "seed": episode.seed,
        "finished": episode.finished,
        "metrics": episode.metrics,
        "headline": headline,
        "counts": turn_counts(records, episode.episode),
        "setting": _setting(config),
        "seats": seats,
        "action_names": list(action_names),
        "system_prompt": strings(records.header.get("system_prompt") or ""),
        # A constrained run's free-text prompt, sent once its server stepped down.
        "free_system_prompt": strings(records.header.get("free_system_prompt")),
        "frame_kind": "image" if images else "text",
        "frames": frames,
        "steps": steps,
        "strings": strings.table(),
    }


def _setting(config: dict[str, Any]) -> str:
    options = ", ".join(f"{k}={v}" for k, v in (config.get("options") or {}).items())
    prompt = (config.get("prompt") or {}).get("variant", "")
    return f"{config.get('env', '')} ({options}); prompt {prompt}".strip()


def _json_block(data: Any) -> str:
    # No "<" inside the script element, so that no text of a transcript can end it early.
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")


def episode_page(data: dict[str, Any]) -> str:
    """The self-contained HTML page of one episode."""
    title = f"{data['env']} episode {data['episode']}"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<style>{_asset('viewer.css')}</style></head>\n<body>"
        '<div id="app"><noscript>This page needs JavaScript.</noscript></div>\n'
        f'<script type="application/json" id="episode-data">{_json_block(data)}</script>\n'
        f"<script>{_asset('episode.js')}</script>\n</body></html>\n"
    )


def _number(value: float) -> str:
    """A score for the table: three significant digits; whole and large numbers as integers."""
    return f"{value:.0f}" if float(value).is_integer() or abs(value) >= 1000 else f"{value:.3g}"


def index_page(
    records: RunRecords, rows: list[tuple[Episode, str, int]], headline: list[str]
) -> str:
    """The run's episodes with their scores, each linked to its page: `(episode, file, bytes)`."""
    config = records.config
    end = records.end
    if end is None:
        status = "unfinished run (no end record yet)"
    elif end.get("valid"):
        status = "valid run"
    else:
        status = f"NOT VALID: {end.get('reason')}"
    head = [
        "episode", "seed", "steps", *headline, "LLM turns", "parse failures", "cut off", "page",
    ]  # fmt: skip
    lines = []
    for episode, name, size in rows:
        counts = turn_counts(records, episode.episode)
        failures = counts["parse_failures"]
        cells = [
            f'<a href="{html.escape(name)}">episode {episode.episode}</a>',
            str(episode.seed),
            str(episode.length) + ("" if episode.finished else " (unfinished)"),
            *(_number(episode.metrics[m]) if m in episode.metrics else "" for m in headline),
            str(counts["turns"]),
            f'<span class="{"bad" if failures else ""}">{failures}</span>',
            str(counts["cut_off"]),
            f"{size / 1024:.0f} KiB",
        ]
        lines.append("<tr>" + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>")
    team = ", ".join(html.escape(str(name)) for name in config.get("team", ()))
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(str(records.folder))}: episodes</title>"
        f'<style>{_asset("viewer.css")}</style></head>\n<body><div id="index">'
        f"<h1>{html.escape(str(records.folder.name or records.folder))}</h1>"
        f"<p>{html.escape(_setting(config))}</p><p>team: {team}</p>"
        f'<p class="{"bad" if end is not None and not end.get("valid") else ""}">'
        f"{html.escape(status)}</p>"
        '<table class="episodes"><thead><tr>'
        + "".join(f"<th>{html.escape(name)}</th>" for name in head)
        + "</tr></thead><tbody>"
        + "\n".join(lines)
        + "</tbody></table></div></body></html>\n"
    )


def write_page(path: Path, text: str) -> int:
    """Write a page; its size in bytes."""
    data = text.encode("utf-8")
    path.write_bytes(data)
    return len(data)
