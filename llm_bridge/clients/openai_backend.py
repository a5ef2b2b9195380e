"""OpenAI-compatible chat completions over HTTP (vLLM, SGLang, llama.cpp, Ollama, hosted APIs).

Several base URLs may be given: each request goes to the server with the fewest
requests in flight, so one evaluation can spread over many servers. A semaphore caps
the requests in flight overall. Rate limits (429), server errors (5xx), timeouts and
dropped connections are retried with exponential backoff and jitter (honouring
`Retry-After`); other errors, and a request whose retries run out, come back as a
failed `Completion` for the runner to count, so that one bad request never ends a run.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import time
from dataclasses import dataclass

import openai

from llm_bridge.clients.base import ChatMessages, Completion

_RETRIED = (openai.RateLimitError, openai.InternalServerError, openai.APIConnectionError)


class BackendUnreachable(RuntimeError):
    """No server answers at a configured base URL."""


@dataclass(frozen=True)
class OpenAIConfig:
    """How to reach and sample an OpenAI-compatible chat model."""

    model: str = "Qwen/Qwen2.5-7B-Instruct"
    base_urls: tuple[str, ...] = ("http://127.0.0.1:8000/v1",)
    api_key_env: str = "OPENAI_API_KEY"  # local servers accept any key; "EMPTY" if unset
    temperature: float = 0.0
    max_tokens: int = 256
    seed: int | None = None  # sampling seed sent with every request, where the server honours it
    concurrency: int = 64
    timeout_s: float = 120.0
    max_retries: int = 6
    backoff_s: float = 0.5  # first retry waits about this long; doubles each time
    backoff_max_s: float = 30.0


class OpenAIBackend:
    def __init__(self, config: OpenAIConfig):
        if not config.base_urls:
            raise ValueError("OpenAIConfig.base_urls is empty; pass at least one --base-url")
        self.config = config
        self.name = config.model
        self._api_key = os.environ.get(config.api_key_env) or "EMPTY"
        self._clients: dict[str, openai.AsyncOpenAI] = {}
        self._in_flight = dict.fromkeys(config.base_urls, 0)
        self._semaphore: asyncio.Semaphore | None = None
        self._next = 0

    def _client(self, base_url: str) -> openai.AsyncOpenAI:
        # Built lazily, inside the running event loop that will use it.
        if base_url not in self._clients:
            self._clients[base_url] = openai.AsyncOpenAI(
                base_url=base_url,
                api_key=self._api_key,
                timeout=self.config.timeout_s,
                max_retries=0,  # retries are ours, so that they are counted
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
                await self._client(base_url).with_options(timeout=10.0).models.list()
            except (openai.APIConnectionError, openai.APITimeoutError) as error:
                raise BackendUnreachable(
                    f"no OpenAI-compatible server answers at {base_url} ({error}). Start one "
                    f"(e.g. `vllm serve {self.config.model} --port 8000`) and pass its URL "
                    "ending in /v1 as --base-url"
                ) from error
            except openai.AuthenticationError as error:
                raise BackendUnreachable(
                    f"the server at {base_url} refused the API key; set ${self.config.api_key_env}"
                ) from error
            except openai.APIStatusError:
                pass  # reachable; some servers do not list models

    async def complete(self, messages: ChatMessages, seed: int | None = None) -> Completion:
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.config.concurrency)
        seed = self.config.seed if seed is None else seed
        last_error = ""
        async with self._semaphore:
            for attempt in range(1, self.config.max_retries + 2):
                base_url = self._pick_server()
                self._in_flight[base_url] += 1
                started = time.perf_counter()
                try:
                    response = await self._client(base_url).chat.completions.create(
                        model=self.config.model,
                        messages=messages,
                        temperature=self.config.temperature,
                        max_tokens=self.config.max_tokens,
                        **({"seed": seed} if seed is not None else {}),
                    )
                except _RETRIED as error:
                    last_error = _describe(error)
                    if attempt <= self.config.max_retries:
                        await asyncio.sleep(self._backoff(attempt, error))
                    continue
                except openai.OpenAIError as error:
                    return Completion(
                        text="", attempts=attempt, error=_describe(error), server=base_url
                    )
                finally:
                    self._in_flight[base_url] -= 1
                return _completion(response, time.perf_counter() - started, attempt, base_url)
        return Completion(
            text="", attempts=self.config.max_retries + 1, error=f"retries exhausted: {last_error}"
        )

    def _backoff(self, attempt: int, error: Exception) -> float:
        delay = self.config.backoff_s * 2 ** (attempt - 1)
        response = getattr(error, "response", None)
        retry_after = response.headers.get("retry-after") if response is not None else None
        if retry_after is not None:
            with contextlib.suppress(ValueError):  # an HTTP date keeps the exponential delay
                delay = max(delay, float(retry_after))
        return min(self.config.backoff_max_s, delay) * random.uniform(0.5, 1.0)

    async def close(self) -> None:
        for client in self._clients.values():
            await client.close()
        self._clients.clear()


def _describe(error: Exception) -> str:
    status = getattr(error, "status_code", None)
    return f"{type(error).__name__}{f' {status}' if status else ''}: {error}"[:300]


def _completion(response, latency_s: float, attempts: int, server: str) -> Completion:
    choices = getattr(response, "choices", None) or []
    message = getattr(choices[0], "message", None) if choices else None
    usage = getattr(response, "usage", None)
    return Completion(
        text=(getattr(message, "content", None) or "") if message is not None else "",
        prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
        completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
        latency_s=latency_s,
        attempts=attempts,
        server=server,
    )
