"""Fault injection for LLM runs: what the user sees, and that nothing already written is lost.

Every test drives the real openai client against the loopback server of
`tests/llm_server.py`, which answers dining prompts with resource ordering (a
deterministic model), on a tiny table: 3 philosophers, 4 steps, 2 episodes, so at most
24 LLM turns. The compiled batch program is shared by every run of one environment.
"""

from __future__ import annotations

import errno
import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

import alemlite
from alemlite.core.errors import ConfigError
from alemlite.core.prompting import PromptOptions
from alemlite.envs.dining.prompting import DiningRenderer
from alemlite.folder_lock import FolderBusy
from alemlite_app.cli import main
from llm_bridge.agents import LLMAgent
from llm_bridge.clients.base import ModelServerError
from llm_bridge.clients.openai_backend import OpenAIBackend, OpenAIConfig
from llm_bridge.runner import InvalidRun, RunConfig, run_evaluation
from llm_bridge.transcripts import OutputWriteError
from tests.llm_server import ChatServer, Faults, dining_resource_ordering

PHILOSOPHERS, MAX_STEPS, EPISODES, SEED = 3, 4, 2, 3
MAX_TURNS = PHILOSOPHERS * MAX_STEPS * EPISODES
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def env():
    return alemlite.make("dining", num_philosophers=PHILOSOPHERS, max_steps=MAX_STEPS)


def team(url: str, **overrides) -> list[LLMAgent]:
    config = dict(model="scripted", base_urls=(url,), backoff_s=0.001, timeout_s=10.0)
    return [LLMAgent(OpenAIBackend(OpenAIConfig(**(config | overrides))), "scripted")] * (
        PHILOSOPHERS
    )


def run(env, agents, out: Path, max_failed_fraction: float = 0.01, resume: bool = True):
    config = RunConfig(
        episodes=EPISODES,
        seed=SEED,
        out=out,
        progress=False,
        resume=resume,
        max_failed_fraction=max_failed_fraction,
    )
    return run_evaluation(env, DiningRenderer(), agents, PromptOptions(), config)


def lines(path: Path) -> list[str]:
    """The transcript's lines, each of which must be a whole JSON record."""
    text = path.read_text()
    assert text.endswith("\n")
    rows = text.splitlines()
    for row in rows:
        json.loads(row)
    return rows


def turns(out: Path) -> list[dict]:
    return [json.loads(row) for row in lines(out / "transcript.jsonl") if '"type": "turn"' in row]


def eval_llm_args(url: str, out: Path, *extra: str) -> list[str]:
    return [
        "eval-llm", "--base-url", url, "--model", "scripted", "--episodes", str(EPISODES),
        "--seed", str(SEED), "--num-agents", str(PHILOSOPHERS), "--max-steps", str(MAX_STEPS),
        "--out", str(out), "--no-progress", *extra,
    ]  # fmt: skip


@pytest.fixture(scope="module")
def reference(env, tmp_path_factory):
    """An uninterrupted run against a server that never fails."""
    with ChatServer(dining_resource_ordering) as server:
        return run(env, team(server.base_url), tmp_path_factory.mktemp("reference"))


# ---- a server that refuses the requests themselves ---------------------------------------


@pytest.mark.parametrize(
    ("status", "words"),
    [
        (401, "invalid API key"),
        (403, "no access to this model"),
        (404, "The model `scripted` does not exist"),
        (400, "unknown model"),
    ],
)
def test_a_refusing_server_stops_the_run_at_once(env, tmp_path, status, words):
    faults = Faults(status=status, status_message=words)
    with (
        ChatServer(dining_resource_ordering, faults) as s,
        pytest.raises(ModelServerError) as caught,
    ):
        run(env, team(s.base_url, max_retries=5), tmp_path)
    message = str(caught.value)
    assert isinstance(caught.value, ConfigError) and "\n" not in message
    assert f"{s.base_url}/chat/completions answered {status} for model 'scripted'" in message
    assert words in message
    # At once: nothing after the first step's requests, and none asked twice (the episodes
    # start alike, so one prompt may come once from each episode).
    assert s.log.refused >= 1 and s.log.requests <= PHILOSOPHERS * EPISODES
    assert max(Counter(s.log.order).values()) <= EPISODES
    assert not (tmp_path / "summary.json").exists()
    assert [json.loads(row)["type"] for row in lines(tmp_path / "transcript.jsonl")] == ["header"]


