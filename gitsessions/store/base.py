"""The persistence seam: what every session store offers, whatever keeps the bytes.

:class:`SessionStore` names the primitives a backend implements and writes the rules built
on them once. The values it hands out are in :mod:`.values`. Nothing here knows about
models, terminals or the environment.
"""

from __future__ import annotations

import abc
import contextlib
import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

from ..errors import InvalidEvent, NothingToRestore, SessionExists, SessionNotFound
from ..ids import CommitId, SessionId, check_free, check_session_id, is_session_id, taken_by
from ..log.commits import CommitMessage
from ..log.events import Event, check_event, encode_header, parse_log
from . import listing
from .revisions import resolve as resolve_revision
from .values import CommitInfo, ReflogEntry, Revision, SessionInfo, Snapshot, TurnJournal, WriterLock

#: A store's own type, so ``with GitStore(...) as store`` is a GitStore.
_S = TypeVar("_S", bound="SessionStore")

__all__ = ["SessionStore"]


class SessionStore(abc.ABC):
    """Where sessions live. Every backend passes the same contract suite (tests/test_store_contract.py).

    A backend implements the primitives (ids, tips, commits, bytes, the writes, the sidecar
    journal and lock); the rules built on them (case-insensitive lookup, revision syntax,
    listing, archive naming) are written once here. Ids given in are plain ``str`` (checked
    where it matters); ids handed out are :data:`~gitsessions.ids.SessionId` and
    :data:`~gitsessions.ids.CommitId`.
    """

    #: Errors a backend raises for a commit it cannot read (the session is listed with the error).
    unreadable: tuple[type[Exception], ...] = (KeyError, ValueError)
    #: Refuses a new session id beyond the id rules (see :func:`~gitsessions.ids.check_free`;
    #: the CLI's refuses one that looks like a secret); None: every valid, free id is taken.
    new_id_rule: Callable[[str], None] | None = None

    # -- primitives every backend implements -----------------------------------------------

    @abc.abstractmethod
    def session_ids(self) -> list[SessionId]:
        """Return the ids of all live sessions, sorted."""

    def stranger_branches(self) -> list[str]:
        """Return the branches whose names are no session ids, which no list shows (plain git made them); sorted."""
        return []

    @abc.abstractmethod
    def archived_ids(self) -> list[str]:
        """Return the names of archived sessions, sorted."""

    @abc.abstractmethod
    def tip(self, session_id: str) -> CommitId | None:
        """Return the session's tip commit id, or None when it does not exist.

        Raises:
            InvalidSessionId: ``session_id`` is no valid id.
        """

    @abc.abstractmethod
    def archive_ref(self, name: str) -> CommitId | None:
        """Return the commit of archived session ``name``, or None."""

    @abc.abstractmethod
    def commit_info(self, commit: str) -> CommitInfo:
        """Return the :class:`CommitInfo` of one commit (no session content is read).

        Raises:
            KeyError: no such commit.
        """

    @abc.abstractmethod
    def read_raw(self, session_id: str, commit: str) -> bytes:
        """Return the bytes of ``session.jsonl`` at ``commit``.

        Raises:
            CorruptSession: the commit is missing or holds no session log.
        """

    @abc.abstractmethod
    def append(self, session_id: str, events: list[Event], message: CommitMessage, *,
               expected_tip: str | None, header: dict | None = None, author_time: int | None = None) -> CommitId:
        """Save ``events`` after those at ``expected_tip`` as one commit; return its id.

        Args:
            session_id: the session.
            events: new events; their seq must continue the log exactly.
            message: the commit message.
            expected_tip: the tip the caller built on; None creates the session.
            header: the header, required when creating.
            author_time: the commit's author date, epoch seconds (an import gives each turn
                its original time); None: now. Git's committer date is it too (one import: the same commits anywhere).

        Raises:
            InvalidEvent: seq not contiguous, or values that are not plain JSON.
            ConcurrentUpdate: the session is no longer at ``expected_tip``.
            SessionExists: creating an id that exists (also differing only by case).
        """

    @abc.abstractmethod
    def append_many(self, session_id: str, commits: Sequence[tuple[list[Event], CommitMessage, int | None]], *,
                    expected_tip: str | None, header: dict | None = None, current: bool = True) -> list[CommitId]:
        """Save ``commits`` (``(events, message, author_time)`` each, oldest first) one after another.

        As many :meth:`append` calls; a backend may write them at once (the git one: one pack,
        one fsync, one ref move; see :mod:`.batch`). Returns their ids, oldest first.
        ``current=False``: a new session is not made current (an import does it once, at its end).

        Raises:
            InvalidEvent, ConcurrentUpdate, SessionExists: as :meth:`append`.
        """

    @abc.abstractmethod
    def branch_from(self, session_id: str, commit: str, message: CommitMessage, *, reason: str | None = None,
                    author_time: int | None = None, current: bool = True) -> CommitId:
        """Create session ``session_id`` starting at ``commit`` in O(1) (a fork); return its first commit.

        ``message`` comes ready from :func:`gitsessions.log.commits.commit_message` (kind ``fork``);
        ``reason`` is the move's line in the new ref's reflog (default ``branch: <subject>``;
        ``gs restore`` of a reflog entry says ``restore: ...``); ``author_time`` dates the
        commit as in :meth:`append` (an imported branch: when it began); ``current=False``
        leaves the current session as it is (an import's fork).

        Raises:
            SessionExists: the id is taken (also by case, or by an archived session).
        """

    @abc.abstractmethod
    def _move(self, src: str, dst: str, commit: str, message: str, *,
              from_archive: bool = False, to_archive: bool = False) -> None:
        """Move session ``src`` (at ``commit``) to ``dst``, live or archived, with its history.

        Raises:
            ConcurrentUpdate: ``src`` was no longer at ``commit`` (nothing moved).
        """

    def _recorded_move(self, src: str, dst: str, commit: str, message: str, *,
                       from_archive: bool = False, to_archive: bool = False) -> contextlib.AbstractContextManager[None]:
        """Where a move of session ``src`` to ``dst`` and the policy after it (:meth:`_moved`) run, as one step.

        A backend whose move takes several writes records it there, so that the next command
        completes (or takes back) one a killed process left half done; none by default.
        """
        return contextlib.nullcontext()

    @abc.abstractmethod
    def journal(self, session_id: str) -> TurnJournal:
        """Return the write-ahead journal of ``session_id``."""

    @abc.abstractmethod
    def journaled(self) -> list[str]:
        """Return the ids of sessions that have a journal (a turn in progress, or orphaned)."""

    @abc.abstractmethod
    def lock(self, session_id: str) -> WriterLock:
        """Return the (not yet taken) writer lock of ``session_id``."""

    def import_lock(self) -> WriterLock | None:
        """Return the lock that serializes imports across processes (None: this backend has none)."""
        return None

    def close(self) -> None:  # noqa: B027 - a backend without resources has nothing to close
        """Release what the store holds open (safe to call twice)."""

    def __enter__(self: _S) -> _S:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- hooks a backend may refine --------------------------------------------------------

    def current(self) -> SessionId | None:
        """Return the current session (git: the one ``HEAD`` names), None when none is."""
        return None

    def head_ref(self) -> str | None:
        """Return the ref naming the current session (git: ``HEAD``'s target, existing or not), or None."""
        return None

    def set_current(self, session_id: str) -> None:  # noqa: B027 - a backend may keep no current session
        """Make ``session_id`` the current session (cosmetic: never fails a save); opening a session does."""

    def _head_id(self) -> str | None:
        """Return the session id the current-session pointer names, existing or not (git: ``HEAD``'s branch)."""
        return None

    def reflog(self, name: str, archived: bool = False) -> list[ReflogEntry]:
        """Return the moves of session ``name``'s ref (archived session ``name``'s), oldest first."""
        return []

    def _loaded(self, commit: CommitId, raw: bytes, n_events: int) -> None:  # noqa: B027 - optional
        """Called after ``commit`` was read and validated (a cache may keep it)."""

    def _log_at(self, session_id: str, commit: str) -> tuple[bytes, int]:
        """Return the log bytes at ``commit`` and its number of events (a backend may cache them)."""
        snap = self.load(session_id, commit)
        return snap.raw, len(snap.events)

    def _verified_tips(self) -> set[str]:
        """Tips known to hold a valid log, so :meth:`list_sessions` need not parse them."""
        return set()

    def _rows(self) -> listing.RowCache:
        """The cache of ``gs list`` rows by tip commit (:class:`.listing.RowCache`; here: none)."""
        return listing.RowCache()

    def tips(self) -> dict[SessionId, CommitId]:
        """Return every live session's tip by id, sorted by id (a backend may read them in one pass)."""
        found = ((sid, self.tip(sid)) for sid in self.session_ids())
        return {sid: tip for sid, tip in found if tip is not None}

    def _received_tips(self) -> set[str]:
        """Tips that arrived from a remote by clone, listed from their trailers (see :meth:`list_sessions`)."""
        return set()

    def known_logs(self) -> set[str]:
        """Return the commits known to hold a session log: verified here, or received by clone.

        Reads no object (one or two small cache files), so sync can tell a session tip from
        a stranger without reading each ref's commit and tree; a commit not in it may still
        be a session (written by plain git): check that one by its objects.
        """
        return self._verified_tips() | self._received_tips()

    # -- the current session: one policy, applied by the write primitives -------------------
    #
    # HEAD (the current session) names the session the user is on. Opening a session makes
    # it current (set_current, as git checkout does); besides, only the writes move it, by
    # these rules alone: a session a save or a fork makes is current, unless its caller says
    # not (an import's); a rename carries it along, as git branch -m does; a write that may
    # leave it naming no live session (an archive, a pull, a clone) points it at the session
    # saved last (current_or_last). Any other save leaves it as it is.

    def current_or_last(self) -> SessionId | None:
        """Return the current session, else the one saved last (:meth:`saved_last`); None: none can be read.

        What ``gs chat -c`` continues, and where a write that leaves no current session points it.
        """
        return self.current() or self.saved_last()

    def _made_current(self, session_id: str, current: bool = True) -> None:
        """The policy after a save or fork made ``session_id``: it is current, unless ``current`` is False."""
        if current:
            self.set_current(session_id)

    def _follow(self, old: str, new: str) -> None:
        """The policy after session ``old`` was renamed ``new`` (here, or on a remote a pull follows): it goes along."""
        if self._head_id() == old:
            self.set_current(new)

    def _moved(self, src: str, dst: str, *, from_archive: bool = False, to_archive: bool = False) -> None:
        """The policy after session ``src`` moved to ``dst``: a rename carries HEAD along (:meth:`_follow`).

        An archive points it at a live session (:meth:`settle_current`): what git clone checks
        out, what gs show shows; with none left it keeps naming the archived one, whose
        commands then say how to restore it. A restore leaves it as it is.
        """
        if to_archive:
            self.settle_current()
        elif not from_archive:
            self._follow(src, dst)

    def settle_current(self) -> None:
        """The policy after a write that may leave no current session: point it at :meth:`current_or_last`.

        An archive of the current session, a pull or a clone (whose ``HEAD`` may name no
        session: ``git init --bare``'s ``master``) call it; with no session left it stays as it is.
        """
        if (current := self.current_or_last()) is not None:
            self.set_current(current)  # nothing to write when it is current already

    # -- written once on top of the primitives ---------------------------------------------

    def find(self, session_id: str) -> SessionId | None:
        """Return the live session that has ``session_id``, itself or in another case, else None (:func:`taken_by`)."""
        other = taken_by(self, session_id)
        return None if other is None or other.startswith("archive/") else SessionId(other)

    def load(self, session_id: str, commit: str | None = None) -> Snapshot:
        """Read ``session_id`` at ``commit`` (its tip when None) and validate it.

        A blank last line (written by another tool; this store writes whole lines) is dropped,
        from the events and from ``raw``; a torn one is damage (:func:`parse_log`).

        Raises:
            SessionNotFound: no such session.
            CorruptSession, UnsupportedVersion: the log cannot be read safely.
        """
        if commit is None:
            commit = self.tip(session_id)
            if commit is None:
                raise SessionNotFound(session_id, self.session_ids())
        raw = self.read_raw(session_id, commit)
        parsed = parse_log(raw, session_id)
        if parsed.dropped_tail:
            # Cut exactly the dropped last line (which may be empty: "...\n\n").
            body = raw[:-1] if raw.endswith(b"\n") else raw
            raw = raw[: body.rfind(b"\n") + 1]
        self._loaded(CommitId(commit), raw, len(parsed.events))
        return Snapshot(SessionId(session_id), CommitId(commit), parsed.header, parsed.events, raw)

    def first_parents(self, commit: str) -> Iterator[CommitInfo]:
        """Yield :class:`CommitInfo` from ``commit`` back along first parents, lazily (newest first)."""
        sha: str | None = commit
        while sha:
            info = self.commit_info(sha)
            yield info
            sha = info.parents[0] if info.parents else None

    def log(self, session_id: str, start: str | None = None, limit: int | None = None) -> list[CommitInfo]:
        """Return the session's commits newest first (first-parent walk from ``start`` or the tip).

        Raises:
            SessionNotFound: no such session.
        """
        sha = start or self.tip(session_id)
        if sha is None:
            raise SessionNotFound(session_id, self.session_ids())
        return list(itertools.islice(self.first_parents(sha), limit))

    def resolve(self, rev: str) -> Revision:
        """Resolve a revision of a session to a commit (git's syntax: see :mod:`.revisions`).

        ``SESSION``, ``SESSION~N``, ``SESSION^``, ``SESSION@COMMIT``, ``SESSION@{N}`` or
        ``SESSION@{DATE}`` (the session's reflog; ``~N`` and ``^`` may follow).

        Raises:
            BadRevision: malformed, or names no commit (the message names what exists).
            SessionNotFound: no such session.
        """
        return resolve_revision(self, rev)

    def list_sessions(self) -> list[SessionInfo]:
        """Return one :class:`SessionInfo` per session, sorted by id, from tip commits.

        A tip not known to be valid (written behind this store's back) is parsed, and so is
        one whose commit lacks gs's ``Turn``/``Messages`` trailers (plain git made it): then
        the counts and title come from its log, not from trailers that may be missing or
        wrong. A session that cannot be read is still listed, with ``error`` set. A tip
        that arrived by clone (gs wrote it on another machine) is listed from its trailers
        like a verified one, so the first list of a fresh clone reads no logs; its log is
        checked when the session is opened, as every load is. A tip whose row this rule
        gave before is in the backend's row cache (:meth:`_rows`) and reads nothing.
        """
        return listing.live_rows(self, self._rows())

    def saved_last(self) -> SessionId | None:
        """Return the live session gs saved last, imports' tips after gs's saves (:func:`.listing.saved_last`).

        What ``gs chat -c`` continues when ``HEAD`` names none, and ``gs rm`` makes current; None: none can be read.
        """
        return listing.saved_last(self, self._rows())

    def archived_sessions(self) -> list[SessionInfo]:
        """Return :class:`SessionInfo` rows of archived sessions (from their tip commits)."""
        return listing.archived_rows(self)

    def _new_header(self, session_id: str, header: dict | None) -> bytes:
        """Return the header line of a new session :meth:`append` creates (its checks written once).

        Raises:
            InvalidEvent, SessionExists: no header or not plain JSON; the id exists (also by case).
        """
        if header is None:
            raise InvalidEvent("a new session needs a header")
        existing = self.find(session_id)  # made since the caller's check_free (which also keeps archived ids)
        if existing is not None:
            raise SessionExists(session_id, existing)
        try:
            return encode_header(header)
        except (TypeError, ValueError) as exc:
            raise InvalidEvent(f"the header is not plain JSON ({exc})") from None

    @staticmethod
    def _new_lines(events: list[Event], count: int) -> bytes:
        """Return the lines of ``events`` appended to a log of ``count`` events (a save's checks, once).

        Raises:
            InvalidEvent: a seq that does not continue the log, or a value that is not plain JSON.
        """
        for i, ev in enumerate(events):
            if ev.seq != count + i:
                raise InvalidEvent(f"event seq {ev.seq} does not continue the log (expected {count + i})")
            check_event(ev)
        try:
            return b"".join(ev.encode() for ev in events)
        except (TypeError, ValueError) as exc:
            raise InvalidEvent(f"a value is not plain JSON ({exc})") from None

    def rename(self, old: str, new: str) -> None:
        """Rename session ``old`` to ``new`` (its history moves with it, unchanged).

        Raises:
            SessionNotFound, SessionExists, ConcurrentUpdate.
        """
        sha = self.tip(old)
        if sha is None:
            raise SessionNotFound(old, self.session_ids())
        check_session_id(new)
        if new == old:
            raise SessionExists(new, old)  # nothing to rename
        check_free(self, new, moving=old)  # in another case: its own name
        message = f"Branch: renamed {old} to {new}"
        with self._recorded_move(old, new, sha, message):
            self._move(old, new, sha, message)
            self._moved(old, new)

    def archive(self, session_id: str) -> str:
        """Move a session out of the list (nothing is deleted) as ``<id>`` or ``<id>-<n>`` when taken.

        Returns:
            The archive name to restore it by.

        Raises:
            SessionNotFound, ConcurrentUpdate.
        """
        sha = self.tip(session_id)
        if sha is None:
            raise SessionNotFound(session_id, self.session_ids())
        name, n = session_id, 1
        while self.archive_ref(name):
            n += 1
            name = f"{session_id}-{n}"
        message = f"archive: {session_id}"
        with self._recorded_move(session_id, name, sha, message, to_archive=True):
            self._move(session_id, name, sha, message, to_archive=True)
            self._moved(session_id, name, to_archive=True)
        return name

    def restore(self, name: str, as_id: str | None = None) -> SessionId:
        """Bring archived session ``name`` back (as ``as_id`` or ``name``); return its id.

        Raises:
            NothingToRestore: ``name`` is no archived session (a live one, or none).
            SessionExists, InvalidSessionId, ConcurrentUpdate.
        """
        sha = self.archive_ref(name)
        if sha is None:
            live = is_session_id(name) and self.tip(name) is not None
            raise NothingToRestore(name, live, self.archived_ids())
        sid = check_session_id(as_id or name)
        check_free(self, sid, moving=f"archive/{name}")
        message = f"restore: {name}"
        with self._recorded_move(name, sid, sha, message, from_archive=True):
            self._move(name, sid, sha, message, from_archive=True)
            self._moved(name, sid, from_archive=True)
        return sid
