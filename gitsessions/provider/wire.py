"""The chat-completions wire format as plain JSON: the request body, the streamed events, the reply.

The provider sends and reads these through the ``openai`` SDK's client without the SDK's
types: a request body encodes each message once for the whole conversation (the messages of
a request are those of the one before plus the new ones), and a streamed reply is read as
server-sent events whose data are JSON chunks, assembled into one :class:`Completion`.
"""

from __future__ import annotations

import json
import operator
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..log.events import clean_text


@dataclass(frozen=True)
class TextDelta:
    """A piece of reply text, in arrival order."""

    text: str


@dataclass
class Completion:
    """The assembled reply of one request.

    Attributes:
        content: the whole reply text.
        tool_calls: ``[{"id", "name", "arguments"}]`` in the model's order.
        finish_reason: the API's ``finish_reason`` (``stop``, ``tool_calls``, ``length``...).
        model: the model that answered, as the API names it.
        usage: the API's usage object (``prompt_tokens``, ``completion_tokens``,
            ``total_tokens``, ...) when the stream reported it.
    """

    content: str = ""
    tool_calls: list[dict[str, str]] = field(default_factory=list)
    finish_reason: str | None = None
    model: str | None = None
    usage: dict[str, Any] | None = None


#: The most bytes one server-sent event may take, from its first line to the blank line that
#: ends it: a chat-completions chunk is a few hundred bytes, a tool call's arguments sent
#: whole some MiB; an event past this is no reply being streamed.
MAX_EVENT_BYTES = 32 << 20


class EventTooLarge(ValueError):
    """One event of the stream grew past ``limit`` bytes."""

    def __init__(self, limit: int):
        super().__init__(f"one stream event over {limit >> 20} MiB")
        self.limit = limit


class NoWholeEvent(TimeoutError):
    """The body kept arriving, but no event ended for ``seconds`` seconds."""

    def __init__(self, seconds: float):
        super().__init__(f"no whole stream event for {seconds:g} s")
        self.seconds = seconds


def sse_data(pieces: Iterable[bytes], *, max_bytes: int = MAX_EVENT_BYTES, silence_s: float | None = None,
             clock: Callable[[], float] = time.monotonic) -> Iterator[bytes]:
    r"""Yield the ``data`` of each server-sent event in a byte stream (the SSE wire format).

    Lines end with ``\n``, ``\r\n`` or ``\r``; an event's ``data:`` lines are joined by ``\n``
    and it ends at a blank line. Other fields (``event``, ``id``, ``retry``) and comments are
    skipped; an event unfinished when the body ends is dropped, as the SDK's decoder does.
    The pieces of an unfinished event (or line) are joined once it ends, so a long one costs
    time in proportion to its length.

    Args:
        pieces: the response body as it arrives, cut anywhere (an empty piece: bytes came,
            none handed over yet).
        max_bytes: the most bytes one event may take, its line ends included.
        silence_s: seconds the body may go on arriving without an event ending (a comment,
            the keep-alive of SSE, ends one too), checked as each piece arrives; None: no
            limit. A body that stops arriving is the transport's read timeout to end.
        clock: the time in seconds, monotonic.

    Raises:
        EventTooLarge: an event grew past ``max_bytes``.
        NoWholeEvent: the body kept arriving for ``silence_s`` seconds and no event ended.
    """
    events = _Events(max_bytes)
    since = clock()  # when the last event ended
    for piece in pieces:
        if piece:
            yield from events.feed(piece)
        if piece and events.ended:
            since = clock()
        elif silence_s is not None and clock() - since > silence_s:
            raise NoWholeEvent(silence_s)
    yield from events.end()


