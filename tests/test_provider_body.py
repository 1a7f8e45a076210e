"""The streamed body is read a whole socket read at a time, and
reads as httpx reads it: the same bytes in any framing, the same errors, the connection back
in the pool, also when the reader stops at the stream's ``data: [DONE]`` (its end is read
then, within a short wait). A raw HTTP/1.1 server here writes exactly the bytes each test
gives it."""

from __future__ import annotations

import gzip
import json
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from gitsessions.provider import body
from gitsessions.provider.client import OpenAIProvider
from gitsessions.provider.wire import Completion, TextDelta

httpx = OpenAIProvider._httpx()
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


def chunked(*parts: bytes) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts)


#: In a raw server's writes: wait (up to HOLD_S seconds) for the client to close the
#: connection, as a server that keeps the body open does; a close ends the connection.
HOLD = None
HOLD_S = 30.0


@contextmanager
def raw_server(writes: list[bytes | None], close: bool = False, head: bytes = HEAD) -> Iterator[dict]:
    """Answer each request on 127.0.0.1 with ``head`` and ``writes``, one ``sendall`` each.

    Yields ``{"url": ..., "connections": n}``; a connection stays open for more requests
    unless ``close``.
    """
    info = {"connections": 0}
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    info["url"] = f"http://127.0.0.1:{listener.getsockname()[1]}/v1/stream"

    def serve(conn: socket.socket) -> None:
        with conn:
            seen = b""
            while True:
                while b"\r\n\r\n" not in seen:
                    data = conn.recv(65536)
                    if not data:
                        return
                    seen += data
                request, _, seen = seen.partition(b"\r\n\r\n")
                length = next((int(line.split(b":")[1]) for line in request.split(b"\r\n")
                               if line.lower().startswith(b"content-length:")), 0)
                while len(seen) < length:
                    seen += conn.recv(65536)
                seen = seen[length:]
                conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                for i, data in enumerate(writes):
                    if data is HOLD:
                        conn.settimeout(HOLD_S)
                        try:
                            if not conn.recv(65536):
                                return  # the client gave the connection up
                        except TimeoutError:
                            pass
                        conn.settimeout(None)
                        continue
                    conn.sendall(head + data if i == 0 else data)
                if close:
                    return

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            info["connections"] += 1
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield info
    finally:
        listener.close()


EVENTS = [b'data: {"n": %d}\n\n' % i for i in range(50)]


def test_the_whole_chunks_of_a_read_come_at_once_and_the_connection_is_used_again():
    with raw_server([chunked(*EVENTS) + b"0\r\n\r\n"]) as server, httpx.Client() as client:
        for _ in range(2):
            with client.stream("POST", server["url"], content=b"{}") as response:
                got = list(body.pieces(response))
            assert b"".join(got) == b"".join(EVENTS)
            assert len(got) < len(EVENTS)  # httpx alone hands over one piece per HTTP chunk
        assert server["connections"] == 1  # h11 read the body's end: the connection went back to the pool


BIG = b"x" * (body.READ_SIZE + 10)
FRAMINGS = {
    "an extension": b"5\r\nhello\r\n6;name=value\r\n world\r\n0\r\n\r\n",
    "upper-case hex and a trailer": b"A\r\n0123456789\r\n0\r\nX-Trailer: yes\r\n\r\n",
    "a chunk bigger than a read": chunked(b"a", BIG, b"b") + b"0\r\n\r\n",
    "a long size line": b"000000005\r\nhello\r\n0\r\n\r\n",
}
EXPECTED = {"an extension": b"hello world", "upper-case hex and a trailer": b"0123456789",
            "a chunk bigger than a read": b"a" + BIG + b"b", "a long size line": b"hello"}


@pytest.mark.parametrize("name", FRAMINGS)
@pytest.mark.parametrize("bytewise", [False, True], ids=["one write", "a byte a write"])
def test_a_body_reads_the_same_in_any_framing_and_cut_anywhere(name, bytewise):
    raw = FRAMINGS[name]
    writes = [raw[i:i + 1] for i in range(len(raw))] if bytewise and len(raw) < 1000 else [raw]
    with raw_server(writes) as server, httpx.Client() as client:
        with client.stream("POST", server["url"], content=b"{}") as response:
            assert b"".join(body.pieces(response)) == EXPECTED[name]


