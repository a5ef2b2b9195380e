"""The llama.cpp server launcher names a server that dies while serving (a crashing build
otherwise shows its clients only refused connections), with a stand-in server process."""

from __future__ import annotations

import json
import socket
import sys
import time
import urllib.request

import pytest

from llm_bridge.clients.base import ModelServerError
from llm_bridge.clients.llama_server import supervise

# Lists one model, then dies of SIGSEGV on the first other request, as a bad build does.
STAND_IN = """
import http.server, json, os, signal, sys
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path != "/v1/models":
            sys.stderr.write("crashing\\n"); sys.stderr.flush()
            os.kill(os.getpid(), signal.SIGSEGV)
        body = json.dumps({"data": [{"id": "stand-in"}]}).encode()
        self.send_response(200); self.end_headers(); self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _get(url: str) -> None:
    with urllib.request.urlopen(url, timeout=5) as response:
        json.load(response)


def test_a_server_that_serves_to_the_end_stops_quietly(tmp_path):
    port = _port()
    command = [sys.executable, "-c", STAND_IN, str(port)]
    with supervise(command, port, "stand-in", tmp_path / "log") as base_url:
        _get(f"{base_url}/models")


def test_a_server_that_dies_while_serving_is_named_with_its_signal_and_log(tmp_path):
    port = _port()
    command = [sys.executable, "-c", STAND_IN, str(port)]
    died = pytest.raises(ModelServerError, match=r"died while serving \(exit status -11.*crashing")
    with died, supervise(command, port, "stand-in", tmp_path / "log") as base_url:
        with pytest.raises(OSError):
            _get(f"{base_url}/chat")
        deadline = time.monotonic() + 10
        while _listening(port) and time.monotonic() < deadline:
            time.sleep(0.05)  # the stand-in may still be falling over


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0
