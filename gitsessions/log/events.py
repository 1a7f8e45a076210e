r"""Event and header types of ``session.jsonl``, their JSONL encoding, validation and text hygiene.

The format: UTF-8, ``\n`` line ends, one JSON object per line,
appended only. Line 1 is the header ``{"type": "session", "version": 1, "created": <epoch ms>,
...}``; every later line is an event ``{"seq": n, "time": <epoch ms>, "type": "<kind>/<name>",
"data": {...}}`` with ``seq`` contiguous from 0. An event type a reader does not know is an
error unless the event carries ``"ignorable": true``.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..errors import CorruptSession, InvalidEvent, UnsupportedVersion

#: The newest ``session.jsonl`` format version this code reads and the one it writes.
FORMAT_VERSION = 1

#: Event types this version understands.
KNOWN_TYPES = frozenset({
    "turn/start", "user/message", "step/start", "assistant/message", "tool/call", "tool/result",
    "step/end", "turn/end", "session/title", "session/fork", "session/undo", "compaction/summary",
    "session/system", "session/model", "session/options", "tool/permission",
})
#: Known types always written ignorable: a record beside the conversation an older gs may skip.
WRITTEN_IGNORABLE = frozenset({"tool/permission"})

#: ``turn/end`` reasons.
TURN_END_REASONS = frozenset({"completed", "aborted", "error", "interrupted", "max-steps"})

#: The ignorable event an import keeps a message in that gs does not send to the model
#: (a ``system`` message, a tool message that answers no call).
IMPORTED_MESSAGE = "import/message"


def now_ms() -> int:
    """Return the current time as epoch milliseconds (the unit of every ``time`` field)."""
    return time.time_ns() // 1_000_000


def clean_text(text: str) -> str:
    """Return ``text`` as well-formed Unicode: lone surrogates become U+FFFD.

    A lone surrogate (from a terminal, a model, or ``surrogateescape``-decoded bytes) cannot
    be encoded as UTF-8 and would break every later save or request.
    """
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        # Through UTF-16: a surrogate pair split into two code points becomes its character,
        # each lone surrogate exactly one U+FFFD (UTF-8 "replace" would give three per surrogate).
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def clean_value(value: Any, path: str = "data") -> Any:
    """Return a copy of ``value`` with every string cleaned by :func:`clean_text`.

    Args:
        value: a plain JSON value (dict with str keys, list, str, int, finite float, bool, None).
        path: where the value sits, for the error message.

    Returns:
        The cleaned value (tuples become lists).

    Raises:
        InvalidEvent: for anything that is not plain JSON (objects, NaN, non-str keys).
    """
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidEvent(f"{path} is {value!r}, which JSON cannot hold")
        return value
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise InvalidEvent(f"{path} has a key {k!r} that is not a string")
            out[clean_text(k)] = clean_value(v, f"{path}.{k}")
        return out
    if isinstance(value, (list, tuple)):
        return [clean_value(v, f"{path}[{i}]") for i, v in enumerate(value)]
    raise InvalidEvent(f"{path} is a {type(value).__name__}, not a plain JSON value")


#: A JSON escape of a UTF-16 surrogate (``\ud83d``): the only way a lone one gets into parsed text.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _well_formed(value: Any) -> Any:
    """Return a parsed JSON value with every string (keys too) cleaned by :func:`clean_text`."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_text(k): _well_formed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_well_formed(v) for v in value]
    return value


def loads_line(line: str) -> Any:
    r"""Parse one JSON line of a log; every string in it is well-formed Unicode.

    ``json.loads`` turns an escaped lone surrogate (``"\ud83d"``, written by another tool
    or by hand) into a string that cannot be encoded, which crashed every command showing
    it; here it becomes U+FFFD, as text entering a session does (:func:`clean_text`). Only
    lines holding such an escape pay for the walk.

    Args:
        line: the line without its ``\n``.

    Returns:
        The value.

    Raises:
        ValueError: the line is not JSON.
    """
    value = json.loads(line)
    return _well_formed(value) if _SURROGATE_ESCAPE.search(line) else value


def _dumps(obj: dict) -> bytes:
    return (json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n").encode(
        "utf-8"
    )


@dataclass(frozen=True, slots=True)  # slots: a log of 100,000 events holds 100,000 of them
class Event:
    """One line of the log after the header.

    Attributes:
        seq: position in the log, contiguous from 0.
        time: epoch milliseconds.
        type: ``"<kind>/<name>"``, one of :data:`KNOWN_TYPES` unless ``ignorable``.
        data: the payload, plain JSON.
        ignorable: readers that do not know ``type`` may skip it.
    """

    seq: int
    time: int
    type: str
    data: dict = field(default_factory=dict)
    ignorable: bool = False

    def to_dict(self) -> dict:
        """Return the event as the JSON object stored on its line."""
        obj: dict[str, Any] = {"seq": self.seq, "time": self.time, "type": self.type, "data": self.data}
        if self.ignorable:
            obj["ignorable"] = True
        return obj

    def encode(self) -> bytes:
        r"""Return the event's line: compact UTF-8 JSON plus ``\n``."""
        return _dumps(self.to_dict())


