"""A loopback OpenAI-compatible chat server for tests, answering from a scripted policy.

`POST /v1/chat/completions` hands the request's messages to `reply(messages) -> str`
and answers in the chat-completions format, with token usage. `GET /v1/models`
lists one model. Faults are injected on the first attempt of chosen requests (so
that a retry succeeds, and a run with retries gives the same answers as one without):
a request whose body hash lands in a fault's share gets that fault once.

Outages, by request count rather than by hash: every chat request (or the first K) may
be answered with one HTTP status (`Faults.status`); the server may die after N chat
requests (`Faults.die_after`: from then on every connection is dropped unanswered);
`stop()` takes it down and `restart()` brings it back on the same port. A server may
answer every chat request 200 with a body that is no chat completion (`Faults.body`).
Bound to 127.0.0.1 on a free port; serves only while the context is open.

What model servers add, as vLLM does it: `reply` may return a `Reply` with a reasoning
part (sent in `reasoning_field`: `reasoning_content`, or `reasoning` as newer vLLM) and a
finish reason ("length": cut off by max_tokens). A request restricted to a choice of
answers (`guided_choice` / `structured_outputs.choice` in the body, or a `json_schema`
response format with an enum, as OpenAI and vLLM take it, or llama.cpp's `json_object` with
a `schema`) is checked and answered with the choice the scripted reply names (the first
choice if it names none), unless the field is in `unsupported`: then it is refused with
HTTP 400 naming the field, as vLLM refuses a feature it lacks; or the response format's
type is not in `response_formats`: then it is refused with llama.cpp's 500 "validation
error"; or the field is in `ignored`: then the reply is the scripted one, as llama.cpp's
server answers a `guided_choice` it does not know. A request carrying a field in
`refused_fields` is refused with HTTP 400 in the words of OpenAI's reasoning models
(`REFUSALS`: "Unsupported parameter: 'max_tokens' ... Use 'max_completion_tokens'
instead.", "Unsupported value: 'temperature' ..."). Every
request body is kept (`ServerLog.bodies`); `images_of` decodes the PNG data URIs of one.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import imageio.v3 as iio
import numpy as np

FAULT_KINDS = ("rate_limit", "server_error", "drop", "slow", "malformed")
# How OpenAI's reasoning models refuse the fields they do not take.
REFUSALS = {
    "max_tokens": "Unsupported parameter: 'max_tokens' is not supported with this model. "
    "Use 'max_completion_tokens' instead.",
    "temperature": "Unsupported value: 'temperature' does not support 0.0 with this model. "
    "Only the default (1) value is supported.",
}
_DATA_URI = "data:image/png;base64,"


@dataclass(frozen=True)
class Reply:
    """A scripted reply with what reasoning servers add to the text."""

    content: str
    reasoning: str | None = None
    finish_reason: str = "stop"


def text_of(content: Any) -> str:
    """The text of a message's content: a string, or the text parts of a list."""
    if isinstance(content, str):
        return content
    return "\n".join(part["text"] for part in content if part.get("type") == "text")


def images_of(body: dict) -> list[np.ndarray]:
    """The PNG images of a request's last message, decoded to `(H, W, 3)` uint8."""
    content = body["messages"][-1]["content"]
    parts = [] if isinstance(content, str) else content
    urls = [part["image_url"]["url"] for part in parts if part.get("type") == "image_url"]
    assert all(url.startswith(_DATA_URI) for url in urls), "images must be PNG data URIs"
    return [
        np.asarray(iio.imread(base64.b64decode(url[len(_DATA_URI) :]), extension=".png"))
        for url in urls
    ]


