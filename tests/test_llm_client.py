"""The OpenAI-compatible client against a real loopback server, faults and all."""

import asyncio
import re

import pytest

from alemlite.core.errors import ConfigError
from llm_bridge.clients.base import ModelServerError
from llm_bridge.clients.openai_backend import BackendUnreachable, OpenAIBackend, OpenAIConfig
from tests.llm_server import ChatServer, Faults


def echo(messages):
    return f"<action>WAIT</action><message>{messages[-1]['content']}</message>"


def backend(*urls, **overrides):
    config = dict(model="scripted", base_urls=urls, backoff_s=0.001, timeout_s=10.0)
    return OpenAIBackend(OpenAIConfig(**(config | overrides)))


async def ask_many(client, count):
    try:
        return await asyncio.gather(
            *(client.complete([{"role": "user", "content": f"q{i}"}]) for i in range(count))
        )
    finally:
        await client.close()


def test_transient_faults_are_retried_and_counted():
    faults = Faults(rate_limit=0.15, server_error=0.15, drop=0.15, slow=0.15, slow_s=0.02)
    with ChatServer(echo, faults) as server:
        completions = asyncio.run(ask_many(backend(server.base_url, concurrency=16), 120))
    assert [c.text for c in completions] == [echo([{"content": f"q{i}"}]) for i in range(120)]
    assert not any(c.failed for c in completions)
    retried = server.log.faults["rate_limit"] + server.log.faults["server_error"]
    retried += server.log.faults["drop"]
    assert retried > 0 and sum(c.attempts - 1 for c in completions) == retried
    assert all(c.prompt_tokens == 1 and c.completion_tokens == 1 for c in completions)
    assert all(c.latency_s > 0 for c in completions)
    assert server.log.max_in_flight <= 16


def test_persistent_failures_come_back_failed_not_raised():
    with ChatServer(echo, Faults(server_error=1.0, transient=False)) as server:
        completions = asyncio.run(ask_many(backend(server.base_url, max_retries=2), 3))
    assert all(c.failed and c.text == "" and c.attempts == 3 for c in completions)
    assert "retries exhausted" in completions[0].error and "500" in completions[0].error
    assert server.log.requests == 9


def test_requests_are_spread_over_servers():
    with ChatServer(echo) as first, ChatServer(echo) as second:
        completions = asyncio.run(ask_many(backend(first.base_url, second.base_url), 40))
    assert first.log.requests > 0 and second.log.requests > 0
    assert first.log.requests + second.log.requests == 40
    assert {c.server for c in completions} == {first.base_url, second.base_url}


def test_unreachable_server_gives_a_clear_error():
    with ChatServer(echo) as server:
        url = server.base_url  # a port that was free, and is closed again after the block
    client = backend(url)
    with pytest.raises(BackendUnreachable, match="no OpenAI-compatible server answers at"):
        asyncio.run(client.check())
    asyncio.run(client.close())


def test_a_request_backing_off_leaves_its_slot_to_others():
    """One slot: the first request is rate limited (Retry-After 1 s); while it waits, the
    second one is sent, and only then the first one again."""
    faults = Faults(status=429, status_first=1, retry_after="1")
    with ChatServer(echo, faults) as server:
        client = backend(server.base_url, concurrency=1, backoff_max_s=1.0)
        first, second = asyncio.run(ask_many(client, 2))
    assert server.log.order == ["q0", "q1", "q0"]
    assert first.attempts == 2 and second.attempts == 1
    assert not first.failed and not second.failed


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_a_refused_request_raises_at_once(status):
    faults = Faults(status=status, status_message="no such model: scripted")
    with ChatServer(echo, faults) as server, pytest.raises(ModelServerError) as caught:
        asyncio.run(ask_many(backend(server.base_url, max_retries=4), 1))
    assert str(caught.value).startswith(
        f"the model server at {server.base_url}/chat/completions answered {status} for model "
        "'scripted': no such model: scripted; "
    )
    assert server.log.requests == 1  # not retried


@pytest.mark.parametrize("status", [408, 409, 429, 500, 502, 503])
def test_transient_statuses_are_retried(status):
    with ChatServer(echo, Faults(status=status, status_first=2)) as server:
        [completion] = asyncio.run(ask_many(backend(server.base_url, max_retries=2), 1))
    assert not completion.failed and completion.attempts == 3
    assert server.log.requests == 3


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("concurrency", 0, "concurrency=0 must be at least 1"),
        ("max_retries", -1, "max_retries=-1 must be 0 or more"),
        ("timeout_s", 0.0, "timeout_s=0.0 must be a positive number of seconds"),
        ("max_tokens", 0, "max_tokens=0 must be at least 1"),
        ("temperature", -0.5, "temperature=-0.5 must be a finite number >= 0"),
        ("base_urls", (), "base_urls=() is empty"),
    ],
)
def test_the_client_config_is_checked_when_built(field, value, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        OpenAIConfig(**{field: value})