def test_the_command_says_so_in_one_line(tmp_path, capsys):
    faults = Faults(status=401, status_message="Incorrect API key provided")
    with (
        ChatServer(dining_resource_ordering, faults) as server,
        pytest.raises(SystemExit) as caught,
    ):
        main(eval_llm_args(server.base_url, tmp_path))
    assert caught.value.code == 2
    assert command_lines(capsys.readouterr().err) == [
        f"alemlite eval-llm: error: the model server at {server.base_url}/chat/completions "
        "answered 401 for model 'scripted': Incorrect API key provided; set $OPENAI_API_KEY "
        "to a key the server accepts (--api-key-env)"
    ]


def command_lines(stderr: str) -> list[str]:
    # XLA's own logger may add a line on a loaded machine ("W1201 ... Constant folding an
    # instruction is taking > 1s"); it is not the command's output.
    return [line for line in stderr.splitlines() if not re.match(r"[IWEF]\d{4} ", line)]


# ---- a server whose failures retries do not cure ------------------------------------------


@pytest.mark.parametrize("status", [429, 500, 503])
def test_retried_failures_make_the_run_not_valid(env, tmp_path, status):
    with (
        ChatServer(dining_resource_ordering, Faults(status=status)) as server,
        pytest.raises(InvalidRun, match="the run is not valid") as caught,
    ):
        run(env, team(server.base_url, max_retries=2), tmp_path)
    report = caught.value.report
    written = json.loads((tmp_path / "summary.json").read_text())
    assert written["valid"] is False and written["complete"] is False
    assert "summary" not in written and "episodes" not in written  # no score without play
    assert (
        f"more than max_failed_fraction=0.01 of the at most {MAX_TURNS} turns"
        in (written["reason"])
    )
    assert f"{status}" in written["reason"]  # the last error, with its status
    failed = written["turns"]["failed"]
    assert written["turns"] == {"total": failed, "answered": 0, "failed": failed, "unparsed": 0}
    assert written["headline"] == (
        f"LLM turns: 0 answered, {failed} failed, 0 unparsed (of {failed})"
    )
    assert report["turns"] == written["turns"]
    # Retried: every failed turn was asked three times (1 + 2 retries), all of them recorded.
    assert server.log.refused == 3 * failed
    recorded = turns(tmp_path)
    assert len(recorded) == failed and all(t["attempts"] == 3 and t["error"] for t in recorded)


def test_an_invalid_run_fails_the_command_in_one_line(tmp_path, capsys):
    with (
        ChatServer(dining_resource_ordering, Faults(status=500)) as server,
        pytest.raises(SystemExit) as caught,
    ):
        main(eval_llm_args(server.base_url, tmp_path, "--max-retries", "0"))
    assert caught.value.code == 2
    captured = capsys.readouterr()
    [error] = captured.err.splitlines()
    assert error.startswith("alemlite eval-llm: error: the run is not valid: stopped at step 0")
    assert "--max-failed-fraction=0.01" in error and "rerun the same command" in error
    assert captured.out.startswith(
        "LLM turns: 0 answered, 6 failed, 0 unparsed (of 6)\nNOT VALID: stopped at step 0: "
    )
    assert json.loads((tmp_path / "summary.json").read_text())["valid"] is False


def greedy_left(messages: list[dict]) -> str:
    return "<action>GRAB_LEFT</action>"