def constraint_of(body: dict) -> tuple[str, list[str]] | None:
    """The constraint a request carries, `(field, choices)`, checked for its shape; None: none.

    Raises ValueError for a malformed one."""
    if "guided_choice" in body:
        choices = body["guided_choice"]
        if body.get("structured_outputs", {}).get("choice") != choices:
            raise ValueError("structured_outputs.choice differs from guided_choice")
        field_name = "guided_choice"
    elif "response_format" in body:
        form = body["response_format"]
        schema = (
            form.get("json_schema", {}).get("schema", {})
            if form.get("type") == "json_schema"
            else form.get("schema", {})
        )
        if form.get("type") not in ("json_schema", "json_object") or schema.get("required") != [
            "action"
        ]:
            raise ValueError(f"response_format {form} is no JSON schema requiring an action")
        choices = schema["properties"]["action"]["enum"]
        field_name = "response_format"
    else:
        return None
    if not choices or not all(isinstance(name, str) for name in choices):
        raise ValueError(f"choices {choices!r} must be a non-empty list of names")
    return field_name, choices


_CHOSEN = re.compile(r"<action>\s*(.*?)\s*</action>|ACTION:\s*(\S+)", re.I)


def choose(text: str, choices: Sequence[str]) -> str:
    """The choice a scripted reply names (its last action), or the first choice."""
    named = [tag or line for tag, line in _CHOSEN.findall(text)]
    by_name = {name.upper(): name for name in choices}
    return by_name.get(named[-1].upper(), choices[0]) if named else choices[0]


@dataclass
class Faults:
    """Share of distinct requests (0..1) that get each fault on their first attempt.

    `malformed` replaces the reply text with junk on every attempt (a model that
    does not follow the format, which no retry fixes); the others are transient.
    """

    rate_limit: float = 0.0
    server_error: float = 0.0
    drop: float = 0.0
    slow: float = 0.0
    malformed: float = 0.0
    slow_s: float = 0.05
    transient: bool = True  # False: a faulty request fails on every attempt
    status: int = 0  # answer chat requests with this HTTP status (0: never)
    status_first: int | None = None  # only the first K chat requests get it (None: all)
    status_message: str = "refused by the test server"
    retry_after: str = "0"  # the Retry-After header of a 429 or 503 `status`
    die_after: int | None = None  # the server goes down after this many chat requests
    body: bytes | None = None  # answer every chat request 200 with this body (no completion)
    body_type: str = "application/json"  # the Content-Type of `body`

    def pick(self, body: bytes) -> str | None:
        """The fault for a request body, from its hash: the same body always gets the same one."""
        draw = int.from_bytes(hashlib.sha256(body).digest()[:8], "big") / 2**64
        for kind in FAULT_KINDS:
            share = getattr(self, kind)
            if draw < share:
                return kind
            draw -= share
        return None


@dataclass
class ServerLog:
    requests: int = 0  # chat requests received while up (answered, faulty or refused)
    faults: Counter = field(default_factory=Counter)
    seen: Counter = field(default_factory=Counter)
    in_flight: int = 0
    max_in_flight: int = 0
    refused: int = 0  # chat requests answered with `Faults.status`
    dropped_down: int = 0  # requests dropped while the server was down
    order: list[Any] = field(default_factory=list)  # each chat request's last message content
    bodies: list[dict] = field(default_factory=list)  # each chat request's body, as received
    unsupported_refused: Counter = field(default_factory=Counter)  # by field
    malformed_requests: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


class _LoopbackServer(ThreadingHTTPServer):
    request_queue_size = 256  # many concurrent connects, none refused
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:
        # A client that hung up before its answer was written (a run stopped by a refusal
        # cancels its other requests) is no fault of the server's: nothing to print.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


def _count_tokens(text: str) -> int:
    return len(text.split())


