"""OpenAI-compatible chat completions over HTTP (vLLM, SGLang, llama.cpp, Ollama, hosted APIs).

Several base URLs may be given: each request goes to the server with the fewest
requests in flight, so one evaluation can spread over many servers. A semaphore caps
the requests in flight overall. Rate limits (429), server errors (5xx), timeouts and
dropped connections are retried with exponential backoff and jitter (honouring
`Retry-After`); a request waits out its back-off without holding its slot. A request
whose retries run out comes back as a failed `Completion` for the runner to count (and
for a resumed run to ask again). Any other 4xx (a wrong key, URL or model name, a
malformed request) is the same for every request, so it raises `ModelServerError`, which
stops the run at once with the status, URL, model and the server's own words. A body that
is no chat completion (an HTML page, JSON without `choices`) is no answer: it is retried
and, once the retries run out, a failed request quoting the body's first bytes. A server
is named everywhere (transcripts, notes, errors) without the user info of its URL.

Constrained mode (the runner passes the legal action names as `choices`): each server is
first asked through vLLM's choice extension in the body (`guided_choice`, and its
successor `structured_outputs.choice`, which servers that know it read instead), then,
once it refuses that with a 4xx naming the field, through a JSON schema with an enum of
the names (`response_format` of type `json_schema`, as OpenAI and vLLM take it), then the
same schema in llama.cpp's dialect (type `json_object` with a `schema`), then for free
text. llama.cpp's Python server refuses a field it does not know with a 500 that says
"validation error" and names it; that counts as a refusal too. A server that silently
ignores a constraint (llama.cpp ignores `guided_choice`) is caught by its answer: a
complete reply that is not one of the legal names (or their JSON) steps that server down
as a refusal would, and the request is asked again. A server's refusal is remembered for
the rest of the run, so a refused mode is not tried again every turn; each completion says
in `mode` how it was asked.

Dialects: every request sends `model`, `messages`, the token budget (as `max_tokens`, or
`max_completion_tokens` where `token_field` says so), `temperature` unless it is None, the
seed if given, and `request_fields` as given (`top_p`, `stop`, `reasoning_effort`,
`chat_template_kwargs`, any other JSON). A server that refuses one of those optional fields
by name (a 400 or 422 saying it is unsupported, unknown or not permitted, as OpenAI's
reasoning models answer "Unsupported parameter: 'max_tokens' ... use
'max_completion_tokens'") is asked again without it, once per field and server: the token
budget moves to the other field name, any other field is left out; a note says so.

Requests go through a lean HTTP client (`llm_bridge.clients.http`) in the OpenAI wire
format, not the openai SDK, whose request transform alone cost ~15 ms a request (the numbers
are in that module's docstring).

Reasoning models: a separate reasoning part (`message.reasoning_content`, or `reasoning`
in newer vLLM) comes back in `Completion.reasoning`, and `finish_reason == "length"` (the
`max_tokens` budget ran out) in `Completion.cut_off`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
import random
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from alemlite.core.errors import require
from llm_bridge.clients.base import ChatMessages, Completion, ModelServerError, without_userinfo
from llm_bridge.clients.http import ConnectionFailed, HTTPClient

# Statuses worth another attempt (as the openai client's own policy): request timeout,
# conflict, rate limit, and every 5xx.
_RETRIED_STATUSES = (408, 409, 429)
# The ways a constrained request is asked, each tried once the server refuses (or ignores)
# the one before.
STEP_DOWN = (
    "constrained:guided_choice",
    "constrained:json_schema",
    "constrained:json_object",
    "free",
)
# Words of a refusal that names the constraint field a mode sent (vLLM answers 400 for a
# feature it does not support; other servers 422 for a field they do not know).
_MODE_FIELDS = {
    "constrained:guided_choice": ("guided_choice", "structured_outputs", "guided"),
    "constrained:json_schema": ("response_format", "json_schema"),
    "constrained:json_object": ("response_format", "json_object"),
}
TOKEN_FIELDS = ("max_tokens", "max_completion_tokens")
# The fields every request carries and none may drop.
_REQUIRED_FIELDS = ("model", "messages")
# Words of a refusal of a field itself (not of its value being too large, say): OpenAI's
# "Unsupported parameter"/"Unsupported value", pydantic's "Extra inputs are not permitted".
_REFUSAL_WORDS = re.compile(
    r"unsupported|not supported|does not support|unknown|unrecognized|not permitted|not allowed"
    r"|extra inputs|extra fields"
)


class BackendUnreachable(ModelServerError):
    """No server answers at a configured base URL."""


class NotACompletion(Exception):
    """A server answered with a body that is no chat completion (an HTML page, JSON without
    `choices`): no answer, so the request failed and is asked again."""


class StatusError(Exception):
    """A server answered with an HTTP error status."""

    def __init__(self, status_code: int, message: str, url: str, retry_after: str | None):
        super().__init__(f"{status_code}: {message}")
        self.status_code = status_code
        self.message = message  # the server's own words, on one line
        self.url = url  # without user info
        self.retry_after = retry_after


@dataclass(frozen=True)
class OpenAIConfig:
    """How to reach and sample an OpenAI-compatible chat model."""

    model: str = "Qwen/Qwen2.5-7B-Instruct"
    base_urls: tuple[str, ...] = ("http://127.0.0.1:8000/v1",)
    api_key_env: str = "OPENAI_API_KEY"  # local servers accept any key; "EMPTY" if unset
    temperature: float | None = 0.0  # None: not sent (models that take only their default)
    max_tokens: int = 256
    token_field: str = "max_tokens"  # or max_completion_tokens (OpenAI's reasoning models)
    seed: int | None = None  # sampling seed sent with every request, where the server honours it
    request_fields: dict[str, Any] = field(default_factory=dict)
    """more fields of every request body as given (top_p, stop, reasoning_effort, ...)"""
    concurrency: int = 64
    timeout_s: float = 120.0
    max_retries: int = 6
    backoff_s: float = 0.5  # first retry waits about this long; doubles each time
    backoff_max_s: float = 30.0

    def __post_init__(self) -> None:
        require(bool(self.base_urls), "base_urls=() is empty; pass at least one --base-url")
        require(self.concurrency >= 1, f"concurrency={self.concurrency} must be at least 1")
        require(self.max_retries >= 0, f"max_retries={self.max_retries} must be 0 or more")
        require(self.max_tokens >= 1, f"max_tokens={self.max_tokens} must be at least 1")
        require(
            self.temperature is None or (math.isfinite(self.temperature) and self.temperature >= 0),
            f"temperature={self.temperature} must be a finite number >= 0",
        )
        require(
            self.token_field in TOKEN_FIELDS,
            f"token_field={self.token_field!r} must be one of: {', '.join(TOKEN_FIELDS)}",
        )
        clash = sorted(set(self.request_fields) & {*_REQUIRED_FIELDS, *TOKEN_FIELDS})
        require(
            not clash,
            f"request_fields set {', '.join(clash)}, which the backend sends itself; use "
            "--model, --max-tokens and --token-field",
        )
        for name in ("timeout_s", "backoff_max_s"):
            value = getattr(self, name)
            require(value > 0, f"{name}={value} must be a positive number of seconds")
        require(self.backoff_s >= 0, f"backoff_s={self.backoff_s} must be 0 or more seconds")


class OpenAIBackend:
    def __init__(self, config: OpenAIConfig):
        self.config = config
        self.name = config.model
        self._api_key = os.environ.get(config.api_key_env) or "EMPTY"
        self._clients: dict[str, HTTPClient] = {}
        self._in_flight = dict.fromkeys(config.base_urls, 0)
        # How a server is named in transcripts, notes and errors: without its credentials.
        self._shown = {url: without_userinfo(url) for url in config.base_urls}
        self._semaphore: asyncio.Semaphore | None = None
        self._next = 0
        # The constrained mode each server takes: the first it has not refused.
        self._modes = dict.fromkeys(config.base_urls, STEP_DOWN[0])
        # The optional fields each server is sent, as it has not refused them.
        fields: dict[str, Any] = {config.token_field: config.max_tokens}
        if config.temperature is not None:
            fields["temperature"] = config.temperature
        fields.update(config.request_fields)
        self._fields = {url: dict(fields) for url in config.base_urls}
        self._stepped: dict[str, set[str]] = {url: set() for url in config.base_urls}

    def _client(self, base_url: str) -> HTTPClient:
        if base_url not in self._clients:
            self._clients[base_url] = HTTPClient(
                base_url, {"Authorization": f"Bearer {self._api_key}"}, self.config.timeout_s
            )
        return self._clients[base_url]

    def _pick_server(self) -> str:
        urls = self.config.base_urls
        self._next = (self._next + 1) % len(urls)
        rotated = urls[self._next :] + urls[: self._next]  # round-robin among the least loaded
        return min(rotated, key=self._in_flight.__getitem__)

    async def check(self) -> None:
        for base_url in self.config.base_urls:
            try:
                response = await self._client(base_url).request("GET", "/models", timeout_s=10.0)
            except ConnectionFailed as error:
                raise BackendUnreachable(
                    f"no OpenAI-compatible server answers at {self._shown[base_url]} "
                    f"({without_userinfo(str(error))}). Start one "
                    f"(e.g. `vllm serve {self.config.model} --port 8000`) and pass its URL "
                    "ending in /v1 as --base-url"
                ) from error
            if response.status == 401:  # other statuses: reachable; some list no models
                raise self._refused(_status_error(response, self._shown[base_url] + "/models"))

    async def check_images(self) -> None:
        """The server decides: one that cannot read images refuses the first request (4xx)."""

    async def complete(
        self,
        messages: ChatMessages,
        seed: int | None = None,
        choices: Sequence[str] | None = None,
    ) -> Completion:
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.config.concurrency)
        seed = self.config.seed if seed is None else seed
        last_error = ""
        for attempt in range(1, self.config.max_retries + 2):
            async with self._semaphore:
                base_url = self._pick_server()
                self._in_flight[base_url] += 1
                started = time.perf_counter()
                try:
                    response, mode = await self._create(base_url, messages, seed, choices)
                except StatusError as error:
                    retried = error.status_code >= 500 or error.status_code in _RETRIED_STATUSES
                    if not retried and error.status_code >= 400:
                        raise self._refused(error) from error
                    if not retried:  # an odd status (1xx, 3xx): count it, do not insist
                        return Completion(
                            text="",
                            attempts=attempt,
                            error=_describe(error),
                            server=self._shown[base_url],
                        )
                    failure: Exception = error
                except (ConnectionFailed, NotACompletion) as error:  # timeouts too
                    failure = error
                else:
                    latency = time.perf_counter() - started
                    return _completion(response, latency, attempt, self._shown[base_url], mode)
                finally:
                    self._in_flight[base_url] -= 1
            last_error = _describe(failure)
            if attempt <= self.config.max_retries:
                # Outside the semaphore: a request waiting out its back-off frees its slot.
                await asyncio.sleep(self._backoff(attempt, failure))
        return Completion(
            text="", attempts=self.config.max_retries + 1, error=f"retries exhausted: {last_error}"
        )

    async def _create(
        self,
        base_url: str,
        messages: ChatMessages,
        seed: int | None,
        choices: Sequence[str] | None,
    ) -> tuple[dict[str, Any], str]:
        """The server's completion and the mode it was asked in, stepping down the constrained
        modes and optional fields this server refuses (a refusal is no failed attempt: nothing
        was answered). Raises `NotACompletion` for a body that is no chat completion."""
        while True:
            mode = self._modes[base_url] if choices else "free"
            stepped = self._stepped[base_url]
            body = {
                "model": self.config.model,
                "messages": messages,
                **({"seed": seed} if seed is not None and "seed" not in stepped else {}),
                **self._fields[base_url],
                **_constraint(mode, choices or ()),
            }
            response = await self._client(base_url).request(
                "POST", "/chat/completions", json.dumps(body).encode()
            )
            if response.status >= 300:
                error = _status_error(response, self._shown[base_url] + "/chat/completions")
                if _refuses_mode(error, mode):
                    why = f"refused {mode} ({error.status_code}: {error.message[:120]})"
                    self._step_down(base_url, mode, why)
                    continue
                if self._drop_refused_field(base_url, error, body):
                    continue
                raise error
            completion = _parsed(response)
            if mode != "free" and _ignored(completion, mode, choices or ()):
                self._step_down(base_url, mode, f"ignored {mode} (answered outside the choices)")
                continue
            return completion, mode

    def _step_down(self, base_url: str, refused: str, why: str) -> None:
        if self._modes[base_url] != refused:
            return  # a concurrent request already stepped down past it
        following = STEP_DOWN[STEP_DOWN.index(refused) + 1]
        self._modes[base_url] = following
        _note(f"{self._shown[base_url]} {why}; asking it {following} from now on")

    def _drop_refused_field(self, base_url: str, error: StatusError, sent: dict) -> bool:
        """Whether the server refused an optional field of the request by name, which is then
        no longer sent to it (the token budget moves to the other name); once per field."""
        if not _refuses_a_field(error):
            return False
        message = error.message.lower()
        fields, stepped = self._fields[base_url], self._stepped[base_url]
        # Only optional fields: never the model, messages, nor a constraint (its own step-down).
        optional = {*fields, *stepped, "seed"}
        named = [
            name
            for name in sent
            if name in optional and re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", message)
        ]
        for name in named:
            if name in stepped:
                if name not in fields:
                    return True  # sent before a concurrent refusal left it out: ask again
                continue  # refused under both names: nothing left to step down
            stepped.add(name)
            if name in TOKEN_FIELDS:
                other = TOKEN_FIELDS[1 - TOKEN_FIELDS.index(name)]
                stepped.add(other)
                fields[other] = fields.pop(name)
                change = f"sending the token budget as {other}"
            else:
                fields.pop(name, None)
                change = f"leaving {name} out"
            _note(
                f"{self._shown[base_url]} refused {name} ({error.status_code}: "
                f"{error.message[:120]}); {change} from now on"
            )
            return True
        return False

    def _refused(self, error: StatusError) -> ModelServerError:
        status = error.status_code
        hint = {
            401: f"set ${self.config.api_key_env} to a key the server accepts (--api-key-env)",
            403: "the API key may not use this model; check the key and --model",
            404: "check --model against the server's model list and --base-url (ending in /v1)",
        }.get(status, "check --model, --max-tokens and the prompt length (--history)")
        return ModelServerError(
            f"the model server at {error.url} answered {status} "
            f"for model {self.config.model!r}: {error.message}; {hint}"
        )

    def _backoff(self, attempt: int, error: Exception) -> float:
        delay = self.config.backoff_s * 2 ** (attempt - 1)
        retry_after = getattr(error, "retry_after", None)
        if retry_after is not None:
            with contextlib.suppress(ValueError):  # an HTTP date keeps the exponential delay
                delay = max(delay, float(retry_after))
        return min(self.config.backoff_max_s, delay) * random.uniform(0.5, 1.0)

    async def close(self) -> None:
        for client in self._clients.values():
            await client.close()
        self._clients.clear()


def _note(text: str) -> None:
    print(f"note: {text}", file=sys.stderr, flush=True)


def _describe(error: Exception) -> str:
    status = getattr(error, "status_code", None)
    text = f"{type(error).__name__}{f' {status}' if status else ''}: {error}"
    return without_userinfo(text)[:300]


def _status_error(response: Any, url: str) -> StatusError:
    """The error of an answer with an error status, with the server's own words on one line."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        inner = body.get("error", body)
        body = (inner.get("message") or inner.get("detail")) if isinstance(inner, dict) else inner
        body = body or inner
    text = " ".join((str(body) if body else response.text).split())[:300] or "(no message)"
    return StatusError(response.status, text, url, response.headers.get("retry-after"))


