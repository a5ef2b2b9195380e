"""The OpenAI-compatible client against a real loopback server, faults and all."""

import asyncio

import pytest

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
