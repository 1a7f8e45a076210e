"""A save's commit message as git stores it: a subject line and ``Key: value`` trailers.

The value and its typed trailers only; what goes into it (subjects, trailers) is derived in
:mod:`gitsessions.rules`, which re-exports :class:`CommitMessage` and :class:`Trailers`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .rules import Lineage

_KEY_RE = re.compile(r"[A-Za-z][A-Za-z0-9-]*")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def _one_line(text: str) -> str:
    """Fold ``text`` to one line without control characters (git fsck refuses NUL in commits)."""
    return " ".join(_CONTROL.sub(" ", text).split())


@dataclass(frozen=True)
class CommitMessage:
    """A save's commit message: a subject line and ``Key: value`` trailers (git's format)."""

    subject: str
    trailers: dict[str, str] = field(default_factory=dict)

    def encode(self) -> bytes:
        """Return the message as git stores it: subject, blank line, trailers, final newline."""
        subject = _one_line(self.subject) or "save"
        if len(subject) > 72:
            subject = subject[:71] + "…"
        lines = [subject, ""]
        for key, value in self.trailers.items():
            lines.append(f"{key}: {_one_line(str(value))}")
        return ("\n".join(lines).rstrip("\n") + "\n").encode("utf-8", "replace")

    @classmethod
    def decode(cls, raw: bytes) -> CommitMessage:
        """Parse a commit message written by :meth:`encode` (or any git commit message)."""
        text = raw.decode("utf-8", "replace")
        parts = text.split("\n\n")
        subject = parts[0].strip()
        trailers: dict[str, str] = {}
        if len(parts) > 1:
            for line in parts[-1].splitlines():
                key, sep, value = line.partition(": ")
                if sep and _KEY_RE.fullmatch(key):
                    trailers[key] = value.strip()
        return cls(subject, trailers)

    @functools.cached_property
    def fields(self) -> Trailers:
        """The typed view of :attr:`trailers` (see :class:`Trailers`), parsed on first use."""
        return Trailers.parse(self.trailers)


#: Longest ``Title`` trailer, characters (the title itself is unbounded).
TITLE_TRAILER_MAX = 200


_EVENTS_RE = re.compile(r"(\d+)-(\d+)")


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


@dataclass(frozen=True)
class Trailers:
    """The trailers gs writes, typed (so ``gs list`` and ``gs log`` never read blobs).

    Attributes:
        session: ``Session``: the session the commit was made in.
        turn: ``Turn``: the number of the last turn started (0 before the first).
        model: ``Model``: the model of the last reply saved in this commit (or that a ``session/model`` chose).
        tokens: ``Tokens``: the prompt and completion tokens of the requests whose replies this commit saved.
        events: ``Events: a-b``: the seq range (inclusive) this commit added.
        messages: ``Messages``: how many messages the model would see.
        title: ``Title``: the session title (at most :data:`TITLE_TRAILER_MAX` characters).
        forked_from: ``Forked-From``: the lineage, carried by every commit of a fork.
        imported_from: ``Imported-From``: the file an import read.
    """

    session: str | None = None
    turn: int | None = None
    model: str | None = None
    tokens: int | None = None
    events: tuple[int, int] | None = None
    messages: int | None = None
    title: str | None = None
    forked_from: Lineage | None = None
    imported_from: str | None = None

    @classmethod
    def parse(cls, trailers: Mapping[str, str]) -> Trailers:
        """Read the typed view of a commit's trailers; a malformed value reads as missing."""
        get = trailers.get
        events = None
        m = _EVENTS_RE.fullmatch(get("Events", ""))
        if m and int(m.group(2)) >= int(m.group(1)):
            events = (int(m.group(1)), int(m.group(2)))
        lineage = None
        if forked := get("Forked-From"):
            from .rules import Lineage  # rules builds on this module

            try:
                lineage = Lineage.parse(forked)
            except ValueError:
                pass
        return cls(session=get("Session") or None, turn=_int(get("Turn")), model=get("Model") or None,
                   tokens=_int(get("Tokens")), events=events, messages=_int(get("Messages")),
                   title=get("Title") or None, forked_from=lineage, imported_from=get("Imported-From") or None)

    def format(self) -> dict[str, str]:
        """Return the trailers as git writes them, in gs's order (missing values left out)."""
        out: dict[str, str] = {}
        if self.session is not None:
            out["Session"] = self.session
        if self.turn is not None:
            out["Turn"] = str(self.turn)
        if self.model:
            out["Model"] = self.model
        if self.tokens is not None:
            out["Tokens"] = str(self.tokens)
        if self.events is not None:
            out["Events"] = f"{self.events[0]}-{self.events[1]}"
        if self.messages is not None:
            out["Messages"] = str(self.messages)
        if self.title:
            out["Title"] = self.title[:TITLE_TRAILER_MAX]
        if self.forked_from is not None:
            out["Forked-From"] = str(self.forked_from)
        if self.imported_from:
            out["Imported-From"] = self.imported_from
        return out