def _parsed(response: Any) -> dict[str, Any]:
    """The chat completion of a 2xx answer; raises `NotACompletion` for any other body."""
    try:
        completion = response.json()
    except ValueError:
        completion = None
    if not _answers(completion):
        raise NotACompletion(
            f"HTTP {response.status} with a body that is no chat completion: "
            f"{response.body[:120].decode(errors='replace')!r}"
        )
    return completion


def _constraint(mode: str, choices: Sequence[str]) -> dict[str, Any]:
    """The request fields that restrict the reply to one of `choices` in `mode`."""
    names = list(choices)
    if mode == "constrained:guided_choice":
        return {"guided_choice": names, "structured_outputs": {"choice": names}}
    schema = {
        "type": "object",
        "properties": {"action": {"type": "string", "enum": names}},
        "required": ["action"],
        "additionalProperties": False,
    }
    if mode == "constrained:json_schema":
        return {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "action", "strict": True, "schema": schema},
            }
        }
    if mode == "constrained:json_object":
        return {"response_format": {"type": "json_object", "schema": schema}}
    return {}


def _answers(completion: Any) -> bool:
    """Whether `completion` is a chat completion with a message to read (its content may be
    empty: a reasoning model cut off by the token budget)."""
    if not isinstance(completion, dict):
        return False
    answers = completion.get("choices")
    return (
        isinstance(answers, list)
        and bool(answers)
        and isinstance(answers[0], dict)
        and isinstance(answers[0].get("message"), dict)
    )


