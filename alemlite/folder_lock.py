"""One writer per output folder: a training run or an evaluation holds its folder's lock.

The lock is the operating system's (`flock`), so it ends with its process however that
process ends: a lock file left by a killed run is stale and simply taken. The file names
the holder (host, process id, start time) for the refusal, and is removed when the holder
ends normally.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

from alemlite.core.errors import ConfigError
from alemlite.outputs import writable_folder


class FolderBusy(ConfigError):
    """Another process is writing to the same folder."""


@contextlib.contextmanager
def hold_folder(folder: Path, lock_name: str, user: str, flag: str) -> Iterator[None]:
    """Hold `folder/lock_name` for the block; refuse, naming the holder, when another `user`
    (e.g. "training run") holds it, and point at `flag` (the option that picks the folder)."""
    path = writable_folder(folder, flag) / lock_name
    while True:
        descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(descriptor)
            raise FolderBusy(
                f"{folder} is in use by another {user} ({_holder(path)}; lock {path}); wait for "
                f"it to end or pass another {flag}"
            ) from None
        # The holder before us may have removed the file after we opened it: lock the path's file.
        try:
            same = os.stat(path).st_ino == os.fstat(descriptor).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(descriptor)
    holder = {"host": socket.gethostname(), "pid": os.getpid(), "started": time.strftime("%c")}
    os.ftruncate(descriptor, 0)
    os.write(descriptor, (json.dumps(holder) + "\n").encode())
    try:
        yield
    finally:
        path.unlink(missing_ok=True)
        os.close(descriptor)  # releases the lock


def _holder(path: Path) -> str:
    try:
        holder = json.loads(path.read_text())
        return f"process {holder['pid']} on {holder['host']}, started {holder['started']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "a process that is starting"
