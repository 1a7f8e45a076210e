"""A save's commit message as git stores it: a subject line and ``Key: value`` trailers.

The value only; what goes into it (subjects, trailers) is derived in :mod:`gitsessions.rules`,
which re-exports :class:`CommitMessage`.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .rules import Trailers

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
        from .rules import Trailers  # rules builds on this module

        return Trailers.parse(self.trailers)