class ChatServer:
    def __init__(
        self,
        reply: Callable[[list[dict]], str | Reply],
        faults: Faults | None = None,
        reasoning_field: str = "reasoning_content",
        unsupported: Sequence[str] = (),
        ignored: Sequence[str] = (),
        response_formats: Sequence[str] = ("json_schema", "json_object"),
        refused_fields: Sequence[str] = (),
    ):
        self.refused_fields = tuple(refused_fields)
        self.reply = reply
        self.reasoning_field = reasoning_field
        self.unsupported = tuple(unsupported)  # "guided_choice" and/or "response_format"
        self.ignored = tuple(ignored)
        self.response_formats = tuple(response_formats)
        self.faults = faults or Faults()
        self.log = ServerLog()
        self.down = False
        self._bind(0)

    def _bind(self, port: int) -> None:
        self._server = _LoopbackServer(("127.0.0.1", port), self._handler())
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        """Down: no new connection is accepted, and open ones are dropped unanswered."""
        self.down = True
        if self._thread.is_alive():
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(timeout=5)

    def restart(self) -> None:
        """Back up on the same port, with the same log; `die_after` no longer applies."""
        self.stop()
        self.faults.die_after = None
        self._bind(self._server.server_address[1])
        self.down = False
        self._thread.start()

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # no 40 ms delayed-ACK stall between header and body

            def log_message(self, *args) -> None:  # quiet
                pass

            def _send(self, status: int, payload: dict, headers: dict | None = None) -> None:
                body = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def _drop(self) -> None:
                self.close_connection = True
                self.connection.shutdown(2)  # the socket, mid-request, no reply

            def do_GET(self) -> None:
                if server.down:
                    self._drop()
                elif self.path.rstrip("/").endswith("/models"):
                    self._send(
                        200, {"object": "list", "data": [{"id": "scripted", "object": "model"}]}
                    )
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": "not found"}})
                    return
                with server.log.lock:
                    server.log.in_flight += 1
                    server.log.max_in_flight = max(server.log.max_in_flight, server.log.in_flight)
                try:
                    self._answer(body)
                finally:
                    with server.log.lock:
                        server.log.in_flight -= 1

            def _answer(self, body: bytes) -> None:
                faults = server.faults
                with server.log.lock:
                    if faults.die_after is not None and len(server.log.order) >= faults.die_after:
                        server.down = True
                    if server.down:
                        server.log.dropped_down += 1
                    else:
                        server.log.requests += 1
                        server.log.bodies.append(json.loads(body))
                        server.log.order.append(json.loads(body)["messages"][-1]["content"])
                        count = len(server.log.order)
                        refuse = faults.status and (
                            faults.status_first is None or count <= faults.status_first
                        )
                        server.log.refused += bool(refuse)
                if server.down:
                    self._drop()
                    return
                if faults.body is not None:
                    self.send_response(200)
                    self.send_header("Content-Type", faults.body_type)
                    self.send_header("Content-Length", str(len(faults.body)))
                    self.end_headers()
                    self.wfile.write(faults.body)
                    return
                refused = [name for name in server.refused_fields if name in json.loads(body)]
                if refused:
                    with server.log.lock:
                        server.log.unsupported_refused[refused[0]] += 1
                    message = REFUSALS.get(refused[0], f"Unsupported parameter: '{refused[0]}'")
                    error = {"message": message, "type": "invalid_request_error"}
                    self._send(400, {"error": {**error, "param": refused[0]}})
                    return
                if refuse:
                    self._send(
                        faults.status,
                        {"error": {"message": faults.status_message, "code": faults.status}},
                        {"Retry-After": faults.retry_after},
                    )
                    return
                fault = faults.pick(body)
                with server.log.lock:
                    first_attempt = server.log.seen[body] == 0
                    server.log.seen[body] += 1
                    repeat = fault == "malformed" or not server.faults.transient
                    if fault and (first_attempt or repeat):
                        server.log.faults[fault] += 1
                    else:
                        fault = None
                if fault == "rate_limit":
                    self._send(429, {"error": {"message": "slow down"}}, {"Retry-After": "0"})
                    return
                if fault == "server_error":
                    self._send(500, {"error": {"message": "boom"}})
                    return
                if fault == "drop":
                    self._drop()
                    return
                if fault == "slow":
                    time.sleep(server.faults.slow_s)
                request = json.loads(body)
                try:
                    constraint = constraint_of(request)
                except ValueError as error:
                    with server.log.lock:
                        server.log.malformed_requests.append(str(error))
                    self._send(400, {"error": {"message": f"bad request body: {error}"}})
                    return
                if constraint and constraint[0] in server.unsupported:
                    with server.log.lock:
                        server.log.unsupported_refused[constraint[0]] += 1
                    message = f"{constraint[0]} is not supported by this server"
                    self._send(400, {"error": {"message": message, "code": 400}})
                    return
                form = request.get("response_format", {}).get("type")
                if constraint and form and form not in server.response_formats:
                    with server.log.lock:
                        server.log.unsupported_refused[form] += 1
                    message = f"1 validation error: response_format.type {form!r} is not allowed"
                    self._send(500, {"error": {"message": message, "code": 500}})
                    return
                if constraint and constraint[0] in server.ignored:
                    constraint = None
                prompt = " ".join(text_of(message["content"]) for message in request["messages"])
                answer = (
                    Reply("I refuse to follow the format ~~~")
                    if fault == "malformed"
                    else server.reply(request["messages"])
                )
                answer = Reply(answer) if isinstance(answer, str) else answer
                text = answer.content
                if constraint:
                    chosen = choose(text, constraint[1])
                    text = (
                        chosen
                        if constraint[0] == "guided_choice"
                        else json.dumps({"action": chosen})
                    )
                message = {"role": "assistant", "content": text}
                if answer.reasoning is not None:
                    message[server.reasoning_field] = answer.reasoning
                completion_text = text + " " + (answer.reasoning or "")
                self._send(
                    200,
                    {
                        "id": f"chatcmpl-{server.log.requests}",
                        "object": "chat.completion",
                        "created": 0,
                        "model": request.get("model", "scripted"),
                        "choices": [
                            {
                                "index": 0,
                                "message": message,
                                "finish_reason": answer.finish_reason,
                            }
                        ],
                        "usage": {
                            "prompt_tokens": _count_tokens(prompt),
                            "completion_tokens": _count_tokens(completion_text),
                            "total_tokens": _count_tokens(prompt) + _count_tokens(completion_text),
                        },
                    },
                )

        return Handler


