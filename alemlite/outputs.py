"""Output folders: checked before any work, and a write that fails is said in one line.

A command that writes files (a training run, an evaluation, pages, a merged result) first
makes its folder and writes a probe file there, so that a folder it cannot write (a file
in its place or its path, no permission, a read-only file system) is refused before
anything is computed, in one line naming the folder. A write that fails later (the disk
fills up) is an `OutputWriteError`, which the command prints in one line too.
"""

from __future__ import annotations

import errno
import tempfile
from pathlib import Path

from alemlite.core.errors import ConfigError

# What a failed write of an output says (a read that fails is another problem).
WRITE_ERRORS = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EROFS, errno.EACCES, errno.EPERM)


class OutputWriteError(ConfigError):
    """A command's files could not be written (e.g. the disk is full)."""


def writable_folder(folder: Path, name: str = "out") -> Path:
    """Make `folder` (with its parents) and check that a file can be written in it; refuse in
    one line naming `name=folder` where not. Returns `folder`."""
    folder = Path(folder)
    existing = next((path for path in (folder, *folder.parents) if path.exists()), None)
    if existing is not None and not existing.is_dir():
        where = "is a file" if existing == folder else f"lies inside the file {existing}"
        raise ConfigError(f"{name}={folder} {where}; give a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        raise ConfigError(
            f"{name}={folder} cannot be written ({error.strerror or error}); give a folder "
            "you can write to"
        ) from None
    return folder


def is_write_failure(error: BaseException) -> bool:
    """Whether `error` is a write refused by the file system (full, read-only, no permission)."""
    return isinstance(error, OSError) and error.errno in WRITE_ERRORS


def write_failure(where: Path, error: OSError, kept: str) -> OutputWriteError:
    """The one-line error of a write to `where` that failed; `kept` says what is kept and how
    to go on."""
    reason = "the disk is full" if error.errno == errno.ENOSPC else error.strerror or str(error)
    return OutputWriteError(f"could not write to {where} ({reason}); {kept}")