def test_a_finished_run_past_the_failure_share_is_not_valid(env, tmp_path):
    """Every philosopher grabs its left fork: deadlock ends each episode within a few steps,
    so 3 failed turns stay within 20% of the 24 possible turns (no early stop), but exceed
    20% of the turns played."""
    faults = Faults(status=500, status_first=3)
    with ChatServer(greedy_left, faults) as server, pytest.raises(InvalidRun) as caught:
        run(env, team(server.base_url, max_retries=0), tmp_path, max_failed_fraction=0.2)
    written = json.loads((tmp_path / "summary.json").read_text())
    played = written["turns"]["total"]
    assert written["complete"] is True and written["valid"] is False
    assert written["turns"]["failed"] == 3 and played < 15
    assert written["reason"].startswith(f"3 of {played} LLM turns failed after retries")
    assert written["episodes"]["failed_requests"] and "summary" in written
    assert caught.value.report["table"].startswith(f"LLM turns: {played - 3} answered, 3 failed")


def test_failures_within_the_allowed_share_leave_the_run_valid(env, reference, tmp_path):
    with ChatServer(dining_resource_ordering, Faults(status=500, status_first=2)) as server:
        report = run(env, team(server.base_url, max_retries=0), tmp_path, max_failed_fraction=0.5)
    assert report["valid"] and report["turns"]["failed"] == 2
    assert report["headline"] == "LLM turns: 22 answered, 2 failed, 0 unparsed (of 24)"


# ---- resuming: failed turns are asked again ----------------------------------------------


def test_a_server_that_dies_and_comes_back_resumes_to_the_same_summary(
    env, reference, tmp_path, capsys
):
    # Down after 10 requests: the second step's last two turns fail, and the run stops.
    with ChatServer(dining_resource_ordering, Faults(die_after=10)) as server:
        with pytest.raises(InvalidRun, match="stopped at step 1"):
            run(env, team(server.base_url, max_retries=1), tmp_path)
        first = lines(tmp_path / "transcript.jsonl")
        assert json.loads((tmp_path / "summary.json").read_text())["valid"] is False
        server.restart()
        before = server.log.requests
        resumed = run(env, team(server.base_url), tmp_path)
        asked = server.log.requests - before
    assert "10 answered turns on file are reused, 2 failed ones are asked again" in (
        capsys.readouterr().err
    )
    assert resumed["valid"] and resumed["turns"]["failed"] == 0
    assert resumed["episodes"] == reference["episodes"]
    assert resumed["summary"] == reference["summary"]
    assert resumed["usage"]["reused_from_transcript"] == 10
    assert asked == MAX_TURNS - 10
    assert json.loads((tmp_path / "summary.json").read_text())["valid"] is True
    after = lines(tmp_path / "transcript.jsonl")
    assert after[: len(first)] == first  # append-only: the failed turns are still there
    assert sum(bool(t["error"]) for t in turns(tmp_path)) == 2


def test_answers_to_prompts_a_resumed_run_no_longer_asks_are_not_reused(env, reference, tmp_path):
    """The first two requests fail and the run plays on with their no-ops (allowed): every
    later prompt of their episodes differs from an uninterrupted run's. Resuming asks the
    failed ones again, so the episodes go as in the reference, and the answers on file for
    prompts that are no longer asked are not reused."""
    with ChatServer(dining_resource_ordering, Faults(status=500, status_first=2)) as server:
        first = run(env, team(server.base_url, max_retries=0), tmp_path, max_failed_fraction=1)
        assert first["turns"]["failed"] == 2
        resumed = run(env, team(server.base_url), tmp_path)
    assert resumed["episodes"] == reference["episodes"] and resumed["valid"]
    assert resumed["usage"]["reused_from_transcript"] < first["turns"]["answered"]


