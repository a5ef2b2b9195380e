"""An instant OpenAI-compatible chat server on loopback, in its own process: what the harness
benchmark (`benchmarks.llm_harness_speed`) times the harness against.

A lean asyncio HTTP/1.1 server (keep-alive, Content-Length bodies only), so that the server
costs next to nothing beside the client. `POST .../chat/completions` answers at once with a
legal action: the first of a constrained request's `guided_choice`, else the first name of
the last message's "Legal actions now:" line (Craft), else `default_action` (dining's WAIT,
legal at every step and never a deadlock). `GET .../models` lists one model, `GET /stats`
the chat requests answered and the server process's CPU seconds, so that a benchmark can
tell the server's time from the client's.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from llm_bridge.clients.base import ChatMessages, Completion

_LEGAL = re.compile(r"Legal actions now: ([^,\n]+)")


def answer(body: dict, default_action: str) -> str:
    """The reply text of a chat request: a legal action, in the format the request asks."""
    if "guided_choice" in body:
        return body["guided_choice"][0]
    content = body["messages"][-1]["content"]
    text = (
        content if isinstance(content, str) else " ".join(part.get("text", "") for part in content)
    )
    legal = _LEGAL.search(text)
    return f"<action>{legal.group(1).strip() if legal else default_action}</action>"


class InstantSeats:
    """A backend answering in-process at once, for warm-up runs that compile every program:
    `action` when given, else the first legal choice the runner offers, else WAIT."""

    name = "instant"

    def __init__(self, action: str | None = None):
        self._action = action

    async def complete(
        self, messages: ChatMessages, seed: int | None = None, choices: Sequence[str] | None = None
    ) -> Completion:
        return Completion(text=f"<action>{self._action or (choices or ['WAIT'])[0]}</action>")

    async def check(self) -> None:
        pass

    async def check_images(self) -> None:
        pass

    async def close(self) -> None:
        pass


def _response(status: int, payload: dict) -> bytes:
    body = json.dumps(payload).encode()
    head = (
        f"HTTP/1.1 {status} OK\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def _completion(body: dict, text: str, number: int) -> dict:
    return {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "instant"),
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


async def _serve(default_action: str) -> None:
    answered = 0

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal answered
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                request_line, *lines = head.decode("latin-1").split("\r\n")
                method, path, _ = request_line.split(" ", 2)
                length = 0
                for line in lines:
                    name, _, value = line.partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value)
                body = await reader.readexactly(length) if length else b""
                if method == "POST" and path.rstrip("/").endswith("/chat/completions"):
                    request = json.loads(body)
                    answered += 1
                    text = answer(request, default_action)
                    writer.write(_response(200, _completion(request, text, answered)))
                elif path.rstrip("/").endswith("/models"):
                    writer.write(_response(200, {"object": "list", "data": [{"id": "instant"}]}))
                elif path == "/stats":
                    stats = {"answered": answered, "cpu_s": time.process_time()}
                    writer.write(_response(200, stats))
                else:
                    writer.write(_response(404, {"error": {"message": "not found"}}))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)  # the port, for the parent
    async with server:
        await server.serve_forever()


def serve(default_action: str) -> None:
    """Serve until killed, printing the port first (what `instant_server` starts)."""
    asyncio.run(_serve(default_action))


@contextmanager
def instant_server(default_action: str = "WAIT") -> Iterator[str]:
    """Serve in a separate process for the duration of the context; yields its base URL."""
    code = f"from benchmarks.instant_server import serve; serve({default_action!r})"
    process = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=Path(__file__).resolve().parents[1],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        port = process.stdout.readline().strip()
        if not port.isdigit():
            raise RuntimeError(f"the instant server did not start (it printed {port!r})")
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        process.wait(10)
