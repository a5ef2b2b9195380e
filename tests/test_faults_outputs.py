"""Outputs that cannot be written: every command says so in one line, before any work.

`--out` names a file, a folder inside a file, or a read-only folder, for each command that
writes (`train`, `eval`, `eval-llm`, `view`, `merge`). The tables are tiny (dining, 3
philosophers, 4 steps) and the LLM is the loopback server of `tests/llm_server.py`.
"""

from __future__ import annotations

import errno
import os
import re
from pathlib import Path

import pytest

from alemlite_app import evaluate
from alemlite_app.cli import main
from tests.llm_server import ChatServer, dining_resource_ordering

TABLE = ["--env", "dining", "--num-agents", "3", "--max-steps", "4", "--episodes", "2"]
LLM = ["--model", "scripted", "--no-progress", "--base-url"]
TRAIN = ["train", "ippo", *TABLE[:-2], "--num-envs", "4", "--num-steps", "4", "--num-updates",
         "2", "--updates-per-chunk", "2", "--eval-interval", "2", "--no-progress"]  # fmt: skip


def refusal(argv: list[str], capsys) -> str:
    """The one line `alemlite ARGV` refuses with (exit status 2)."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2
    # XLA's own logger may add a line on a loaded machine; it is not the command's output.
    lines = [
        line for line in capsys.readouterr().err.splitlines() if not re.match(r"[IWEF]\d{4} ", line)
    ]
    assert len(lines) == 1, lines
    return lines[0]


@pytest.fixture(scope="module")
def server():
    with ChatServer(dining_resource_ordering) as chat:
        yield chat


@pytest.fixture(scope="module")
def llm_run(server, tmp_path_factory) -> Path:
    """A finished eval-llm run, for `view`."""
    out = tmp_path_factory.mktemp("llm")
    main(["eval-llm", *TABLE, *LLM, server.base_url, "--out", str(out)])
    return out


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> list[Path]:
    """The two shards of an `alemlite eval`, for `merge`."""
    root = tmp_path_factory.mktemp("shards")
    for index in (1, 2):
        main(["eval", *TABLE, "--shard", f"{index}/2", "--out", str(root / str(index))])
    return [root / "1", root / "2"]


def command(name: str, out: Path, server, llm_run: Path, shards: list[Path]) -> list[str]:
    """`alemlite NAME ... --out OUT`."""
    return {
        "train": [*TRAIN, "--out", str(out)],
        "eval": ["eval", *TABLE, "--out", str(out)],
        "eval-llm": ["eval-llm", *TABLE, *LLM, server.base_url, "--out", str(out)],
        "view": ["view", str(llm_run), "--no-progress", "--out", str(out)],
        "merge": ["merge", *map(str, shards), "--out", str(out)],
    }[name]


COMMANDS = ["train", "eval", "eval-llm", "view", "merge"]


@pytest.mark.parametrize("name", COMMANDS)
def test_an_out_that_is_a_file_or_lies_in_one_is_refused(
    name, tmp_path, capsys, server, llm_run, shards
):
    file = tmp_path / "taken"
    file.write_text("not a folder\n")
    for out, why in ((file, "is a file"), (file / "sub", f"lies inside the file {file}")):
        line = refusal(command(name, out, server, llm_run, shards), capsys)
        assert line == f"alemlite {name}: error: --out={out} {why}; give a folder"
    assert file.read_text() == "not a folder\n"


@pytest.fixture
def read_only(monkeypatch):
    """Makes a folder read-only by its mode. Root ignores modes: for root, every file or folder
    made in it is also refused as a read-only file system refuses it."""
    folders: list[Path] = []

    def make(folder: Path) -> Path:
        folder.mkdir(parents=True)
        folder.chmod(0o555)
        folders.append(folder)
        return folder

    if os.geteuid() == 0:
        inside = lambda path: any(Path(path).is_relative_to(f) for f in folders)  # noqa: E731
        real_open, real_mkdir = os.open, os.mkdir
        writing = os.O_WRONLY | os.O_RDWR | os.O_CREAT

        def open_(path, flags, *args, **kwargs):
            if flags & writing and inside(path):
                raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
            return real_open(path, flags, *args, **kwargs)

        def mkdir(path, *args, **kwargs):
            if inside(path):
                raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
            return real_mkdir(path, *args, **kwargs)

        monkeypatch.setattr(os, "open", open_)
        monkeypatch.setattr(os, "mkdir", mkdir)
    yield make
    for folder in folders:
        folder.chmod(0o755)


@pytest.mark.parametrize("name", COMMANDS)
def test_a_read_only_out_is_refused_before_any_work(
    name, tmp_path, capsys, monkeypatch, read_only, server, llm_run, shards
):
    """Checked first: no episode is played, no request sent, nothing compiled or merged."""
    out = read_only(tmp_path / "read-only")
    played = []
    monkeypatch.setattr(evaluate, "evaluate_policy", lambda *a, **k: played.append(a))
    requests = server.log.requests
    line = refusal(command(name, out, server, llm_run, shards), capsys)
    assert line.startswith(f"alemlite {name}: error: --out={out} cannot be written (")
    assert line.endswith("); give a folder you can write to")
    assert server.log.requests == requests and not played
    assert list(out.iterdir()) == []
