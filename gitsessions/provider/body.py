"""A streamed HTTP/1.1 response body read a whole socket read at a time, so that streaming stays cheap.

httpx hands a chunked body over one HTTP chunk at a time, each parsed by h11 in Python; a
model server writes every streamed event as a chunk of its own, so that costs ~10 us per
event, more than the rest of gs does with it. :func:`pieces` reads the connection's socket
itself while the body is plain chunked HTTP/1.1, and hands over at once the data of every
whole chunk one read brought. Anything else goes through httpx as before: the bytes not yet
parsed are given back to h11 at a chunk boundary, where h11 left off, so it reads on as if it
had read them itself: the last chunk and its trailer, a chunk extension, a malformed chunk
or a body cut short (its errors), and the connection's return to the pool.

A reader that stops at the stream's last event (``data: [DONE]``) calls :meth:`Body.finish`:
the body's end (its last chunk) is read too, within a short wait, so that the connection goes
back to the client's pool for the next request instead of being closed.
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


#: Seconds the end of a body may take after the stream's last event before the connection is
#: closed instead: the end comes with the last event or right after it, and a server slower than
#: this costs each reply this wait, about what a new connection would (TCP and TLS handshakes).
FINISH_WAIT = 0.25


class Body:
    """The body of a streamed httpx response: its pieces as they arrive, then its end.

    Iterated (once), it yields the body decoded as ``iter_bytes`` does, in pieces: for a plain
    chunked HTTP/1.1 body, the data of all whole chunks of one read joined (``b""`` for a
    read that completed none, so that a reader sees the body arrive); else what
    ``response.iter_bytes()`` yields. It raises what ``iter_bytes`` raises for the same body
    (``httpx.HTTPError``: a read timeout, a reset, a body cut short), the same types. A reader
    that stops early because the stream said it finished calls :meth:`finish`.

    Args:
        response: a streamed ``httpx.Response`` (or ``httpx2``), its body not yet read.
    """

    def __init__(self, response: Any):
        self._response = response
        self._own = False  # this reads the socket itself: h11 lacks the bytes held
        self._held = bytearray()  # bytes read from the socket, not handed over yet, at a chunk boundary
        self._pieces = self._read()  # held here: a reader's ``break`` must not close it (see finish)

    def __iter__(self) -> Iterator[bytes]:
        return self._pieces

    def _read(self) -> Generator[bytes, None, None]:
        taken = _take_over(self._response)
        if taken is not None:
            state, self._held, read, mapped = taken
            self._own = True
            rest = yield from _whole_chunks(self._held, read, mapped)
            self._own = False
            state.receive_data(rest)
        yield from self._response.iter_bytes()

    def finish(self, wait_s: float = FINISH_WAIT) -> bool:
        """Read the rest of the body, discarded, so that its connection can serve the next request.

        For a reader that stopped iterating because the stream said it finished. httpcore puts
        a connection back in the pool only when h11 has read the whole response (the last chunk
        of a chunked body); closed before, the connection is closed, and the next request pays
        a new one. The rest is normally there already or arrives at once; a server that keeps
        the body open longer than ``wait_s`` (or the read timeout, if shorter) gets the
        connection closed, as before. The iteration is over after this.

        Args:
            wait_s: seconds to wait at most for the body's end.

        Returns:
            True when the whole body was read (the connection goes back to the pool when the
            response is closed); False when it was not (the connection is closed with it).
        """
        try:
            parts = _connection(self._response)
            if parts is None:
                return False  # HTTP/2 or another transport: its own way of ending a stream
            state, network, h11, core = parts
            if self._own:  # the bytes held go back to h11, where it left off
                self._own = False
                if self._held:  # (no bytes would tell h11 the peer closed)
                    state.receive_data(bytes(self._held))
                    self._held.clear()
            return _drain(state, network, h11, core, self._response, wait_s)
        finally:
            self._pieces.close()  # after the drain: httpcore's stream closes the connection unless h11 is done


def pieces(response: Any) -> Iterator[bytes]:
    """The body of a streamed httpx response as it arrives, for a reader that reads it all.

    Args:
        response: a streamed ``httpx.Response`` (or ``httpx2``), its body not yet read.

    Returns:
        An iterator of the body's pieces, as :class:`Body` yields them (and raising what it
        raises).
    """
    return iter(Body(response))


def _drain(state: Any, network: Any, h11: Any, core: Any, response: Any, wait_s: float) -> bool:
    """Let h11 read the response to its end within ``wait_s`` seconds; True when it did."""
    if response.is_closed:
        return False  # its connection went where the close sent it
    keep_alive = getattr(getattr(state, "_cstate", None), "keep_alive", True)  # h11's own, private
    if state.their_state is not h11.SEND_BODY or not keep_alive:
        return state.their_state is h11.DONE  # or it closes after this response anyway: no wait
    timeout = response.request.extensions.get("timeout", {}).get("read")
    deadline = time.monotonic() + (wait_s if timeout is None else min(wait_s, timeout))
    try:
        while True:
            event = state.next_event()
            if isinstance(event, h11.EndOfMessage):
                return True
            if event is h11.NEED_DATA:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                state.receive_data(network.read(READ_SIZE, left))
            elif not isinstance(event, h11.Data):
                return False  # the peer closed: h11 says so
    except (h11.ProtocolError, core.NetworkError, core.TimeoutException):
        return False  # a malformed end, a reset, the wait over: the connection is closed


def _connection(response: Any) -> tuple[Any, Any, Any, Any] | None:
    """The h11 state, network stream, h11 and httpcore modules of the response's HTTP/1.1 connection.

    None for another transport (HTTP/2, someone else's). The objects are httpcore's own,
    reached through its private attributes: a release that renames them makes this None, and
    the body is read through httpx as it always could be.
    """
    try:
        http = type(response).__module__.partition(".")[0]  # httpx2, or httpx (openai before 3.x)
        core = importlib.import_module("httpcore2" if http == "httpx2" else "httpcore")
        http11 = importlib.import_module(core.__name__ + "._sync.http11")
        stream = response.stream._stream._httpcore_stream._stream
        if not isinstance(stream, http11.HTTP11ConnectionByteStream):
            return None  # HTTP/2, or a transport of someone else's
        connection = stream._connection
        state, network = connection._h11_state, connection._network_stream
        if response.extensions.get("network_stream") is not network:
            return None
        return state, network, http11.h11, core
    except (AttributeError, ImportError, TypeError):  # another release of httpx, httpcore or h11
        return None


def _take_over(response: Any) -> tuple[Any, bytearray, Callable[[], bytes], Callable[[], Any]] | None:
    """The h11 state, its bytes, a socket read and httpx's error mapping; None: httpx reads the body.

    Taken when the body is plain chunked HTTP/1.1 that h11 has not begun.
    """
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    if encoding != "identity" or response.is_stream_consumed or response.is_closed:
        return None
    parts = _connection(response)
    if parts is None:
        return None
    state, network, _h11, _core = parts
    try:
        reader = state._reader
        if (type(reader).__name__ != "ChunkedReader" or reader._bytes_in_chunk or reader._bytes_to_discard
                or reader._reading_trailer or state._receive_buffer_closed):
            return None
        http = type(response).__module__.partition(".")[0]
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

    A read that brings bytes but completes no chunk yields ``b""``.

    Returns:
        The bytes from the first thing that is not a whole plain data chunk once it arrived
        (the last chunk, an extension, a malformed chunk), for h11; or, when the peer closed,
        what is left, which is empty at a chunk boundary: ``b""`` tells h11 the stream ended.
    """
    pos = 0
    next_read = 0.0  # when the next read may be made (see READ_INTERVAL)
    have_read = False
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
        del buf[:pos]  # before the yield: a reader that stops here finds in buf what is not handed over
        pos = 0
        if parts or (have_read and not stop):  # b"" after a read: the reader sees bytes arrive (a chunk trickled in)
            yield b"".join(parts)
        if stop:
            return bytes(buf)
        wait = next_read - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        with mapped():  # httpcore's errors as httpx raises them
            data = read()
        have_read = True
        next_read = time.monotonic() + READ_INTERVAL if len(data) < READ_SIZE // 2 else 0.0
        if not data:
            return bytes(buf)  # the peer closed: h11 reads the end again and says what it was
        buf += data