def test_a_torn_last_line_is_set_aside_and_said(env, reference, tmp_path, capsys):
    with ChatServer(dining_resource_ordering, Faults(die_after=10)) as server:
        with pytest.raises(InvalidRun):
            run(env, team(server.base_url, max_retries=0), tmp_path)
        transcript = tmp_path / "transcript.jsonl"
        whole = transcript.read_text()
        fragment = '{"type": "turn", "episode": 1, "step": 2, "se'  # a kill mid-write
        with transcript.open("a") as stream:
            stream.write(fragment)
        server.restart()
        capsys.readouterr()
        resumed = run(env, team(server.base_url), tmp_path)
    err = capsys.readouterr().err
    assert (
        f"ended in a partial line ({len(fragment)} bytes" in err and "transcript.jsonl.torn" in err
    )
    assert (tmp_path / "transcript.jsonl.torn").read_text() == fragment + "\n"
    assert transcript.read_text().startswith(whole)  # nothing before the torn line lost
    lines(transcript)  # and every line whole
    assert resumed["episodes"] == reference["episodes"]
    assert resumed["usage"]["reused_from_transcript"] == 10


# ---- one output folder, one run -------------------------------------------------------------


def test_a_second_run_on_one_folder_is_refused_until_the_first_is_gone(env, reference, tmp_path):
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys; from alemlite.folder_lock import hold_folder\n"
         f"with hold_folder({str(tmp_path)!r}, '.run.lock', 'LLM evaluation', '--out'):\n"
         "    print('locked', flush=True); sys.stdin.read()"],
        cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline() == "locked\n"
        with ChatServer(dining_resource_ordering) as server:
            with pytest.raises(FolderBusy) as caught:
                run(env, team(server.base_url), tmp_path)
            assert server.log.requests == 0
            refusal = str(caught.value)
            assert refusal.startswith(
                f"{tmp_path} is in use by another LLM evaluation (process {holder.pid} on "
            )
            assert refusal.endswith("; wait for it to end or pass another --out")
            assert not (tmp_path / "transcript.jsonl").exists()
            holder.kill()  # dies holding the lock: the kernel frees it
            holder.wait(timeout=30)
            report = run(env, team(server.base_url), tmp_path)
    finally:
        holder.kill()
        holder.wait(timeout=30)
    assert report["episodes"] == reference["episodes"]


def test_no_resume_keeps_the_earlier_files(env, reference, tmp_path, capsys):
    with ChatServer(dining_resource_ordering) as server:
        run(env, team(server.base_url), tmp_path)
        earlier = {name: (tmp_path / name).read_text() for name in ("transcript.jsonl",
                                                                    "summary.json")}  # fmt: skip
        run(env, team(server.base_url), tmp_path, resume=False)
    assert f"the earlier files of {tmp_path} are kept in {tmp_path / 'previous-1'}" in (
        capsys.readouterr().err
    )
    for name, text in earlier.items():
        assert (tmp_path / "previous-1" / name).read_text() == text


# ---- a full disk ------------------------------------------------------------------------


