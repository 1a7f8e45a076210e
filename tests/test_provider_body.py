"""The streamed body is read a whole socket read at a time (issue 11, cheap streaming), and
reads as httpx reads it: the same bytes in any framing, the same errors, the connection back
in the pool. A raw HTTP/1.1 server here writes exactly the bytes each test gives it."""

from __future__ import annotations

import gzip
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from gitsessions.chat import body
from gitsessions.chat.provider import OpenAIProvider

httpx = OpenAIProvider._httpx()
HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


def chunked(*parts: bytes) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in parts)


@contextmanager
def raw_server(writes: list[bytes], close: bool = False, head: bytes = HEAD) -> Iterator[dict]:
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
