"""The lean HTTP/1.1 client under the OpenAI backend: the bodies servers send (a length,
chunks, or up to the close), connections kept alive and reused, a server that closes an
idle connection, the deadline, and a URL's user info sent as basic auth (never in a path)."""

from __future__ import annotations

import asyncio
import base64

import pytest

from llm_bridge.clients.http import ConnectionFailed, HTTPClient, RequestTimeout

ANSWERS = {
    "/v1/length": b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
    "/v1/chunked": (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"3\r\nhel\r\n2;ext=1\r\nlo\r\n0\r\nX-Trailer: 1\r\n\r\n"
    ),
    "/v1/close": b"HTTP/1.1 503 Busy\r\nConnection: close\r\nRetry-After: 2\r\n\r\nhello",
    "/v1/unframed": b"HTTP/1.1 200 OK\r\n\r\nhello",
}


class Server:
    """Answers each request by its path (`ANSWERS`); `/v1/slow` never; `/v1/drop` hangs up;
    `/v1/idle-close` answers, then closes the connection while it is idle."""

    def __init__(self) -> None:
        self.connections = 0
        self.heads: list[bytes] = []

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                self.heads.append(head)
                length = int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0])
                await reader.readexactly(length)
                path = head.split(b" ")[1].decode()
                if path == "/v1/slow":
                    await asyncio.sleep(10)
                if path == "/v1/drop":
                    break
                if path == "/v1/idle-close":
                    writer.write(ANSWERS["/v1/length"])
                    await writer.drain()
                    break
                writer.write(ANSWERS[path])
                await writer.drain()
                if path in ("/v1/close", "/v1/unframed"):
                    break
        except asyncio.IncompleteReadError:
            pass
        writer.close()


async def serve_and(work) -> Server:
    server = Server()
    listening = await asyncio.start_server(server.handle, "127.0.0.1", 0)
    port = listening.sockets[0].getsockname()[1]
    try:
        await work(port)
    finally:
        listening.close()
    return server


def test_bodies_by_length_chunks_or_close_and_connections_reused():
    async def work(port):
        client = HTTPClient(f"http://127.0.0.1:{port}/v1", {"X-Test": "1"}, timeout_s=5)
        answers = [await client.request("POST", path[3:], b"{}") for path in ANSWERS]
        assert [answer.body for answer in answers] == [b"hello"] * 4
        assert answers[2].status == 503 and answers[2].headers["retry-after"] == "2"
        again = await client.request("POST", "/length", b"{}")
        assert again.body == b"hello"
        await client.close()

    server = asyncio.run(serve_and(work))
    # One connection for /length and /chunked, closed after /close; one for /unframed,
    # closed after its body; one more for the last.
    assert server.connections == 3
    sent = (b"X-Test: 1\r\n", b"Content-Length: 2\r\n")
    assert all(all(line in head for line in sent) for head in server.heads)


def test_a_connection_the_server_closed_while_idle_is_not_reused():
    async def work(port):
        client = HTTPClient(f"http://127.0.0.1:{port}/v1", {}, timeout_s=5)
        await client.request("POST", "/idle-close", b"{}")
        await asyncio.sleep(0.05)  # the server's close arrives while the connection idles
        assert (await client.request("POST", "/length", b"{}")).body == b"hello"
        await client.close()

    server = asyncio.run(serve_and(work))
    assert server.connections == 2


def test_a_dropped_connection_and_a_slow_answer_fail_as_the_backend_retries_them():
    async def work(port):
        client = HTTPClient(f"http://127.0.0.1:{port}/v1", {}, timeout_s=0.2)
        with pytest.raises(ConnectionFailed, match="the connection broke"):
            await client.request("POST", "/drop", b"{}")
        with pytest.raises(RequestTimeout, match=r"no answer within 0.2 s \(POST /slow\)"):
            await client.request("POST", "/slow", b"{}")
        await client.close()

    asyncio.run(serve_and(work))
    with pytest.raises(ConnectionFailed, match=r"cannot connect to 127\.0\.0\.1:9"):
        asyncio.run(HTTPClient("http://127.0.0.1:9/v1", {}, timeout_s=5).request("GET", "/x"))


def test_user_info_of_the_url_is_basic_auth_and_no_part_of_the_request_line():
    async def work(port):
        client = HTTPClient(f"http://user:p%40ss@127.0.0.1:{port}/v1", {}, timeout_s=5)
        await client.request("POST", "/length", b"{}")
        await client.close()

    server = asyncio.run(serve_and(work))
    (head,) = server.heads
    assert head.startswith(b"POST /v1/length HTTP/1.1\r\n") and b"p%40ss" not in head
    assert f"Authorization: Basic {base64.b64encode(b'user:p@ss').decode()}".encode() in head
