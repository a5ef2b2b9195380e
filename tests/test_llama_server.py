"""A real inference server that alemlite did not write: llama.cpp's OpenAI-compatible server
(`llama-cpp-python[server]`, built from source by `make llama-server`, which `make test`
runs) serving SmolLM2-135M's GGUF file on 127.0.0.1, played in free text and constrained.

The server ignores vLLM's `guided_choice` (it answers freely) and refuses OpenAI's
`json_schema` response format with a 500 validation error; it takes a `json_object` with a
schema. The client finds that out on the first step and plays constrained from then on."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from alemlite_app.cli import main
from llm_bridge.models import cached_file
from llm_bridge.transcripts import read_records

MODEL = "smollm2-135m"
pytest.importorskip(
    "llama_cpp.server", reason="llama.cpp's server is not built (make llama-server builds it)"
)
pytestmark = pytest.mark.skipif(
    not cached_file(MODEL).is_file(),
    reason=f"{MODEL} is not fetched: run `make model` (make test does)",
)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = _free_port()
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(cached_file(MODEL)),
        "--model_alias", MODEL, "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", "4096", "--n_threads", "2", "--seed", "0",
    ]  # fmt: skip
    # Its log goes to a file: a pipe nobody reads fills up and stalls the server.
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log.open("w"))
    base_url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 120
    try:
        while True:
            try:
                with urllib.request.urlopen(f"{base_url}/models", timeout=2) as response:
                    assert json.load(response)["data"][0]["id"] == MODEL
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"llama.cpp's server did not start: {log.read_text()[-2000:]!r}"
                    ) from None
                time.sleep(0.5)
        yield base_url
    finally:
        process.terminate()
        process.wait(timeout=30)


def _play(server, tmp_path, *flags):
    out = tmp_path / "run"
    main(
        [
            "eval-llm", "--env", "dining", "--num-agents", "3", "--max-steps", "3",
            "--episodes", "2", "--base-url", server, "--model", MODEL,
            "--max-tokens", "24", "--out", str(out), *flags,
        ]
    )  # fmt: skip
    summary = json.loads((out / "summary.json").read_text())
    turns = [r for r in read_records(out / "transcript.jsonl") if r["type"] == "turn"]
    return summary, turns


def test_free_text_against_llama_cpp(server, tmp_path):
    summary, turns = _play(server, tmp_path)
    assert summary["valid"] and summary["usage"]["mode"] == "free"
    assert summary["usage"]["failed_requests"] == 0
    assert turns and all(t["server"] == server and t["completion_tokens"] > 0 for t in turns)


def test_constrained_against_llama_cpp_steps_down_to_its_json_dialect(server, tmp_path, capsys):
    summary, turns = _play(server, tmp_path, "--constrained")
    notes = capsys.readouterr().err
    assert "ignored constrained:guided_choice" in notes
    assert "refused constrained:json_schema (500" in notes
    assert summary["usage"]["mode"] == "constrained:json_object"
    answered = [t for t in turns if t["mode"] == "constrained:json_object"]
    assert answered and all(t["parse"] != "failed" for t in answered if not t["cut_off"])
    for turn in answered:
        if not turn["cut_off"]:  # the grammar holds a complete reply to the legal names
            assert json.loads(turn["reply"])["action"] == turn["action"]
