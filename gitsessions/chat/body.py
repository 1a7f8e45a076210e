"""A streamed HTTP/1.1 response body read a whole socket read at a time (issue 11, cheap streaming).

httpx hands a chunked body over one HTTP chunk at a time, each parsed by h11 in Python; a
model server writes every streamed event as a chunk of its own, so that costs ~10 us per
event, more than the rest of gs does with it. :func:`pieces` reads the connection's socket
itself while the body is plain chunked HTTP/1.1, and hands over at once the data of every
whole chunk one read brought. Anything else goes through httpx as before: the bytes not yet
parsed are given back to h11 at a chunk boundary, where h11 left off, so it reads on as if it
had read them itself: the last chunk and its trailer, a chunk extension, a malformed chunk
or a body cut short (its errors), and the connection's return to the pool.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Generator, Iterator
from typing import Any

#: Bytes asked of the socket per read (as httpcore asks).
READ_SIZE = 64 * 1024
#: Seconds between two reads that found the body caught up (less than half a read waiting):
#: text arriving faster than this is handed over together, one wake-up per interval, not
#: one per event (a wake-up costs more CPU than gs's own work on an event); slower text is
#: read the moment it arrives.
READ_INTERVAL = 0.001
_HEX = frozenset(b"0123456789abcdefABCDEF")
_MAX_HEAD = 8  # hex digits of a chunk size read here; a longer line is h11's to judge


def pieces(response: Any) -> Iterator[bytes]:
    """Yield the body of a streamed httpx response as it arrives, decoded as ``iter_bytes`` does.

    Args:
        response: a streamed ``httpx.Response`` (or ``httpx2``), its body not yet read.

    Yields:
        The body in pieces: for a plain chunked HTTP/1.1 body, the data of all whole chunks
        of one read joined; else what ``response.iter_bytes()`` yields.

    Raises:
        httpx.HTTPError: what ``iter_bytes`` raises for the same body (a read timeout, a
            reset, a body cut short), the same types.
    """
    taken = _take_over(response)
    if taken is not None:
        state, buffered, read, mapped = taken
        rest = yield from _whole_chunks(buffered, read, mapped)
        state.receive_data(rest)
    yield from response.iter_bytes()


def _take_over(response: Any) -> tuple[Any, bytearray, Callable[[], bytes], Callable[[], Any]] | None:
    """The h11 state, its bytes, a socket read and httpx's error mapping; None: httpx reads the body.

    Taken when the body is plain chunked HTTP/1.1 that h11 has not begun.

    The objects are httpcore's own, reached through its private attributes: a release that
    renames them makes this None, and the body is read through httpx as it always could be.
    """
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    if encoding != "identity" or response.is_stream_consumed or response.is_closed:
        return None
    try:
        http = type(response).__module__.partition(".")[0]  # httpx2, or httpx (openai before 3.x)
        core = importlib.import_module(("httpcore2" if http == "httpx2" else "httpcore") + "._sync.http11")
        stream = response.stream._stream._httpcore_stream._stream
        if not isinstance(stream, core.HTTP11ConnectionByteStream):
            return None  # HTTP/2, or a transport of someone else's
        connection = stream._connection
        state, network = connection._h11_state, connection._network_stream
        reader = state._reader
        if (type(reader).__name__ != "ChunkedReader" or reader._bytes_in_chunk or reader._bytes_to_discard
                or reader._reading_trailer or state._receive_buffer_closed
                or response.extensions.get("network_stream") is not network):
            return None
        mapped = importlib.import_module(http + "._transports.default").map_httpcore_exceptions
        held = state._receive_buffer
        buffered = bytearray(held._extract(len(held)))
    except (AttributeError, ImportError, TypeError):  # another release of httpx, httpcore or h11
        return None
    timeout = response.request.extensions.get("timeout", {}).get("read")
    return state, buffered, lambda: network.read(READ_SIZE, timeout), mapped


def _whole_chunks(buf: bytearray, read: Callable[[], bytes], mapped: Callable[[], Any]
                  ) -> Generator[bytes, None, bytes]:
    """Yield the data of the whole data chunks in ``buf`` and in each read after it, joined per read.

    Returns:
        The bytes from the first thing that is not a whole plain data chunk once it arrived
        (the last chunk, an extension, a malformed chunk), for h11; or, when the peer closed,
        what is left, which is empty at a chunk boundary: ``b""`` tells h11 the stream ended.
    """
    pos = 0
    next_read = 0.0  # when the next read may be made (see READ_INTERVAL)
    while True:
        parts = []
        stop = False
        while True:
            nl = buf.find(b"\r\n", pos)
            if nl < 0:
                stop = len(buf) - pos > _MAX_HEAD  # not a size we read
                break
            head = buf[pos:nl]
            if not head or len(head) > _MAX_HEAD or not _HEX.issuperset(head):
                stop = True
                break
            size = int(head, 16)
            end = nl + 2 + size
            if size == 0 or size > READ_SIZE:  # the last chunk; or one h11 hands over in parts
                stop = True
                break
            if len(buf) < end + 2:
                break  # the chunk's end is still to come
            if buf[end:end + 2] != b"\r\n":
                stop = True
                break
            parts.append(buf[nl + 2:end])
            pos = end + 2
        if parts:
            yield b"".join(parts)
        if stop:
            return bytes(buf[pos:])
        del buf[:pos]
        pos = 0
        wait = next_read - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        with mapped():  # httpcore's errors as httpx raises them
            data = read()
        next_read = time.monotonic() + READ_INTERVAL if len(data) < READ_SIZE // 2 else 0.0
        if not data:
            return bytes(buf)  # the peer closed: h11 reads the end again and says what it was
        buf += data
