"""An in-memory session store: dicts, no git, no files.

It implements the primitives of :class:`~.base.SessionStore` and nothing else, so it proves
the seam (the contract suite runs against it unchanged) and gives service-level tests a
store that costs nothing to make. Commits are immutable values keyed by a SHA-1 of their
content, branches and archives are two dicts moved by compare-and-swap, journals are byte
buffers in the same record format as on disk, and a lock is held per store object (one
process). Everything is lost when the object goes.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConcurrentUpdate, CorruptSession
from ..ids import CommitId, SessionId, check_free, check_session_id, is_session_id
from ..log.commits import CommitMessage
from ..log.events import Event, missing_line_end
from .base import SessionStore
from .journal import Journal
from .lock import LockWait, acquire_within
from .values import CommitInfo


@dataclass(frozen=True)
class _Commit:
    parents: tuple[CommitId, ...]
    time: int
    tz_offset: int
    message: bytes
    raw: bytes
    author_time: int


class MemoryJournal(Journal):
    """A journal whose bytes live in the store's dict (same records as the file journal).

    Args:
        files: the store's journals, session id -> bytes.
        session_id: the session.
    """

    def __init__(self, files: dict[str, bytes], session_id: str):
        super().__init__(Path(f"{session_id}.jsonl"))
        self._files = files
        self._sid = session_id
        self._open = False

    def exists(self) -> bool:
        """Return True when the journal holds something."""
        return self._sid in self._files

    def _start(self) -> None:
        self._files[self._sid] = b""
        self._open = True

    def _write(self, data: bytes, sync: bool) -> None:
        if not self._open:
            raise RuntimeError("journal not begun")
        self._files[self._sid] = self._files.get(self._sid, b"") + data

    def _truncate(self, size: int) -> None:
        if self._sid in self._files:
            self._files[self._sid] = self._files[self._sid][:size]

    def close(self) -> None:
        """Stop writing; the journal stays."""
        self._open = False

    def _remove(self) -> None:
        self._files.pop(self._sid, None)

    def _read_bytes(self) -> bytes | None:
        return self._files.get(self._sid)


class MemoryLock:
    """The writer lock of one session of a :class:`MemoryStore` (held per lock object).

    Args:
        held_by: the store's table of held locks, session id -> holder.
        session_id: the session.
    """

    def __init__(self, held_by: dict[str, MemoryLock], session_id: str):
        self._held_by = held_by
        self.session_id = session_id

    @property
    def held(self) -> bool:
        """True while this object holds the lock."""
        return self._held_by.get(self.session_id) is self

    def holder(self) -> str:
        """Describe who holds the lock."""
        return f"pid {os.getpid()} (this process)"

    def writing(self) -> str | None:
        """The id the holder writes: this one (a memory lock is one per id)."""
        return self.session_id

    def try_acquire(self) -> bool:
        """Take the lock if free; return whether it is now held (never waits)."""
        holder = self._held_by.setdefault(self.session_id, self)
        return holder is self

    def acquire(self, wait: LockWait | None = None) -> MemoryLock:
        """Take the lock, waiting as long as ``wait`` says (another thread may release it).

        Raises:
            SessionLocked: another lock object holds it.
        """
        acquire_within(self, wait)
        return self

    def release(self) -> None:
        """Release the lock (idempotent)."""
        if self.held:
            del self._held_by[self.session_id]

    def __enter__(self) -> MemoryLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


class MemoryStore(SessionStore):
    """Sessions held in dicts (see the module doc).

    Args:
        clock: returns the commit time, epoch seconds (default: the wall clock).
    """

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._commits: dict[CommitId, _Commit] = {}
        self._heads: dict[str, CommitId] = {}
        self._archive: dict[str, CommitId] = {}
        self._journals: dict[str, bytes] = {}
        self._locks: dict[str, MemoryLock] = {}
        self._serial = itertools.count()
        self._current: str | None = None

    # -- reading ---------------------------------------------------------------------------

    def session_ids(self) -> list[SessionId]:
        """Return the ids of all sessions, sorted."""
        return sorted(SessionId(s) for s in self._heads)

    def archived_ids(self) -> list[str]:
        """Return the names of archived sessions, sorted."""
        return sorted(self._archive)

    def tip(self, session_id: str) -> CommitId | None:
        """Return the tip of ``session_id`` or None.

        Raises:
            InvalidSessionId: no valid id.
        """
        return self._heads.get(check_session_id(session_id))

    def archive_ref(self, name: str) -> CommitId | None:
        """Return the commit of archived session ``name``, or None."""
        return self._archive.get(name) if is_session_id(name) else None

    def commit_info(self, commit: str) -> CommitInfo:
        """Return the :class:`CommitInfo` of ``commit``.

        Raises:
            KeyError: no such commit.
        """
        c = self._commits[CommitId(commit)]
        return CommitInfo(CommitId(commit), list(c.parents), c.time, c.tz_offset, CommitMessage.decode(c.message),
                          c.author_time, c.tz_offset if c.author_time == c.time else 0)  # a given date is UTC, as git's

    def read_raw(self, session_id: str, commit: str) -> bytes:
        """Return the log bytes at ``commit``.

        Raises:
            CorruptSession: no such commit.
        """
        c = self._commits.get(CommitId(commit))
        if c is None:
            raise CorruptSession(session_id, 0, f"commit {commit[:12]} does not exist")
        return c.raw

    def _verified_tips(self) -> set[str]:
        return set(self._commits)  # every commit here was checked when it was made

    def _head_id(self) -> str | None:
        return self._current

    def current(self) -> SessionId | None:
        """Return the session made current (by the policy of :class:`~.base.SessionStore`), while it exists."""
        return SessionId(self._current) if self._current in self._heads else None

    def set_current(self, session_id: str) -> None:
        """Make ``session_id`` the current session."""
        self._current = check_session_id(session_id)

    # -- writing ---------------------------------------------------------------------------

    def _commit(self, parents: list[CommitId], message: bytes, raw: bytes, author_time: int | None = None) -> CommitId:
        now = int(self._clock())
        tz = time.localtime(now).tm_gmtoff
        c = _Commit(tuple(parents), now, tz, message, raw, now if author_time is None else author_time)
        digest = hashlib.sha1(repr((c, next(self._serial))).encode("utf-8", "surrogatepass"))
        sha = CommitId(digest.hexdigest())
        self._commits[sha] = c
        return sha

    def _swap(self, refs: dict[str, CommitId], name: str, old: str | None, new: CommitId) -> None:
        found = refs.get(name)
        if found != old:
            raise ConcurrentUpdate(name, old, found)
        refs[name] = new

    def append(self, session_id: str, events: list[Event], message: CommitMessage, *,
               expected_tip: str | None, header: dict | None = None, author_time: int | None = None) -> CommitId:
        """Save ``events`` as one commit of ``session_id``; see :meth:`SessionStore.append`."""
        sha = self._save(session_id, events, message, expected_tip, header, author_time)
        if expected_tip is None:
            self._made_current(session_id)
        return sha

    def append_many(self, session_id: str, commits: Sequence[tuple[list[Event], CommitMessage, int | None]], *,
                    expected_tip: str | None, header: dict | None = None, current: bool = True) -> list[CommitId]:
        """Save ``commits`` one after another; see :meth:`SessionStore.append_many`."""
        out: list[CommitId] = []
        tip = expected_tip
        for events, message, author_time in commits:
            tip = self._save(session_id, events, message, tip, header if tip is None else None, author_time)
            out.append(tip)
        if out and expected_tip is None:
            self._made_current(session_id, current)
        return out

    def _save(self, session_id: str, events: list[Event], message: CommitMessage, expected_tip: str | None,
              header: dict | None, author_time: int | None) -> CommitId:
        """One commit of :meth:`append`, the current session left as it is."""
        sid = check_session_id(session_id)
        if expected_tip is None:
            prefix, count = self._new_header(sid, header), 0
        else:
            prefix, count = self._log_at(sid, expected_tip)
            prefix += missing_line_end(prefix)
        raw = prefix + self._new_lines(events, count)
        sha = self._commit([CommitId(expected_tip)] if expected_tip else [], message.encode(), raw, author_time)
        self._swap(self._heads, sid, expected_tip, sha)
        return sha

    def branch_from(self, session_id: str, commit: str, message: CommitMessage, *, reason: str | None = None,
                    author_time: int | None = None, current: bool = True) -> CommitId:
        """Create session ``session_id`` whose first commit sits on ``commit`` (same log; no reflog kept)."""
        sid = check_session_id(session_id)
        check_free(self, sid)
        parent = self._commits[CommitId(commit)]
        sha = self._commit([CommitId(commit)], message.encode(), parent.raw, author_time)
        self._swap(self._heads, sid, None, sha)
        self._made_current(sid, current)
        return sha

    def _move(self, src: str, dst: str, commit: str, message: str, *,
              from_archive: bool = False, to_archive: bool = False) -> None:
        source = self._archive if from_archive else self._heads
        target = self._archive if to_archive else self._heads
        if source.get(src) != commit:
            raise ConcurrentUpdate(src, commit, source.get(src))
        self._swap(target, dst, None, CommitId(commit))
        del source[src]

    # -- the sidecar -----------------------------------------------------------------------

    def journal(self, session_id: str) -> MemoryJournal:
        """Return the journal of ``session_id`` (kept in this store)."""
        return MemoryJournal(self._journals, check_session_id(session_id))

    def journaled(self) -> list[str]:
        """Return the ids of sessions that have a journal."""
        return sorted(self._journals)

    def lock(self, session_id: str) -> MemoryLock:
        """Return the (not yet taken) writer lock of ``session_id``."""
        return MemoryLock(self._locks, check_session_id(session_id))
