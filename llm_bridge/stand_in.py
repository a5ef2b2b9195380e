"""A scripted stand-in for a model: an OpenAI-compatible chat server on this machine whose
every answer is a uniformly random action name of the environment, drawn from its own seeded
generator in the order requests arrive (so, like a sampling model's, two runs' answers
differ; a resumed run reuses its transcript's).

It lets `alemlite eval-llm` and `alemlite gap` run end to end without a model or a GPU, and
its numbers are those of a random player, no model's: label them so.

    python -m llm_bridge.stand_in --env dining --port 8000

Answers name an action of the environment's default options that the request's messages
mention (every action name where they mention none); a request that lists the legal names
(`guided_choice`, as `--constrained` sends) gets one of those.
"""

from __future__ import annotations

import contextlib
import json
import random
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import tyro

import alemlite
from alemlite.core.registry import DEFAULT_ENV

MODEL = "stand-in"


def _text(content: Any) -> str:
    """A message's text (content parts of an image message: their text parts)."""
    if isinstance(content, str):
        return content
    return " ".join(part.get("text", "") for part in content if isinstance(part, dict))


def choices(actions: Sequence[str], request: dict[str, Any]) -> list[str]:
    """The names a chat request may be answered with: the legal names it lists, else the
    `actions` its messages mention, else all of them."""
    legal = request.get("guided_choice")
    if not legal:
        text = " ".join(_text(message.get("content", "")) for message in request["messages"])
        legal = [name for name in actions if re.search(rf"(?<!\w){re.escape(name)}(?!\w)", text)]
    return list(legal or actions)


class StandInServer:
    """The server on `host:port` (0: a free port) while the context is open."""

    def __init__(
        self, env: str = DEFAULT_ENV, host: str = "127.0.0.1", port: int = 0, seed: int = 0
    ):
        env_spec = alemlite.spec(env)
        self.actions = tuple(env_spec.build(env_spec.options()).action_names)
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer((host, port), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> StandInServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        actions, rng, lock = self.actions, self._rng, self._lock

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # quiet
                pass

            def _send(self, status: int, payload: dict[str, Any]) -> None:
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": MODEL, "object": "model"}]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": "not found"}})
                    return
                request = json.loads(body)
                names = choices(actions, request)
                with lock:
                    action = names[rng.randrange(len(names))]
                answer = action if request.get("guided_choice") else f"<action>{action}</action>"
                prompt = " ".join(_text(m.get("content", "")) for m in request["messages"])
                prompt_tokens = len(prompt.split())
                self._send(
                    200,
                    {
                        "id": "chatcmpl-stand-in",
                        "object": "chat.completion",
                        "created": 0,
                        "model": request.get("model", MODEL),
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": answer},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {
                            "prompt_tokens": prompt_tokens,
                            "completion_tokens": 1,
                            "total_tokens": prompt_tokens + 1,
                        },
                    },
                )

        return Handler


@dataclass(frozen=True)
class StandInConfig:
    """Serve a scripted stand-in for a model (uniformly random actions) until Ctrl-C."""

    env: str = DEFAULT_ENV
    """the environment whose action names it answers with"""
    host: str = "127.0.0.1"
    port: int = 8000
    seed: int = 0
    """seed of the answers' generator"""


def main(config: StandInConfig) -> None:
    with StandInServer(config.env, config.host, config.port, config.seed) as server:
        print(f"stand-in model (random {config.env} actions) at {server.base_url}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            threading.Event().wait()


if __name__ == "__main__":
    main(tyro.cli(StandInConfig))
