"""Every `alemlite` command in the README's command blocks runs, with tiny budgets.

The blocks are read from README.md as a reader copies them; each command runs in order
in one scratch folder (so `--resume` finds the run before it and `compare` the reports),
through the same entry point as the shell, with budget flags appended (the last value of
a flag wins, as on any command line). `...` and `vllm serve` stand for a model server:
the tests' loopback server answers instead. The tests' tiny Llama (tests/tiny_lm.py) stands
in for the local model of `--backend hf` and `finetune`, as a budget: SmolLM2 itself plays
through the same commands in tests/test_llm_real_model.py and tests/test_finetune.py.
"""

from __future__ import annotations

import glob
import re
import shlex
from pathlib import Path

import pytest

from alemlite_app.cli import main
from tests.llm_server import ChatServer
from tests.tiny_lm import tiny_llama

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
# The budgets appended to each command, by its first word.
BUDGETS = {
    "train": [
        "--num-updates", "2", "--updates-per-chunk", "2", "--eval-interval", "2",
        "--num-envs", "8", "--num-steps", "4", "--num-seeds", "1", "--eval-episodes", "2",
        "--test-episodes", "2", "--network.hidden-size", "8", "--no-progress",
    ],
    "eval": ["--episodes", "2", "--max-steps", "2"],
    "eval-llm": ["--episodes", "2", "--max-steps", "3", "--no-progress"],
    "compare": [],
    "gap": [
        "--episodes", "2", "--max-steps", "3", "--no-progress", "--scripted", "resource_ordering",
        "--team-sizes", "5",
    ],
    "merge": [],
    "view": [],
    "finetune": [
        "--num-updates", "1", "--num-envs", "2", "--group.group-size", "2", "--max-steps", "2",
        "--num-epochs", "1", "--eval-interval", "1", "--eval-episodes", "1", "--test-episodes",
        "1", "--hf-threads", "1", "--no-progress",
    ],
}  # fmt: skip


def readme_commands(text: str) -> list[str]:
    """The `alemlite` commands of the fenced shell blocks, continuation lines joined."""
    commands = []
    for block in re.findall(r"```(?:bash|sh|console)\n(.*?)```", text, flags=re.S):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            line = line.split("  #")[0].strip()
            if line.startswith("alemlite "):
                commands.append(line)
    return commands


def test_the_readme_blocks_hold_the_commands_a_reader_runs():
    commands = readme_commands(README.read_text())
    words = {shlex.split(command)[1] for command in commands}
    assert {"train", "eval", "eval-llm", "compare"} <= words
    assert set(words) <= set(BUDGETS), f"give {sorted(set(words) - set(BUDGETS))} a budget"


@pytest.fixture
def tiny_model_folder(tmp_path):
    transformers, torch = pytest.importorskip("transformers"), pytest.importorskip("torch")
    model, tokenizer = tiny_llama(transformers, torch)
    folder = tmp_path / "tiny-llama"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def test_every_readme_command_runs(tmp_path, monkeypatch, tiny_model_folder):
    monkeypatch.chdir(tmp_path)
    with ChatServer(lambda messages: "<action>0</action>") as server:
        for command in readme_commands(README.read_text()):
            argv: list[str] = []
            for word in shlex.split(command)[1:]:
                if word == "..." and argv[-1] == "--base-url":
                    argv.append(server.base_url)
                elif word == "..." and argv[-1] == "--model":
                    argv.append("stand-in")
                elif word == "...":
                    argv += ["--base-url", server.base_url]
                elif "*" in word:
                    matches = sorted(glob.glob(word))
                    assert len(matches) == 1, f"{command}: {word} matches {matches}"
                    argv.append(matches[0])
                elif (ROOT / word).is_file():  # a file of the repository, where a reader is
                    argv.append(str(ROOT / word))
                elif argv and argv[-1] == "--base-url":  # the server a reader starts
                    argv.append(server.base_url)
                else:
                    argv.append(word)
            local_model = argv[0] == "finetune" or "hf" in argv
            budget = [*BUDGETS[argv[0]], *(["--model", str(tiny_model_folder)] * local_model)]
            try:
                main([*argv, *budget])
            except SystemExit as error:
                pytest.fail(f"`{command}` exited {error.code}")
