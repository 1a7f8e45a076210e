"""The values that cross the store seam, and the shapes of its journal, lock and hook runner.

Plain data: identity and storage keys (ref names, object ids) stay in the backend. Commit
ids are 40-digit lowercase hex (:data:`~gitsessions.ids.CommitId`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from ..ids import CommitId, SessionId
from ..log.commits import CommitMessage
from ..log.events import Event
from .journal import JournalContents
from .lock import LockWait


@dataclass(frozen=True)
class Revision:
    """A resolved revision: a commit of a session.

    Attributes:
        session_id: the session named.
        commit: the commit id (hex).
        is_tip: True when it is the session's current tip.
        note: a warning for the user about what it names (``work@{yesterday}`` before the reflog
            began names the oldest state it recorded, as git warns), else None.
    """

    session_id: SessionId
    commit: CommitId
    is_tip: bool
    note: str | None = None


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

    session_id: SessionId
    commit: CommitId
    header: dict
    events: list[Event]
    raw: bytes


@dataclass(frozen=True)
class ReflogEntry:
    """One move of a session's ref, as git's reflog records it (``logs/refs/heads/<id>``).

    Attributes:
        old: the commit the ref held before (None when the move created it).
        new: the commit it held after (None when the move deleted it).
        who: the committer line (``Name <email>``).
        time: when, epoch seconds.
        tz_offset: the mover's UTC offset, seconds.
        reason: the message (``commit: turn 3: ...``, ``Branch: renamed a to b``); may be empty.
    """

    old: CommitId | None
    new: CommitId | None
    who: str
    time: int
    tz_offset: int
    reason: str


@dataclass(frozen=True)
class CommitInfo:
    """One save as ``gs log`` shows it.

    Attributes:
        commit: commit id (hex).
        parents: parent commit ids.
        time: commit time, epoch seconds.
        tz_offset: the committer's UTC offset, seconds.
        message: the parsed commit message.
        author_time: the author date, epoch seconds: when it was said (an imported turn's
            original time); None: the commit time.
        author_tz: the author's UTC offset, seconds (None: ``tz_offset``).
    """

    commit: CommitId
    parents: list[CommitId]
    time: int
    tz_offset: int
    message: CommitMessage
    author_time: int | None = None
    author_tz: int | None = None

    @property
    def said(self) -> tuple[int, int]:
        """``(epoch s, UTC offset s)`` of when it was said: the author date (``gs log``'s Date, as git's)."""
        if self.author_time is None:
            return self.time, self.tz_offset
        return self.author_time, self.tz_offset if self.author_tz is None else self.author_tz


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

    session_id: SessionId
    tip: CommitId
    time: int
    message: CommitMessage
    error: str | None = None


@dataclass(frozen=True)
class MoveEnded:
    """A move of a session a killed process left half done, and how the next command ended it.

    Attributes:
        kind: ``rename``, ``archive`` or ``restore``.
        src: the session (or archive name) it moved.
        dst: where to.
        outcome: ``completed`` (the new name holds it, the old one is gone), ``taken back``
            (nothing had moved: it is under its old name) or ``both kept`` (the old name was
            saved to meanwhile: each name holds its saves).
    """

    kind: str
    src: str
    dst: str
    outcome: str


@dataclass(frozen=True)
class Healed:
    """What a look for the leftovers of killed processes found and mended (``GitStore.heal``).

    Attributes:
        cleared: files writers that were killed left half done, removed (paths in the repo).
        moves: moves of sessions they left half done, ended.
    """

    cleared: list[str] = field(default_factory=list)
    moves: list[MoveEnded] = field(default_factory=list)


class TurnJournal(Protocol):
    """The write-ahead journal of one session's turn in progress (see :mod:`.journal`)."""

    def exists(self) -> bool:
        """Return True when the journal holds a turn (in progress or orphaned)."""
        ...

    def begin(self, base: str | None, header: dict | None) -> None:
        """Start a fresh journal for a turn building on ``base``."""
        ...

    def append_event(self, event: Event, sync: bool = True) -> None:
        """Write one complete event."""
        ...

    def append_delta(self, text: str) -> None:
        """Write streamed reply text as it arrives."""
        ...

    def sync(self) -> None:
        """Make what was written durable (as an event written with ``sync`` is)."""
        ...

    def drop_last(self) -> None:
        """Cut off the last record written (a turn taken back before it began)."""
        ...

    def close(self) -> None:
        """Stop writing; the journal stays."""
        ...

    def clear(self) -> None:
        """Remove the journal (its turn was committed)."""
        ...

    def read(self) -> JournalContents | None:
        """Read the journal back; None when there is none."""
        ...


class WriterLock(Protocol):
    """The one-writer-per-session lock (see :mod:`.lock`)."""

    @property
    def held(self) -> bool:
        """True while this object holds the lock."""
        ...

    def holder(self) -> str:
        """Describe who holds the lock."""
        ...

    def writing(self) -> str | None:
        """The id the holder writes: this one, or it in another case (None: unknown)."""
        ...

    def try_acquire(self) -> bool:
        """Take the lock if free; return whether it is now held."""
        ...

    def acquire(self, wait: LockWait | None = None) -> WriterLock:
        """Take the lock, waiting as long as ``wait`` says, or raise :class:`~gitsessions.errors.SessionLocked`."""
        ...

    def release(self) -> None:
        """Release the lock (idempotent)."""
        ...

    def __enter__(self) -> WriterLock: ...

    def __exit__(self, *exc: object) -> None: ...


class HookRunner(Protocol):
    """What the store calls around each commit it builds (see :class:`CommitHooks`)."""

    def before(self, session_id: str, message: bytes, session_file: bytes | Callable[[], bytes],
               new_events: bytes, action: str = "save") -> bytes:
        """Run the hooks that may refuse or edit a commit; return the message to commit."""
        ...

    def after(self, session_id: str, commit: str) -> str | None:
        """Run the hooks that follow a commit; return a warning when one failed."""
        ...


class NoHooks:
    """The runner of a store that runs no hooks (a library user, a clone being built)."""

    def before(self, session_id: str, message: bytes, session_file: bytes | Callable[[], bytes],
               new_events: bytes, action: str = "save") -> bytes:
        """Return ``message`` unchanged."""
        return message

    def after(self, session_id: str, commit: str) -> str | None:
        """Do nothing."""
        return None
