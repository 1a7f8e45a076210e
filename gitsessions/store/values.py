"""The values that cross the store seam, and the shapes of its journal, lock and hook runner.

Plain data: identity and storage keys (ref names, object ids) stay in the backend. Commit
ids are 40-digit lowercase hex (:data:`~gitsessions.rules.CommitId`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, TypedDict

from ..events import Event
from ..rules import CommitId, CommitMessage, SessionId
from .journal import JournalContents
from .lock import LockWait


@dataclass(frozen=True)
class Revision:
    """A resolved revision: a commit of a session.

    Attributes:
        session_id: the session named.
        commit: the commit id (hex).
        is_tip: True when it is the session's current tip.
    """

    session_id: SessionId
    commit: CommitId
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

    session_id: SessionId
    commit: CommitId
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

    commit: CommitId
    parents: list[CommitId]
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

    session_id: SessionId
    tip: CommitId
    time: int
    message: CommitMessage
    error: str | None = None


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


# -- what sync reports (see store/remote.py) -----------------------------------------------


class Credentials(TypedDict, total=False):
    """What the caller knows about reaching remotes (the CLI reads it from the environment).

    Attributes:
        username, password: HTTP credentials (else ``~/.git-credentials`` is consulted).
        ssh_command: the ssh program and options (else ``core.sshCommand``, else ``ssh``).
    """

    username: str | None
    password: str | None
    ssh_command: str | None


@dataclass
class PullReport:
    """What a pull did, per session.

    Attributes:
        created: sessions new here.
        fast_forwarded: ``(id, old commit, new commit)``.
        forks: ``(id, fork id, remote commit)`` for diverged sessions.
        skipped: ``(id, reason)`` (a live writer, an id clash...).
        unchanged: sessions already up to date or ahead here.
    """

    created: list[str] = field(default_factory=list)
    fast_forwarded: list[tuple[str, str, str]] = field(default_factory=list)
    forks: list[tuple[str, str, str]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    unchanged: int = 0


@dataclass
class PushReport:
    """What a push did: ``pushed`` refs, ``unchanged`` count, ``failed`` and ``skipped`` (no session) ``(ref, why)``."""

    pushed: list[str] = field(default_factory=list)
    unchanged: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
