"""The JSONL transcript of a run: written as it happens, read back to resume.

Records, one JSON object per line:
- `header`: the run's fingerprint (what must match to resume), config and system prompts;
- `turn`:   one request and its response: episode, step, seat, the prompt (without the
            system prompt, which is in the header), the reply, tokens, latency, attempts,
            error, the parsed action, parse method and message;
- `step`:   one batched environment step: live episodes and every seat's action;
- `end`:    the summary, when the run finished.

Each line is flushed as soon as it is written, so a crash loses at most the line being
written; a torn last line is ignored on reading. Resuming replays the run, taking every
response found in the transcript instead of asking the model again.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

from llm_bridge.clients.base import Completion

TurnKey = tuple[int, int, int]  # (episode, step, seat)


class TranscriptMismatch(RuntimeError):
    """The transcript on disk was written by a run with a different configuration."""


def read_records(path: Path) -> Iterator[dict[str, Any]]:
    """Every complete record of a transcript; a torn final line is skipped."""
    with Path(path).open(encoding="utf-8") as stream:
        for line in stream:
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                continue


class Transcript:
    """Append-only writer, and the responses of an earlier attempt of the same run."""

    def __init__(self, path: Path, fingerprint: str, header: dict[str, Any], resume: bool = True):
        self.path = Path(path)
        self.cached: dict[TurnKey, Completion] = {}
        self.recorded_steps: set[int] = set()
        self.finished = False
        if resume and self.path.exists() and self.path.stat().st_size > 0:
            self._load(fingerprint)
            mode = "a"
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            mode = "w"
        self._stream: TextIO = self.path.open(mode, encoding="utf-8")
        if mode == "a":
            self._ensure_newline()
        else:
            self.write({"type": "header", "fingerprint": fingerprint, **header})

    def _load(self, fingerprint: str) -> None:
        for record in read_records(self.path):
            kind = record.get("type")
            if kind == "header" and record.get("fingerprint") != fingerprint:
                raise TranscriptMismatch(
                    f"{self.path} was written by a run with another configuration; "
                    "use a new --out folder, or pass --no-resume to start it afresh"
                )
            if kind == "turn":
                self.cached[(record["episode"], record["step"], record["seat"])] = Completion(
                    text=record["reply"],
                    prompt_tokens=record["prompt_tokens"],
                    completion_tokens=record["completion_tokens"],
                    latency_s=record["latency_s"],
                    attempts=record["attempts"],
                    error=record["error"],
                    server=record.get("server", ""),
                )
            elif kind == "step":
                self.recorded_steps.add(record["step"])
            elif kind == "end":
                self.finished = True

    def _ensure_newline(self) -> None:
        # A torn last line must not swallow the next record.
        with self.path.open("rb") as stream:
            stream.seek(0, 2)
            if stream.tell() and (stream.seek(-1, 2), stream.read(1))[1] != b"\n":
                self._stream.write("\n")

    def write(self, record: dict[str, Any]) -> None:
        self._stream.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._stream.flush()

    def close(self) -> None:
        self._stream.close()

    def __enter__(self) -> Transcript:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