def _ignored(completion: dict[str, Any], mode: str, choices: Sequence[str]) -> bool:
    """A complete constrained reply that is not one of `choices` (or their JSON): the server
    answered without the constraint it was sent."""
    answer = completion["choices"][0]
    text = (answer["message"].get("content") or "").strip()
    if mode == "constrained:guided_choice":
        # Cut off, a reply held to the choices is still the start of one: free text is not.
        if answer.get("finish_reason") == "length":
            return not any(choice.startswith(text) for choice in choices)
        return text not in choices
    if answer.get("finish_reason") == "length":
        return False  # a JSON reply cut short: nothing shows whether the schema held
    try:
        return json.loads(text).get("action") not in choices
    except (ValueError, AttributeError):
        return True


def _is_refusal(error: StatusError) -> bool:
    """A 4xx other than auth, not-found and the retried ones, or llama.cpp's Python server's
    500 "validation error" for a request its schema refuses."""
    status = error.status_code
    if status in (401, 403, 404, *_RETRIED_STATUSES):
        return False
    validation = status == 500 and "validation error" in error.message.lower()
    return 400 <= status < 500 or validation


def _refuses_mode(error: StatusError, mode: str) -> bool:
    """A refusal that names the field `mode` sent: the server does not support that mode."""
    if mode == "free" or not _is_refusal(error):
        return False
    message = error.message.lower()
    return any(word in message for word in _MODE_FIELDS[mode])


def _refuses_a_field(error: StatusError) -> bool:
    return _is_refusal(error) and bool(_REFUSAL_WORDS.search(error.message.lower()))


def _completion(
    completion: dict[str, Any], latency_s: float, attempts: int, server: str, mode: str
) -> Completion:
    answer = completion["choices"][0]
    message = answer["message"]
    usage = completion.get("usage") or {}
    # vLLM's reasoning parsers answer `reasoning_content`; newer versions `reasoning`.
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    return Completion(
        text=message.get("content") or "",
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        latency_s=latency_s,
        attempts=attempts,
        server=server,
        reasoning=reasoning if isinstance(reasoning, str) and reasoning else None,
        cut_off=answer.get("finish_reason") == "length",
        mode=mode,
    )