class _Events:
    r"""The events of a body fed to it a piece at a time (:func:`sse_data`'s state).

    Until a ``\r`` is seen, the body is split at its blank lines (``\n\n``), the way servers
    write it; from then on, line by line.

    Attributes:
        ended: the last piece fed ended an event.
    """

    def __init__(self, max_bytes: int):
        self._max = max_bytes
        self._held: list[bytes] = []  # the unfinished event's pieces; line by line: the unfinished line's
        self._held_size = 0
        self._lines_size = 0  # line by line: the bytes of the unfinished event's whole lines
        self._data: list[bytes] = []  # line by line: the unfinished event's data
        self._lines_only = False
        self.ended = False

    def feed(self, piece: bytes) -> Iterator[bytes]:
        """Yield the data of the events ``piece`` ends.

        Raises:
            EventTooLarge: an event grew past the limit.
        """
        self.ended = False
        if self._lines_only or b"\r" in piece:
            self._lines_only = True
            yield from self._lines(piece)
        elif self._held and b"\n\n" not in piece and not (piece[:1] == b"\n" and self._held[-1][-1:] == b"\n"):
            self._hold(piece)  # no event ends in it: joined once one does
        else:
            events = (b"".join((*self._held, piece)) if self._held else piece).split(b"\n\n")
            rest = events.pop()
            self._held, self._held_size, self.ended = [rest] if rest else [], len(rest), bool(events)
            for event in events:
                if len(event) + 2 > self._max:  # (its blank line too)
                    raise EventTooLarge(self._max)
                if event.startswith(b"data: ") and b"\n" not in event:
                    yield event[6:]  # the usual event: one data line
                else:
                    yield from _event_data(event.split(b"\n"))
        if self._held_size + self._lines_size > self._max:
            raise EventTooLarge(self._max)

    def end(self) -> Iterator[bytes]:
        r"""Yield the data of an event the body's end ends (a lone ``\r`` ended its last line)."""
        if self._lines_only and self._held and self._held[-1].endswith(b"\r"):
            lines, self._held, self._held_size = b"".join(self._held).splitlines(keepends=True), [], 0
            yield from self._events_in(lines)

    def _hold(self, piece: bytes) -> None:
        self._held.append(piece)
        self._held_size += len(piece)

    def _lines(self, piece: bytes) -> Iterator[bytes]:
        held = self._held
        if held and b"\n" not in piece and b"\r" not in piece and held[-1][-1:] != b"\r":
            self._hold(piece)  # no line ends in it
            return
        lines = (b"".join((*held, piece)) if held else piece).splitlines(keepends=True)
        # A line is whole once its end arrived; a lone \r may still be followed by \n.
        rest = lines.pop() if lines and lines[-1][-1:] != b"\n" else b""
        self._held, self._held_size = [rest] if rest else [], len(rest)
        yield from self._events_in(lines)

    def _events_in(self, lines: list[bytes]) -> Iterator[bytes]:
        """Yield the data of the events whole ``lines`` (each with its end) end."""
        for line in lines:
            self._lines_size += len(line)
            if self._lines_size > self._max:
                raise EventTooLarge(self._max)
            line = line.rstrip(b"\r\n")
            if not line:
                self.ended, self._lines_size = True, 0
                if self._data:
                    yield self._data[0] if len(self._data) == 1 else b"\n".join(self._data)
                    self._data = []
            elif line.startswith(b"data:"):
                self._data.append(_field_value(line))


def _field_value(line: bytes) -> bytes:
    """The value of a field's line: after the colon and one space, if there is one."""
    at = line.index(b":") + 1
    return line[at + 1:] if line[at:at + 1] == b" " else line[at:]


def _event_data(lines: list[bytes]) -> Iterator[bytes]:
    """The data of the events in ``lines`` (no line ends; the last one ends at a blank line)."""
    data: list[bytes] = []
    for line in [*lines, b""]:
        if not line:
            if data:
                yield b"\n".join(data)
                data = []
        elif line.startswith(b"data:"):
            data.append(_field_value(line))


def _without_none(value: Any) -> Any:
    """``value`` with the ``None`` entries of every object left out (the API's ``usage``)."""
    if isinstance(value, dict):
        return {k: _without_none(v) for k, v in value.items() if v is not None}
    return value


