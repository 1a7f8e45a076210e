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
        timeout: seconds a remote may stay silent before a request to it fails.
    """

    username: str | None
    password: str | None
    ssh_command: str | None
    timeout: float


@dataclass
class PullReport:
    """What a pull did, per session ref (the rule: README "Sync", :mod:`.sync`).

    Attributes:
        created: sessions new here (``archive/<name>`` for an archived one).
        fast_forwarded: ``(id, old commit, new commit)`` (``archive/<name>`` for an archived one).
        forks: ``(id, fork id, local commit)``: the session diverged; the remote's side kept
            the name and the local turns are in the fork.
        made_twice: ids of ``forks`` whose two sides share no save: the id was made on both
            machines (not a divergence of one session).
        came_back: ``(id, kept in)``: created here from the remote, though renamed or archived
            here (into ``kept in``) since the base: it gained turns there, so both are kept.
        beside: ``(id, old id)``: created here, ``old id`` renamed there, while ``old id``
            gained turns here (those stay in ``old id``): both are kept.
        dropped: ``(ref, kept in)``: renamed, archived or restored on the other side, so the
            ref went here too; ``kept in`` is the ref that holds its commits now.
        deferred: ``(id, why)``: not moved because a live writer holds it or a crashed turn
            waits in its journal; the next sync does it.
        failed: ``(id, why)``: could not be synced (an id clash...).
        skipped: ``(ref, why)``: the remote's refs that are no sessions.
        unchanged: session refs already up to date (or ahead here).
    """

    created: list[str] = field(default_factory=list)
    fast_forwarded: list[tuple[str, str, str]] = field(default_factory=list)
    forks: list[tuple[str, str, str]] = field(default_factory=list)
    made_twice: list[str] = field(default_factory=list)
    came_back: list[tuple[str, str]] = field(default_factory=list)
    beside: list[tuple[str, str]] = field(default_factory=list)
    dropped: list[tuple[str, str]] = field(default_factory=list)
    deferred: list[tuple[str, str]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    unchanged: int = 0

    def changed(self) -> bool:
        """True when the pull moved a session ref, or has one to report (strangers aside)."""
        return bool(self.created or self.fast_forwarded or self.forks or self.dropped or self.deferred
                    or self.failed)


@dataclass
class PushReport:
    """What a push did, per session ref.

    Attributes:
        pushed: refs sent (created or fast-forwarded there).
        deleted: ``(ref, kept in)``: refs removed there because they were renamed, archived or
            restored here; ``kept in`` holds their commits on the remote.
        unchanged: refs the remote has as here.
        behind: refs the remote has newer saves of (a pull brings them; no failure).
        diverged: refs both sides gained saves of (a pull or sync resolves them).
        moved: refs the remote changed since the fetch this push was planned on (sync runs
            another round).
        failed: ``(ref, why)``: refused, in the server's words.
        kept_there: ``(ref, kept in)``: refs renamed, archived or restored here that the remote
            refused to delete (``receive.denyDeletes``): the old name stays there, its saves
            are in ``kept in``; a sync does not ask again while the ref stays as it is there.
        skipped: ``(ref, why)``: local refs that are no sessions.
        connected: whether a push connection was opened at all.
        others_there: session refs the remote held outside the ones pushed (``only=``): a
            share to a repository that is not empty.
    """

    pushed: list[str] = field(default_factory=list)
    deleted: list[tuple[str, str]] = field(default_factory=list)
    unchanged: int = 0
    behind: list[str] = field(default_factory=list)
    diverged: list[str] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    kept_there: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    connected: bool = False
    others_there: int = 0


@dataclass
class SyncReport:
    """What ``sync`` did: every round's pull and push, merged (a line is reported once).

    Attributes:
        pull: the pulls of all rounds.
        push: the pushes of all rounds.
        rounds: how many pull+push rounds ran (more than one when the remote moved meanwhile).
    """

    pull: PullReport = field(default_factory=PullReport)
    push: PushReport = field(default_factory=PushReport)
    rounds: int = 0

    @property
    def ok(self) -> bool:
        """True when everything was synced or deferred for a live writer (exit status 0)."""
        return not (self.pull.failed or self.push.failed)

    def add(self, pull: PullReport, push: PushReport) -> None:
        """Merge one round: what was done adds up; what waits or was counted is the last round's."""
        self.rounds += 1
        mine, theirs = self.pull, pull
        mine.created += theirs.created
        mine.fast_forwarded += theirs.fast_forwarded
        mine.forks += theirs.forks
        mine.made_twice += theirs.made_twice
        mine.came_back += theirs.came_back
        mine.beside += theirs.beside
        mine.dropped += theirs.dropped
        mine.deferred, mine.skipped, mine.unchanged = theirs.deferred, theirs.skipped, theirs.unchanged
        self.push.pushed += push.pushed
        self.push.deleted += push.deleted
        self.push.kept_there += push.kept_there
        self.push.behind, self.push.diverged, self.push.moved = push.behind, push.diverged, push.moved
        self.push.skipped, self.push.unchanged = push.skipped, push.unchanged
        self.push.connected = self.push.connected or push.connected
        # a ref refused again in a later round is reported once, with the latest words
        for report, more in ((self.pull, pull.failed), (self.push, push.failed)):
            report.failed = list({**dict(report.failed), **dict(more)}.items())
