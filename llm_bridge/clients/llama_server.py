"""llama.cpp's OpenAI-compatible server (`llama-cpp-python[server]`, which `make llama-server`
builds from source) started on loopback for as long as a `with` block runs."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from llm_bridge.clients.base import ModelServerError


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def serve(
    model_file: Path, alias: str, log: Path, threads: int = 2, context: int = 4096, seed: int = 0
) -> Iterator[str]:
    """Serve `model_file` (a GGUF file) as `alias`; yields the base URL (ending in /v1)."""
    port = _free_port()
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(model_file),
        "--model_alias", alias, "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", str(context), "--n_threads", str(threads), "--seed", str(seed),
    ]  # fmt: skip
    with supervise(command, port, alias, log) as base_url:
        yield base_url


@contextlib.contextmanager
def supervise(command: list[str], port: int, alias: str, log: Path) -> Iterator[str]:
    """Run the server `command` (listening on `port`, serving `alias`) for a `with` block;
    yields its base URL once it lists the model, and raises if it died before the end."""
    # Its log goes to a file: a pipe nobody reads fills up and stalls the server.
    with log.open("w") as log_file:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log_file)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        _wait_until_serving(process, base_url, alias, log)
        yield base_url
    finally:
        died = process.poll()
        process.terminate()
        process.wait(timeout=30)
    if died is not None:
        # Its clients only saw refused connections; say what happened to it.
        raise ModelServerError(
            f"llama.cpp's server died while serving (exit status {died}; a negative status is "
            f"the signal that stopped it); its log ends: {log.read_text()[-2000:]!r}"
        )


def _wait_until_serving(process: subprocess.Popen, base_url: str, alias: str, log: Path) -> None:
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=2) as response:
                if json.load(response)["data"][0]["id"] == alias:
                    return
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            tail = log.read_text()[-2000:]
            raise ModelServerError(f"llama.cpp's server did not start; its log ends: {tail!r}")
        time.sleep(0.5)