class Reply:
    """The reply being assembled from chat-completions chunks (plain JSON objects).

    Attributes:
        done: the :class:`Completion` so far (model, usage, finish reason).
        parts: reply text yielded so far.
        held: a high surrogate waiting for its pair in the next chunk.
        chunks: chunks taken.
        ended: the stream's closing ``data: [DONE]`` arrived.
    """

    def __init__(self, model: str):
        self.done = Completion(model=model)
        self.parts: list[str] = []
        self.held = ""
        self.chunks = 0
        self.ended = False
        self._calls: dict[int, dict[str, list[str]]] = {}  # each part's fragments, joined at the end

    def take(self, chunk: Any) -> str | None:
        """Take one chunk; return its reply text ("" for none), or None for no chunk at all."""
        choices = chunk.get("choices") if isinstance(chunk, dict) else None
        if not isinstance(choices, list):
            return None
        self.chunks += 1
        done = self.done
        model, usage = chunk.get("model"), chunk.get("usage")
        if model and model != done.model:
            done.model = str(model)
        if isinstance(usage, dict):
            done.usage = _without_none(usage)
        out = ""
        for choice in choices:
            delta = choice.get("delta") if isinstance(choice, dict) else None
            if isinstance(delta, dict):
                content = delta.get("content")
                if content and isinstance(content, str):
                    out += self._text(content)
                if delta.get("tool_calls"):
                    for tc in delta["tool_calls"]:
                        if isinstance(tc, dict):
                            self._call(tc)
            if isinstance(choice, dict) and choice.get("finish_reason"):
                done.finish_reason = str(choice["finish_reason"])
        return out

    def _text(self, content: str) -> str:
        """Return ``content`` as well-formed text to show and keep.

        A surrogate pair split across two chunks is joined, a lone surrogate becomes U+FFFD
        (it cannot be printed or saved).
        """
        text, self.held = self.held + content if self.held else content, ""
        if not text.isascii():  # (ASCII, the usual text, holds no surrogate)
            if "\ud800" <= text[-1] <= "\udbff":
                text, self.held = text[:-1], text[-1]
            text = clean_text(text)
        if text:
            self.parts.append(text)
        return text

    def _call(self, tc: dict[str, Any]) -> None:
        """Add one streamed fragment of a tool call (its id, name and arguments come in pieces)."""
        index = tc.get("index")
        slot = self._calls.setdefault(index if isinstance(index, int) else len(self._calls),
                                      {"id": [], "name": [], "arguments": []})
        if tc.get("id"):
            slot["id"] = [str(tc["id"])]
        function = tc.get("function")
        if isinstance(function, dict):
            if function.get("name"):
                slot["name"].append(str(function["name"]))
            if function.get("arguments"):
                slot["arguments"].append(str(function["arguments"]))

    def completion(self) -> Completion:
        """The assembled :class:`Completion` (tool calls in index order, missing ids filled in)."""
        done = self.done
        done.content = "".join(self.parts)
        calls = [{part: "".join(pieces) for part, pieces in self._calls[index].items()}
                 for index in sorted(self._calls)]
        done.tool_calls = [{**call, "id": call["id"] or f"call_{i}"} for i, call in enumerate(calls)]
        return done


_decoder = json.JSONDecoder()


def decode_chunk(data: bytes) -> Any:
    """Parse an event's data as JSON, as ``json.loads`` does, with less work per chunk.

    Raises:
        ValueError: not UTF-8, or not JSON.
    """
    text = data.decode("utf-8")
    try:
        value, end = _decoder.raw_decode(text)  # no look for white space around it
    except ValueError:
        end = -1
    return value if end == len(text) else _decoder.decode(text)  # the rare case: spaces, or an error


def _dumps(value: Any) -> bytes:
    # As the SDK encodes a body: compact, UTF-8, no NaN.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")


class RequestEncoder:
    """Encodes the JSON bodies of one conversation's requests, each message once.

    Every request of a chat sends the whole transcript again: the messages of the request
    before (the same objects, as :func:`gitsessions.log.transcript.derive_messages` extends its
    list) and a few new ones. The encoding of the messages the last request began with is
    kept, and the part of it that the next request begins with again is sent as it is; the
    rest is encoded. A message is the same when it is the same object (messages are read,
    never changed, on their way to the model) or, for a few (a system prompt built anew for
    each request), an equal one.
    """

    _EQUAL_CHECKS = 4  # how many equal, not identical, messages are looked at before encoding the rest

    def __init__(self) -> None:
        self._messages: list[Mapping[str, Any]] = []
        self._parts: list[bytes] = []
        self._joined = bytearray()  # b",".join(self._parts), grown in place

    def _common(self, messages: Sequence[Mapping[str, Any]]) -> int:
        """How many of ``messages`` begin as the last request's did."""
        last, n = self._messages, min(len(messages), len(self._messages))
        if n == len(last) and last == messages[:n]:  # the usual case, at C speed (identity first, then ==)
            return n
        at, checks = 0, self._EQUAL_CHECKS
        while at < n:
            same = list(map(operator.is_, messages[at:n], last[at:n]))
            if all(same):
                return n
            at += same.index(False)
            if checks == 0 or messages[at] != last[at]:
                return at
            at, checks = at + 1, checks - 1
        return at

    def body(self, fields: dict[str, Any], messages: Sequence[Mapping[str, Any]]) -> bytes:
        """The body ``{**fields, "messages": messages}`` as JSON bytes.

        Args:
            fields: the other members of the request (``model``, ``stream``, ``tools``...).
            messages: the chat-completions messages.

        Raises:
            TypeError, ValueError: something in them is not plain JSON.
        """
        common = self._common(messages)
        new = [_dumps(m) for m in messages[common:]]
        if common == len(self._parts):  # the conversation went on: add the new messages' bytes
            if new:
                self._joined += b"," + b",".join(new) if common else b",".join(new)
            self._parts += new
        else:
            self._parts = self._parts[:common] + new
            self._joined = bytearray(b",".join(self._parts))
        self._messages = list(messages)
        rest = _dumps(fields)
        return b"".join((b'{"messages":[', self._joined, b"]," + rest[1:] if len(rest) > 2 else b"]}"))
