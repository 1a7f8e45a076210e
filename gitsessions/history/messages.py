"""The messages search reads in a log: which events hold text, read the same way by the scan and the index.

:func:`read_messages` is the one reading of a ``session.jsonl`` that ``gs search``'s scan
(:mod:`.search`) and its index (:mod:`.search_index`) share, so both see the same messages.
"""

from __future__ import annotations

from collections.abc import Callable

from ..log.events import loads_line
from ..log.turns import turn_number

#: Event types search looks at: the role shown for each, and the field holding its text.
_SEARCHED = {"user/message": ("user", "content"), "assistant/message": ("assistant", "content"),
             "tool/result": ("tool", "content"), "compaction/summary": ("summary", "summary")}
#: How a log line without escapes names a type of :data:`_SEARCHED` (as it is written).
_MARKS = ('/message"', '"tool/result"', '"compaction/summary"')


def names_searched_type(line: str) -> bool:
    """Whether a log line without escapes is of a type search reads (seen in its text, unparsed)."""
    return any(mark in line for mark in _MARKS)


def read_messages(text: str, turn: int = 0, want: Callable[[str], bool] | None = None
                  ) -> tuple[list[tuple[int, int, str, str]], int]:
    """Read the searchable messages of a decoded ``session.jsonl``, or of lines appended to one.

    The one reading of a log that the scan and the index (:mod:`gitsessions.history.search_index`)
    share, so both see the same messages: a line is parsed when it is a ``turn/start`` (to
    number turns) or ``want`` accepts it; a line that is no event is skipped.

    Args:
        text: lines after the header, decoded (see :func:`body_text`).
        turn: the number of the turn the lines continue (0: the log's start).
        want: tells from a line's text whether to parse it (None: every line).

    Returns:
        ``(seq, turn, role, content)`` per user, assistant or tool message and per
        compaction summary (role ``summary``), in log order,
        and the number of the turn the lines end in.
    """
    out = []
    for line in text.split("\n"):
        # A line with an escape may spell "turn/start" otherwise (JSON allows "turn\/start"),
        # unless it plainly says it is a message.
        is_turn = '"turn/start"' in line or ("\\" in line and not names_searched_type(line))
        if not is_turn and want is not None and not want(line):
            continue
        try:
            obj = loads_line(line)  # well-formed text, also where the log holds an escaped lone surrogate
        except ValueError:
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("data"), dict):
            continue
        kind, data = obj.get("type"), obj["data"]
        if kind == "turn/start":
            turn = turn_number(data, turn)
            continue
        role, key = _SEARCHED.get(kind, (None, "")) if isinstance(kind, str) else (None, "")
        content = data.get(key)
        seq = obj.get("seq")
        if role is None or not isinstance(content, str) or not isinstance(seq, int):
            continue
        out.append((seq, turn, role, content))
    return out, turn


def body_text(raw: bytes) -> str:
    """The decoded lines of ``session.jsonl`` after its header, as :func:`messages` reads them."""
    text = raw.decode("utf-8", "replace")
    cut = text.find("\n")
    return "" if cut < 0 else text[cut + 1:]

