"""Plain text helpers: one line of a text, a cut, a code fence, a match and its context.

Pure functions of strings (no terminal, no git), shared by the renderings, the search and
the imports; and the words every transcript view uses for a turn's parts (the chat's recap,
``gs show``, the compact rendering of ``gs log -p``), so they read the same everywhere.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

#: Said once after a reply whose text held a secret: the screen showed it, the session keeps it replaced.
REDACTED_NOTE = ("a secret in the reply was replaced by [REDACTED:...] in what is saved; the screen showed it "
                 "as the model wrote it")


def fold(text: str) -> str:
    """Return ``text`` on one line: every run of whitespace (newlines too) becomes one space."""
    return " ".join(text.split())


#: A terminal's escape sequences: CSI (colours, cursor moves), OSC (titles, links; ended by BEL or ST), the
#: others (a charset, a reset) and the one-byte CSI.
_TERMINAL_ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[ -/]*[0-~]"
                              r"|\x9b[0-?]*[ -/]*[@-~]")


def without_escapes(text: str) -> str:
    """Return ``text`` without the terminal escape sequences in it (the styling a tool gave its own output)."""
    return _TERMINAL_ESCAPE.sub("", text) if "\x1b" in text or "\x9b" in text else text


def clip(text: str, limit: int) -> str:
    """Return ``text`` cut to ``limit`` characters, ending in ``…`` when cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def elide(text: str, limit: int) -> str:
    """Return ``text`` in at most ``limit`` characters, its middle replaced by ``…`` when cut.

    For names whose both ends tell them apart (``claude-code-3f2a…91bc-fork``), where :func:`clip`
    would keep the common start alone.
    """
    if len(text) <= limit:
        return text
    if limit <= 1:
        return "…"[:limit]
    head = limit // 2
    tail = limit - 1 - head
    return text[:head] + "…" + (text[-tail:] if tail else "")


def cut_words(text: str, limit: int) -> str:
    """Return ``text`` cut to ``limit`` characters at a word boundary, ending in ``…`` when cut.

    A first word longer than the limit is cut within it (as :func:`clip` cuts).
    """
    if len(text) <= limit:
        return text
    if limit <= 1:
        return "…"[:limit]
    room = text[: limit - 1]
    if text[limit - 1].isspace():  # the room ends with a whole word
        return room.rstrip() + "…"
    space = room.rfind(" ")
    return (room[:space].rstrip() if space > 0 else room) + "…"


def fence(text: str, info: str = "") -> str:
    """Return ``text`` in a markdown code fence longer than any backtick run inside it.

    Args:
        text: the fenced text (its own fences stay inside).
        info: the info string after the opening fence (a language: ``json``).
    """
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    bar = "`" * max(3, longest + 1)
    return f"{bar}{info}\n{text}\n{bar}"


def snippet(text: str, start: int, end: int, context: int = 40) -> str:
    """Return ``text[start:end]`` with ``context`` characters either side, on one line.

    Newlines (and every whitespace run) are folded to one space; ``…`` marks a cut.
    """
    lo, hi = max(0, start - context), min(len(text), end + context)
    head = "…" if lo > 0 else ""
    tail = "…" if hi < len(text) else ""
    return head + fold(text[lo:hi]) + tail


def find_folded(text: str, needle_folded: str) -> tuple[int, int] | None:
    """Find ``needle_folded`` (already casefolded) in ``text`` ignoring case.

    Returns:
        ``(start, end)`` indexes into ``text`` itself (casefolding may change lengths, as
        ``ß`` -> ``ss``), or None.
    """
    if not needle_folded:
        return None
    flat = text.casefold()  # casefolding is per character, and no character folds to nothing:
    if len(flat) == len(text):  # so at the same length, every index of flat is one of text
        pos = flat.find(needle_folded)
        return None if pos < 0 else (pos, pos + len(needle_folded))
    folded: list[str] = []
    origin: list[int] = []  # index in text of each folded character
    for i, ch in enumerate(text):
        f = ch.casefold()
        folded.append(f)
        origin.extend([i] * len(f))
    flat = "".join(folded)
    pos = flat.find(needle_folded)
    if pos < 0:
        return None
    last = pos + len(needle_folded) - 1
    return origin[pos], origin[last] + 1


def case_variant(name: str, known: Iterable[str]) -> str | None:
    """The one of ``known`` that is ``name`` in another case, else None: what "did you mean" names.

    Ids may not differ only by case (case-insensitive file systems), so a name that matches one
    ignoring case means that one; saying so beats a list (or "already exists").

    Args:
        name: what the user typed.
        known: the ids (or archived names) there are.
    """
    folded = name.casefold()
    return next((k for k in known if k != name and k.casefold() == folded), None)


def chat_prompt(session_id: str) -> str:
    """Return the chat's prompt for ``session_id``: ``<session> › `` (the early prompt draws it too)."""
    return f"{session_id} › "


#: Said after a reply the stream cut short (an ``assistant/message`` with ``interrupted``).
INTERRUPTED = "[interrupted]"


def turn_rule(turn: int) -> str:
    """The line that heads turn ``turn`` in a transcript: ``── turn N ──``."""
    return f"── turn {turn} ──"


def tool_line(name: object, arguments: str) -> str:
    """A tool call in a transcript: ``⚙ name(arguments)`` (the arguments as given: clip them first)."""
    return f"⚙ {name}({arguments})"


def turn_ended(reason: object, error: object = None) -> str:
    """The note of a turn that did not complete: ``(turn ended: REASON[: ERROR])``."""
    return f"(turn ended: {reason}" + (f": {error}" if error else "") + ")"


def iso_time(epoch_s: int, tz_offset_s: int = 0) -> str:
    """Return ``epoch_s`` as ISO 8601 in the given UTC offset (seconds)."""
    import datetime as dt  # here: the chat's early prompt imports this module

    tz = dt.timezone(dt.timedelta(seconds=tz_offset_s)) if tz_offset_s else dt.timezone.utc
    return dt.datetime.fromtimestamp(epoch_s, tz).isoformat()


def plural(n: int, word: str, words: str | None = None) -> str:
    """``1 turn``, ``2 turns``: ``n`` and ``word``, with an ``s`` unless n is 1 (or ``words``: ``2 processes``)."""
    return f"{n} {word if n == 1 else words or word + 's'}"


def dumps(obj: Any) -> str:
    """Return pretty, stable JSON (UTF-8 text, not ASCII-escaped)."""
    import json  # here: the chat's early prompt imports this module

    return json.dumps(obj, ensure_ascii=False, indent=2)


def iterdumps(obj: Any, piece: int = 1 << 16) -> Iterator[str]:
    """Yield :func:`dumps` of ``obj`` in pieces of about ``piece`` characters, joined: the same text.

    For output that is written as it is made: the JSON of a 100 MB session is never one
    string (with each message's text twice, in ``events`` and ``messages``, it was 4x the
    log, and encoding it for the terminal once more).
    """
    import json

    buf: list[str] = []
    size = 0
    for chunk in json.JSONEncoder(ensure_ascii=False, indent=2).iterencode(obj):
        buf.append(chunk)
        size += len(chunk)
        if size >= piece:
            yield "".join(buf)
            buf, size = [], 0
    if buf:
        yield "".join(buf)
