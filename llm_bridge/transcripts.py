"""The JSONL transcript of a run: written as it happens, read back to resume.

Records, one JSON object per line:
- `header`: the run's fingerprint (what must match to resume), config and system prompts
            (`system_prompt`; a constrained run's `free_system_prompt` too, see
            `llm_bridge.system_prompts`);
- `turn`:   one request and its response: episode, step, seat, the prompt (without the
            system prompt, which is in the header; a content may be a list of text and
            image parts), the reply (the answer, without its reasoning), the reasoning
            (null if none), whether the token budget cut it off, how it was asked (mode),
            tokens, latency, attempts, error, the parsed action, parse method and message
            (and `system: "free"` where a constrained run asked it with the free prompt);
- `step`:   one batched environment step: live episodes and every seat's action;
- `end`:    the summary, when the run finished (or stopped as not valid).

The file is append-only. Each record goes to the operating system in one write as soon
as it exists, and a write that fails (a full disk) is undone, so the file never holds a
half record of its own making; a kill in the middle of a write can still leave a partial
last line, which resuming moves to `transcript.jsonl.torn` and says so. Resuming replays
the run, taking every answered response whose prompt is the one the replay asks again
instead of asking the model; failed requests stay in the file but are asked again.

One run at a time writes to an output folder: the runner holds `OUT/.run.lock`
(`alemlite.folder_lock`) for the whole run.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from alemlite.core.errors import ConfigError
from alemlite.outputs import OutputWriteError
from llm_bridge.clients.base import Completion

TurnKey = tuple[int, int, int, str]  # (episode, step, seat, prompt digest)


class TranscriptMismatch(ConfigError):
    """The transcript on disk was written by a run with a different configuration."""


def prompt_digest(prompt: Sequence[dict[str, str]]) -> str:
    """A short hash of a turn's prompt (without the system prompt), as the resume key."""
    text = json.dumps(list(prompt), ensure_ascii=False, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def read_records(path: Path) -> Iterator[dict[str, Any]]:
    """Every complete record of a transcript; unreadable lines (a torn write) are skipped."""
    with Path(path).open(encoding="utf-8") as stream:
        for line in stream:
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                continue


def write_file(path: Path, text: str) -> None:
    """Replace `path` by `text` at once: a failed write leaves the old file whole."""
    path = Path(path)
    partial = path.with_name(path.name + ".partial")
    try:
        partial.write_text(text, encoding="utf-8")
        os.replace(partial, path)
    except OSError as error:
        with contextlib.suppress(OSError):
            partial.unlink()
        raise OutputWriteError(
            f"could not write {path} ({error.strerror or error}); free space and rerun the "
            "same command: the transcript keeps every turn"
        ) from error


def set_aside(folder: Path, names: Sequence[str]) -> Path | None:
    """Move the named files of `folder` into a new `folder/previous-K`; return it, or None."""
    present = [Path(folder) / name for name in names if (Path(folder) / name).exists()]
    if not present:
        return None
    k = 1
    while (Path(folder) / f"previous-{k}").exists():
        k += 1
    kept = Path(folder) / f"previous-{k}"
    kept.mkdir()
    for path in present:
        os.replace(path, kept / path.name)
    return kept


class Transcript:
    """Append-only writer, and the answered responses of an earlier attempt of the same run."""

    def __init__(self, path: Path, fingerprint: str, header: dict[str, Any], resume: bool = True):
        self.path = Path(path)
        self.cached: dict[TurnKey, Completion] = {}
        self.steps: dict[int, dict[str, Any]] = {}  # step -> its latest record
        self.failed_records = 0
        self.notes: list[str] = []  # what resuming found and repaired, for the user
        self.finished = False
        resuming = resume and self.path.exists() and self.path.stat().st_size > 0
        if resuming:
            resuming = self._load(fingerprint)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._size = os.fstat(self._fd).st_size
        self.resumed = resuming
        if not resuming:
            self.write({"type": "header", "fingerprint": fingerprint, **header})

    def _load(self, fingerprint: str) -> bool:
        """Read an earlier attempt; repair a torn last line. False if nothing is left of it."""
        header, unreadable, offset = False, 0, 0
        with self.path.open("rb") as stream:
            for line in stream:
                try:
                    record = json.loads(line)
                except (json.JSONDecodeError, UnicodeDecodeError):
                    if not line.endswith(b"\n"):
                        self._cut_torn_tail(offset, line)
                        break
                    unreadable += 1
                    offset += len(line)
                    continue
                if not line.endswith(b"\n"):  # whole, but killed before its newline
                    with self.path.open("ab") as append:
                        append.write(b"\n")
                offset += len(line)
                header = self._take(record, fingerprint) or header
        if unreadable:
            self.notes.append(f"skipped {unreadable} unreadable lines of {self.path}")
        if not header and offset:
            raise TranscriptMismatch(
                f"{self.path} has no header record, so it cannot be resumed; use a new --out "
                "folder, or pass --no-resume to start afresh (the old files are kept)"
            )
        return header

    def _take(self, record: dict[str, Any], fingerprint: str) -> bool:
        kind = record.get("type")
        if kind == "header":
            if record.get("fingerprint") != fingerprint:
                raise TranscriptMismatch(
                    f"{self.path} was written by a run with another configuration; "
                    "use a new --out folder, or pass --no-resume to start it afresh "
                    "(the old files are kept)"
                )
            return True
        if kind == "turn":
            if record["error"]:
                self.failed_records += 1  # kept in the file, asked again
                return False
            key = (record["episode"], record["step"], record["seat"])
            self.cached[(*key, prompt_digest(record["prompt"]))] = Completion(
                text=record["reply"],
                prompt_tokens=record["prompt_tokens"],
                completion_tokens=record["completion_tokens"],
                latency_s=record["latency_s"],
                attempts=record["attempts"],
                server=record.get("server", ""),
                reasoning=record["reasoning"],
                cut_off=record["cut_off"],
                mode=record["mode"],
            )
        elif kind == "step":
            self.steps[record["step"]] = {"live": record["live"], "actions": record["actions"]}
        elif kind == "end":
            self.finished = True
        return False

    def _cut_torn_tail(self, offset: int, fragment: bytes) -> None:
        kept = self.path.with_name(self.path.name + ".torn")
        with kept.open("ab") as stream:
            stream.write(fragment + b"\n")
        os.truncate(self.path, offset)
        self.notes.append(
            f"{self.path} ended in a partial line ({len(fragment)} bytes, from an interrupted "
            f"write): removed it (kept in {kept.name}); every complete record before it is used"
        )

    def write(self, record: dict[str, Any]) -> None:
        """Append one record, whole or not at all."""
        data = (json.dumps(record, ensure_ascii=False) + "\n").encode()
        start = self._size
        try:
            written = 0
            while written < len(data):
                written += os.write(self._fd, data[written:])
        except OSError as error:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, start)  # no half record left behind
            reason = "the disk is full" if error.errno == errno.ENOSPC else error.strerror
            raise OutputWriteError(
                f"could not write to {self.path} ({reason or error}); every record written "
                "before is kept: free space and rerun the same command to resume"
            ) from error
        self._size = start + len(data)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> Transcript:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