def make_event(seq: int, type: str, data: dict | None = None, *, time_ms: int | None = None,
               ignorable: bool = False) -> Event:
    """Build a validated, cleaned event.

    Args:
        seq: its position in the log.
        type: event type; must be known unless ``ignorable``.
        data: payload; strings are cleaned (lone surrogates -> U+FFFD).
        time_ms: epoch ms; now when omitted.
        ignorable: mark an extension event that older readers may skip (always for :data:`WRITTEN_IGNORABLE`).

    Returns:
        The event.

    Raises:
        InvalidEvent: unknown type, bad seq, or data that is not plain JSON.
    """
    if not isinstance(type, str) or "/" not in type:
        raise InvalidEvent(f"type {type!r} is not of the form kind/name")
    time_ms = now_ms() if time_ms is None else time_ms
    data = {} if data is None else data
    ignorable = ignorable or type in WRITTEN_IGNORABLE
    return Event(seq, time_ms, type, _checked(seq, type, data, time_ms, ignorable), ignorable)


def check_event(event: Event) -> None:
    """Refuse an event that :func:`parse_log` would later reject (the session would be unreadable).

    The store checks every event it is given with this, so an event built by hand (not by
    :func:`make_event`) cannot make a log unreadable; the rules are :func:`make_event`'s.

    Raises:
        InvalidEvent: a bad seq, an unknown type not marked ignorable, data that is not an
            object, a time that is not an integer, or a value that is not plain JSON.
    """
    _checked(event.seq, event.type, event.data, event.time, event.ignorable)


def _checked(seq: Any, type: Any, data: Any, time_ms: Any, ignorable: bool) -> dict:
    """Apply the event rules (one home for :func:`make_event` and :func:`check_event`); return clean data."""
    if not isinstance(seq, int) or isinstance(seq, bool) or seq < 0:
        raise InvalidEvent(f"seq {seq!r} is not a non-negative integer")
    if not isinstance(type, str) or (type not in KNOWN_TYPES and not ignorable):
        raise InvalidEvent(f"unknown event type {type!r} (mark it ignorable to store it)")
    if not isinstance(data, dict):
        raise InvalidEvent(f"data of {type} is a {data.__class__.__name__}, not an object")
    if not isinstance(time_ms, int) or isinstance(time_ms, bool):
        raise InvalidEvent(f"time {time_ms!r} of {type} is not an integer")
    return clean_value(data)  # raises InvalidEvent for NaN, objects, non-str keys


def make_header(session_id: str, *, created: int | None = None, **extra: Any) -> dict:
    """Build the header object (line 1 of ``session.jsonl``).

    Args:
        session_id: the id the session was created with (informational; the branch name rules).
        created: epoch ms; now when omitted.
        **extra: more header fields (``cwd``, ``generator``, ``forked_from``...), plain JSON.

    Returns:
        ``{"type": "session", "version": FORMAT_VERSION, "id": ..., "created": ..., **extra}``.
    """
    header = {"type": "session", "version": FORMAT_VERSION, "id": session_id,
              "created": now_ms() if created is None else created}
    header.update(clean_value(extra, "header"))
    return header


def encode_header(header: dict) -> bytes:
    r"""Return the header's line (compact UTF-8 JSON plus ``\n``)."""
    return _dumps(header)


def encode_log(header: dict, events: Iterable[Event]) -> bytes:
    """Return the whole ``session.jsonl`` for a header and its events."""
    return encode_header(header) + b"".join(e.encode() for e in events)


def missing_line_end(log: bytes | bytearray) -> bytes:
    r"""Return ``b"\n"`` when the log's last line has no line end (another tool wrote it), else ``b""``."""
    return b"\n" if log[-1:] not in (b"\n", b"") else b""


@dataclass
class ParsedLog:
    r"""A ``session.jsonl`` read back.

    Attributes:
        header: line 1.
        events: the events in seq order.
        dropped_tail: True when a blank last line was left out.
    """

    header: dict
    events: list[Event]
    dropped_tail: bool = False


#: One string per known event type, shared by every event of that type read from a log.
_TYPE_NAMES = {t: t for t in KNOWN_TYPES}