_PHILOSOPHER = re.compile(r"You are philosopher (\d+) of (\d+)\. You are (HUNGRY|EATING)")
_FORK = re.compile(
    r"Your (left|right) fork \(fork (\d+)\) is (free|held by you|held by philosopher \d+)"
)


def dining_resource_ordering(messages: list[dict]) -> str:
    """Resource ordering read off the last dining observation: lower-numbered fork first.

    Mirrors `DINING_POLICIES["resource_ordering"]` from the prompt text alone (grab the
    first fork until held, then the second, RELEASE while eating), so that a team
    answered by this server plays exactly as that policy does.
    """
    observation = text_of(messages[-1]["content"])
    philosopher, _, state = _PHILOSOPHER.search(observation).groups()
    (_, first_side, first_status), (_, second_side, _) = sorted(
        (int(number), side, status) for side, number, status in _FORK.findall(observation)
    )
    if state == "EATING":
        action = "RELEASE"
    else:
        side = second_side if first_status == "held by you" else first_side
        action = f"GRAB_{side.upper()}"
    return f"<think>fork order</think><action>{action}</action><message>p{philosopher}</message>"


_CRAFT_STEP = re.compile(r"^Step (\d+)\.", re.M)


def craft_alternating(messages: list[dict]) -> str:
    """Craft: move left on odd-numbered steps (1, 3, ...), "do" on the others."""
    step = int(_CRAFT_STEP.search(text_of(messages[-1]["content"])).group(1))
    return "<action>move_left</action>" if step % 2 else "ACTION: do"
