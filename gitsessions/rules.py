"""The session rules, each written once: ids, the commit message format and its trailers.

Pure values and functions (no I/O): the store, the services and the CLI all take these rules
from here. Where a rule comes from: design.md, "On disk" (ids, subject, trailers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import NewType

from .errors import InvalidSessionId

#: A session id (the branch ``refs/heads/<id>``), checked by :func:`check_session_id`.
SessionId = NewType("SessionId", str)
#: A commit id: 40 lowercase hex digits.
CommitId = NewType("CommitId", str)

#: Session id rule (design.md, "On disk").
SESSION_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


def check_session_id(session_id: str) -> SessionId:
    """Return ``session_id`` if it follows the id rules.

    Raises:
        InvalidSessionId: it does not match ``^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$`` or is ``HEAD``.
    """
    if not isinstance(session_id, str) or not SESSION_ID_RE.match(session_id):
        raise InvalidSessionId(str(session_id), "not allowed")
    if session_id.upper() == "HEAD":
        raise InvalidSessionId(session_id, "HEAD is reserved by git")
    return SessionId(session_id)


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
                if sep and re.match(r"^[A-Za-z][A-Za-z0-9-]*$", key):
                    trailers[key] = value.strip()
        return cls(subject, trailers)