def _event_from_obj(obj: Any, session_id: str, lineno: int, expect_seq: int) -> Event:
    if not isinstance(obj, dict):
        raise CorruptSession(session_id, lineno, "line is not a JSON object")
    seq, typ, data, t = obj.get("seq"), obj.get("type"), obj.get("data", {}), obj.get("time")
    if not isinstance(seq, int) or isinstance(seq, bool):
        raise CorruptSession(session_id, lineno, "event has no integer seq")
    if seq != expect_seq:
        raise CorruptSession(session_id, lineno, f"seq {seq} where {expect_seq} was expected")
    if not isinstance(typ, str):
        raise CorruptSession(session_id, lineno, "event has no type")
    ignorable = obj.get("ignorable") is True
    if typ not in KNOWN_TYPES and not ignorable:
        raise CorruptSession(
            session_id, lineno,
            f"unknown event type {typ!r}; a newer gitsessions wrote it — upgrade gitsessions",
        )
    if not isinstance(data, dict):
        raise CorruptSession(session_id, lineno, "event data is not an object")
    if not isinstance(t, int) or isinstance(t, bool):
        raise CorruptSession(session_id, lineno, "event has no integer time")
    return Event(seq, t, _TYPE_NAMES.get(typ, typ), data, ignorable)


def _key_memo() -> json.JSONDecoder:
    """A JSON decoder whose objects share one string per distinct key (a decoder per log).

    ``json.loads`` makes a new string for every key of every line: in a log of 100,000
    events that is ``"content"``, ``"role"``, ``"turn"``... 100,000 times over, about a fifth
    of the parsed log's memory. Keys (and short string values) seen before are handed out
    again; duplicate keys keep the last value, as ``json.loads`` does.
    """
    memo: dict[str, str] = {}

    def shared_keys(pairs: list[tuple[str, Any]]) -> dict:
        # short string values too ("completed", a model's name, "function"): one each
        return {memo.setdefault(k, k): memo.setdefault(v, v) if v.__class__ is str and len(v) < 24 else v
                for k, v in pairs}

    return json.JSONDecoder(object_pairs_hook=shared_keys)


def parse_log(raw: bytes, session_id: str) -> ParsedLog:
    """Parse and validate a whole ``session.jsonl``.

    A blank last line is left out. A last line that is not JSON is damage like any other:
    a torn tail is expected only in a journal (which has its own reader,
    :mod:`gitsessions.store.journal`); in a committed log it means a torn write was
    committed, and dropping it without a word would let the next save lose it for good.

    One line at a time, each turned into its :class:`Event` at once, so what is held
    beside ``raw`` is the events alone (no list of lines, no list of parsed objects: each
    was a copy of the whole log). When several lines are damaged, the first line that is
    not JSON is reported before a bad header or event (every line is read first).

    Args:
        raw: the file's bytes (a BOM and CRLF line ends are tolerated).
        session_id: for error messages.

    Returns:
        The parsed log.

    Raises:
        CorruptSession: bad header, bad line, seq gap, unknown event type.
        UnsupportedVersion: header version newer than :data:`FORMAT_VERSION`.
    """
    pos = 3 if raw.startswith(b"\xef\xbb\xbf") else 0  # no copy of a 100 MB log to drop 3 bytes
    end_all = len(raw)
    if pos >= end_all:
        raise CorruptSession(session_id, 1, "empty file, no header")
    last_whole = raw.endswith(b"\n")
    decode = _key_memo().decode
    header: dict = {}
    events: list[Event] = []
    invalid: CorruptSession | UnsupportedVersion | None = None  # raised once every line is known to be JSON
    dropped = False
    lineno = 0
    while pos < end_all:
        lineno += 1
        end = raw.find(b"\n", pos)
        if end < 0:
            end = end_all
        line = raw[pos:end]
        pos = end + 1
        is_last = pos >= end_all
        if line.endswith(b"\r"):
            line = line[:-1]
        try:
            text = line.decode("utf-8")
            obj = decode(text)
            if _SURROGATE_ESCAPE.search(text):
                obj = _well_formed(obj)
        except (UnicodeDecodeError, ValueError) as exc:
            if is_last and lineno > 1 and not line.strip():
                dropped = True  # a blank last line holds nothing to lose
                break
            if is_last and not last_whole:
                raise CorruptSession(session_id, lineno, "the last line is cut off (no newline, not valid JSON): "
                                     "a torn write was committed") from None
            raise CorruptSession(session_id, lineno, f"not valid JSON ({exc.__class__.__name__})") from None
        if invalid is not None:
            continue
        try:
            if lineno == 1:
                header = _checked_header(obj, session_id)
            else:
                events.append(_event_from_obj(obj, session_id, lineno, lineno - 2))
        except (CorruptSession, UnsupportedVersion) as exc:
            invalid, events = exc, []
    if invalid is not None:
        raise invalid
    return ParsedLog(header, events, dropped)


def _checked_header(header: Any, session_id: str) -> dict:
    """Return line 1 when it is a session header this version reads.

    Raises:
        CorruptSession, UnsupportedVersion: no header or a version that is no number; a newer version.
    """
    if not isinstance(header, dict) or header.get("type") != "session":
        raise CorruptSession(session_id, 1, "line 1 is not a session header")
    version = header.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise CorruptSession(session_id, 1, f"header version {version!r} is not a number")
    if version > FORMAT_VERSION:
        raise UnsupportedVersion(session_id, version, FORMAT_VERSION)
    return header
