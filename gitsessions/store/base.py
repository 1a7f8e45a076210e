"""The persistence seam: what every session store offers, whatever keeps the bytes.

Values here are plain data; identity and storage keys (ref names, object ids) live in the
backend. Commit ids are 40-digit lowercase hex ``str``. Nothing here knows about models,
terminals or the environment.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass

from ..events import Event
from ..rules import CommitMessage


@dataclass(frozen=True)
class Revision:
    """A resolved revision: a commit of a session.

    Attributes:
        session_id: the session named.
        commit: the commit id (hex).
        is_tip: True when it is the session's current tip.
    """

    session_id: str
    commit: str
    is_tip: bool


@dataclass(frozen=True)
class Snapshot:
    """A session as of one commit.

    Attributes:
        session_id: the session (branch) it was read from.
        commit: the commit id it was read at.
        header: line 1 of ``session.jsonl``.
        events: the events, seq order.
        raw: the file's bytes exactly as stored.
    """

    session_id: str
    commit: str
    header: dict
    events: list[Event]
    raw: bytes


@dataclass(frozen=True)
class CommitInfo:
    """One save as ``gs log`` shows it.

    Attributes:
        commit: commit id (hex).
        parents: parent commit ids.
        time: commit time, epoch seconds.
        tz_offset: the committer's UTC offset, seconds.
        message: the parsed commit message.
    """

    commit: str
    parents: list[str]
    time: int
    tz_offset: int
    message: CommitMessage


@dataclass(frozen=True)
class SessionInfo:
    """One row of ``gs list``, read from the tip commit's trailers (no blob is read).

    Attributes:
        session_id: the id.
        tip: the tip commit (hex).
        time: tip commit time, epoch seconds.
        message: the tip's parsed commit message (trailers ``Turn``, ``Messages``, ``Title``...).
        error: set when the session could not be read (it is still listed).
    """

    session_id: str
    tip: str
    time: int
    message: CommitMessage
    error: str | None = None


class SessionStore(abc.ABC):
    """Where sessions live. Every backend passes the same contract test suite."""

    @abc.abstractmethod
    def list_sessions(self) -> list[SessionInfo]:
        """Return every session that has at least one save, sorted by id."""

    @abc.abstractmethod
    def tip(self, session_id: str) -> str | None:
        """Return the session's tip commit id, or None when it does not exist."""

    @abc.abstractmethod
    def find(self, session_id: str) -> str | None:
        """Return the existing id equal to ``session_id`` ignoring case, else None."""

    @abc.abstractmethod
    def load(self, session_id: str, commit: str | None = None) -> Snapshot:
        """Read a session at ``commit`` (default: its tip).

        Raises:
            SessionNotFound, CorruptSession, UnsupportedVersion.
        """

    @abc.abstractmethod
    def append(self, session_id: str, events: list[Event], message: CommitMessage, *,
               expected_tip: str | None, header: dict | None = None) -> str:
        """Save ``events`` after those at ``expected_tip`` as one commit; return its id.

        Args:
            session_id: the session.
            events: new events; their seq must continue the log exactly.
            message: the commit message.
            expected_tip: the tip the caller built on; None creates the session.
            header: the header, required when creating.

        Raises:
            InvalidEvent: seq not contiguous, or values that are not plain JSON.
            ConcurrentUpdate: the branch is no longer at ``expected_tip``.
            SessionExists: creating an id that exists (also differing only by case).
        """

    @abc.abstractmethod
    def log(self, session_id: str, start: str | None = None, limit: int | None = None) -> list[CommitInfo]:
        """Return the session's commits newest first (first-parent walk from ``start`` or the tip)."""

    @abc.abstractmethod
    def resolve(self, rev: str) -> Revision:
        """Resolve ``SESSION``, ``SESSION~N``, ``SESSION^`` or ``SESSION@COMMIT`` to a commit.

        Raises:
            BadRevision, SessionNotFound.
        """

    @abc.abstractmethod
    def branch_from(self, session_id: str, commit: str, message: CommitMessage) -> str:
        """Create session ``session_id`` starting at ``commit`` in O(1) (a fork); return its first commit.

        ``message`` comes ready from :func:`gitsessions.rules.commit_message` (kind ``fork``).

        Raises:
            SessionExists: the id is taken (also by case, or by an archived session).
        """

    @abc.abstractmethod
    def rename(self, old: str, new: str) -> None:
        """Rename a session; its history is unchanged.

        Raises:
            SessionNotFound, SessionExists, ConcurrentUpdate.
        """

    @abc.abstractmethod
    def archive(self, session_id: str) -> str:
        """Move a session out of the list (nothing is deleted); return the name to restore it by."""

    @abc.abstractmethod
    def restore(self, name: str, as_id: str | None = None) -> str:
        """Bring an archived session back (as ``as_id`` or its own name); return its id."""