def test_a_full_disk_stops_the_run_with_whole_records_only(env, reference, tmp_path, monkeypatch):
    transcript = tmp_path / "transcript.jsonl"
    real_write = os.write
    records = {"written": 0, "torn": False}

    def disk_fills_up(fd: int, data: bytes) -> int:
        if not transcript.exists() or os.fstat(fd).st_ino != transcript.stat().st_ino:
            return real_write(fd, data)
        if records["written"] < 8:
            records["written"] += 1
            return real_write(fd, data)
        if not records["torn"]:  # the device takes half of the record, then it is full
            records["torn"] = True
            return real_write(fd, data[: len(data) // 2])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    with ChatServer(dining_resource_ordering) as server:
        monkeypatch.setattr(os, "write", disk_fills_up)
        with pytest.raises(OutputWriteError) as caught:
            run(env, team(server.base_url), tmp_path)
        monkeypatch.undo()
        message = str(caught.value)
        assert isinstance(caught.value, ConfigError) and "\n" not in message
        assert message == (
            f"could not write to {transcript} (the disk is full); every record written before "
            "is kept: free space and rerun the same command to resume"
        )
        kept = lines(transcript)
        assert len(kept) == 8 and records["torn"]  # the half record was taken back
        assert not (tmp_path / "summary.json").exists()
        resumed = run(env, team(server.base_url), tmp_path)
    assert resumed["usage"]["reused_from_transcript"] == 6  # kept: header, 6 turns, 1 step
    assert resumed["episodes"] == reference["episodes"]


# ---- a body that is no chat completion ------------------------------------------------------

NOT_COMPLETIONS = {
    "html": (b"<html><body><h1>502 Bad Gateway</h1></body></html>", "text/html"),
    "no-choices": (b'{"id": "chatcmpl-1", "object": "chat.completion"}', "application/json"),
    "empty-choices": (b'{"id": "chatcmpl-1", "choices": []}', "application/json"),
}


@pytest.mark.parametrize("kind", NOT_COMPLETIONS)
def test_a_body_that_is_no_chat_completion_is_a_failed_request(env, reference, tmp_path, kind):
    """HTTP 200 with an HTML page or JSON without choices is no answer: retried, counted as
    failed with the body's first bytes quoted, the run not valid, and asked again on resume."""
    body, content_type = NOT_COMPLETIONS[kind]
    faults = Faults(body=body, body_type=content_type)
    with (
        ChatServer(dining_resource_ordering, faults) as server,
        pytest.raises(InvalidRun, match="the run is not valid"),
    ):
        run(env, team(server.base_url, max_retries=1), tmp_path)
    written = json.loads((tmp_path / "summary.json").read_text())
    failed = written["turns"]["failed"]
    assert written["valid"] is False and failed > 0
    assert written["turns"] == {"total": failed, "answered": 0, "failed": failed, "unparsed": 0}
    assert server.log.requests == 2 * failed  # each asked twice: 1 + 1 retry
    recorded = turns(tmp_path)
    assert len(recorded) == failed
    for turn in recorded:
        assert turn["attempts"] == 2 and turn["reply"] == ""
        assert "HTTP 200 with a body that is no chat completion" in turn["error"]
        assert body.decode() in turn["error"]
    with ChatServer(dining_resource_ordering) as good:
        resumed = run(env, team(good.base_url), tmp_path)
    assert resumed["valid"] and resumed["turns"]["failed"] == 0
    assert resumed["usage"]["reused_from_transcript"] == 0  # every failed turn asked again
    assert resumed["episodes"] == reference["episodes"]


# ---- no secret on disk or on screen -----------------------------------------------------------


def test_no_credential_is_written_or_printed(tmp_path, capfd, monkeypatch):
    """A password in --base-url, in a seat's and in --model's URL, and a key in the environment:
    none reaches a file of the run or its pages, nor stdout or stderr (a note names the server)."""
    secrets = {
        "url": "PwInTheUrl",
        "seat": "PwInTheSeat",
        "model": "PwInTheModel",
        "env": "KeyInTheEnvironment",
    }
    monkeypatch.setenv("OPENAI_API_KEY", secrets["env"])
    out = tmp_path / "run"
    with ChatServer(
        dining_resource_ordering, Faults(server_error=0.3), unsupported=["guided_choice"]
    ) as server:
        host = server.base_url.removeprefix("http://")
        url = f"http://user:{secrets['url']}@{host}"
        seat = f"llm:scripted@http://user:{secrets['seat']}@{host}"
        model = f"scripted@http://user:{secrets['model']}@{host}"
        main(
            eval_llm_args(url, out, "--team", "llm", seat, "llm", "--constrained", "--model", model)
        )
    main(["view", str(out), "--no-progress"])
    recorded = turns(out)
    assert {turn["server"] for turn in recorded} == {server.base_url}
    assert server.log.faults["server_error"] > 0  # retried, and the run went on
    printed = capfd.readouterr()
    assert f"note: {server.base_url} refused constrained:guided_choice" in printed.err
    files = [path for path in tmp_path.rglob("*") if path.is_file()]
    assert {"transcript.jsonl", "summary.json", "index.html"} <= {path.name for path in files}
    for name, secret in secrets.items():
        for path in files:
            assert secret.encode() not in path.read_bytes(), f"{name} secret in {path}"
        assert secret not in printed.out + printed.err, f"{name} secret printed"