def test_a_body_httpx_must_decode_or_that_is_not_chunked_reads_as_httpx_reads_it():
    gzipped = gzip.compress(b"".join(EVENTS))
    cases = [(HEAD.replace(b"\r\n\r\n", b"\r\nContent-Encoding: gzip\r\n\r\n"), chunked(gzipped[:100], gzipped[100:])
              + b"0\r\n\r\n"),
             (b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(b"".join(EVENTS)), b"".join(EVENTS))]
    for head, raw in cases:
        with raw_server([raw], head=head) as server, httpx.Client() as client:
            with client.stream("POST", server["url"], content=b"{}") as response:
                assert b"".join(body.pieces(response)) == b"".join(EVENTS)


@pytest.mark.parametrize("cut", [b"5\r\nhel", b"5\r\nhello\r\n", b"5\r\nhello\r", b"5"])
def test_a_body_cut_short_fails_as_httpx_fails(cut):
    failures = []
    for read in (body.pieces, lambda response: response.iter_bytes()):
        with raw_server([cut], close=True) as server, httpx.Client() as client:
            with client.stream("POST", server["url"], content=b"{}") as response:
                with pytest.raises(httpx.HTTPError) as info:
                    b"".join(read(response))
                failures.append((type(info.value), str(info.value)))
    assert failures[0] == failures[1]
    assert failures[0][0] is httpx.RemoteProtocolError


def chat_events(text: str) -> list[bytes]:
    """A chat-completions stream of ``text``, a piece an event, closed by ``data: [DONE]``."""
    chunks = [{"choices": [{"index": 0, "delta": {"content": c}, "finish_reason": None}]} for c in text]
    chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    return [b"data: %s\n\n" % json.dumps(c).encode() for c in chunks] + [b"data: [DONE]\n\n"]


def provider_on(server: dict) -> OpenAIProvider:
    # A read timeout far beyond the wait for a body's end: waiting for it would hold the test.
    return OpenAIProvider("m", "k", server["url"].removesuffix("/stream"), timeout_s=HOLD_S * 2, max_retries=0)


def replies(provider: OpenAIProvider, n: int) -> list[str]:
    return [next(i for i in provider.stream(USER) if isinstance(i, Completion)).content for _ in range(n)]


USER = [{"role": "user", "content": "hi"}]


@pytest.mark.parametrize("apart", [False, True], ids=["end with [DONE]", "end written after [DONE]"])
def test_after_done_the_body_end_is_read_and_the_connection_serves_the_next_request(apart):
    """The provider stops at [DONE]; h11 must still read the last chunk, or httpcore closes
    the connection and every request (each turn, each tool step) opens a new one."""
    stream = chunked(*chat_events("hello"))
    writes = [stream, b"0\r\n\r\n"] if apart else [stream + b"0\r\n\r\n"]
    with raw_server(writes) as server:
        assert replies(provider_on(server), 3) == ["hello"] * 3
        assert server["connections"] == 1


def test_a_body_left_open_after_done_is_given_up_and_the_reply_is_whole():
    """A server that sends the end only after a long while (HOLD_S, the read timeout is
    longer): the reply is complete at [DONE], the wait for the end is short, and the
    connection is closed instead (waiting on would have reused it)."""
    with raw_server([chunked(*chat_events("hello")), HOLD, b"0\r\n\r\n"]) as server:
        assert replies(provider_on(server), 2) == ["hello"] * 2
        assert server["connections"] == 2


def test_a_reply_stopped_mid_stream_closes_its_connection_at_once():
    """Ctrl+C mid-reply (the loop stops reading, and closes the stream): the rest of the body
    is not read (which here would give the connection back to the pool): the reply stops now."""
    events = chat_events("hello")
    with raw_server([chunked(*events[:3]), chunked(*events[3:]) + b"0\r\n\r\n"]) as server:
        provider = provider_on(server)
        stream = provider.stream(USER)
        assert next(stream) == TextDelta("h")
        stream.close()
        assert replies(provider, 1) == ["hello"]
        assert server["connections"] == 2


def test_finish_reads_the_end_of_a_body_httpx_reads():
    """A body read by httpx from its start (an extension in its first chunk): finish() has
    h11 read its end as well."""
    raw = b"5;x=y\r\nhello\r\n" + chunked(b"data: [DONE]\n\n") + b"0\r\n\r\n"
    with raw_server([raw]) as server, httpx.Client() as client:
        for _ in range(2):
            with client.stream("POST", server["url"], content=b"{}") as response:
                pieces = body.Body(response)
                assert next(iter(pieces)) == b"hello"
                assert pieces.finish()
        assert server["connections"] == 1
