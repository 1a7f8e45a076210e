"""Opening a session for writing: the one way a writer comes to hold a session.

Whoever writes a session first takes its writer lock and commits the turn an orphaned
journal holds (:mod:`gitsessions.writer.recovery`), in that order, through :func:`hold`:
:func:`open_session` (then the tip is loaded, or a new id checked free, and the session made
current), a fork's new id, ``gs rename`` and ``gs rm``, an import onto an id, and
:func:`try_recover`, which a reading command calls.

:func:`open_revision` is the door of the chat, ``gs ask``, ``/retry`` and ``/edit``: a tip is
opened as it is, a past revision as a session whose fork branch its first write makes
(:func:`gitsessions.writer.forking.fork`), so that sending from the past never moves the
original branch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..errors import (
    BadRevision,
    CorruptSession,
    DiskFull,
    HookRefused,
    RepoReadOnly,
    SessionLocked,
    SessionNotFound,
    UnsupportedVersion,
)
from ..ids import check_free, check_session_id, fork_name, is_session_id
from ..log.transcript import open_turn
from ..secrets.redact import NO_REDACTION, Redactor
from ..store import LockWait, SessionStore, WriterLock
from .recovery import recover_journal
from .session import Session


@dataclass(frozen=True)
class Hold:
    """A session's writer lock, taken, with the turn its orphaned journal held committed.

    Leaving a ``with`` block over it releases the lock; :func:`open_session` hands the lock
    to the :class:`Session` instead.

    Attributes:
        lock: the lock, held.
        recovered: the commit the recovery made (None: there was nothing to recover).
    """

    lock: WriterLock
    recovered: str | None

    def __enter__(self) -> Hold:
        return self

    def __exit__(self, *exc: object) -> None:
        self.lock.release()


def hold(store: SessionStore, session_id: str, *, wait: LockWait | None = None, redactor: Redactor = NO_REDACTION,
         warnings: list[str] | None = None) -> Hold:
    """Take ``session_id``'s writer lock, then commit the turn an orphaned journal of it holds.

    The journal is only ever recovered with the lock held: its writer may be alive.

    Args:
        store: the session store.
        session_id: the session.
        wait: how long to wait for another writer to let go (None: refused at once).
        redactor: replaces secrets in the recovered events (see :func:`recover_journal`).
        warnings: gets a line when the recovered turn went to a new session.

    Returns:
        The lock held and the recovery's commit (the lock is released when the recovery fails).

    Raises:
        SessionLocked: another live process writes it (still, after ``wait``).
        CorruptSession, UnsupportedVersion, DiskFull, RepoReadOnly, HookRefused: the recovery
            could not be committed (the journal stays).
    """
    lock = store.lock(session_id).acquire(wait)
    try:
        return Hold(lock, recover_journal(store, session_id, redactor, warnings))
    except BaseException:
        lock.release()
        raise


def open_session(store: SessionStore, session_id: str, *, new_header: dict | None = None,
                 redactor: Redactor = NO_REDACTION, warnings: list[str] | None = None,
                 wait: LockWait | None = None, system: str | None = None) -> Session:
    """Open ``session_id`` for writing, taking its lock and recovering an orphaned journal.

    Args:
        store: the session store.
        session_id: the session; created on first save when it does not exist and
            ``new_header`` is given.
        new_header: the header for a new session (None: the session must exist).
        redactor: replaces secrets in what enters the session (and in a recovered journal).
        warnings: gets a line when the recovered turn went to a new session.
        wait: how long to wait for another writer to let go (None: refused at once).
        system: the system prompt a new session starts with (the config's ``system:``):
            its first event once something is written (:attr:`Session.starts_with`); an
            existing session sends what its log says, and so does one an earlier gs saved without it.

    Returns:
        The open session, holding the lock until :meth:`Session.close`
        (:attr:`Session.recovered`: the commit a recovery made, if any).

    Raises:
        SessionLocked: another live process writes it (still, after ``wait``).
        SessionNotFound: it does not exist and ``new_header`` is None.
        SessionExists: a new id that is taken (differing only by case, or archived).
        CorruptSession, UnsupportedVersion: its log cannot be read safely.
    """
    check_session_id(session_id)
    held = hold(store, session_id, wait=wait, redactor=redactor, warnings=warnings)
    lock = held.lock
    try:
        tip = store.tip(session_id)
        if tip is not None:
            snap = store.load(session_id, tip)
            session = Session(store, session_id, snap.header, list(snap.events), tip, lock, redactor,
                              forked_from=store.log(session_id, limit=1)[0].message.fields.forked_from)
            store.set_current(session_id)  # opened is current, as git's checkout makes it
        else:
            if new_header is None:
                raise SessionNotFound(session_id, store.session_ids())
            check_free(store, session_id, opening=True)  # as open_revision asks before the lock
            session = Session(store, session_id, new_header, [], None, lock, redactor)
            if system and system.strip():  # held as it will be logged: redacted
                session.starts_with = redactor.text(system)
        session.recovered = held.recovered
        return session
    except BaseException:
        lock.release()
        raise


def open_revision(store: SessionStore, rev: str, *, fork_as: str | None = None, always_fork: bool = False,
                  new_header: Callable[[str], dict] | None = None,
                  redactor: Redactor = NO_REDACTION, warnings: list[str] | None = None,
                  wait: LockWait | None = None, system: str | None = None) -> tuple[Session, str | None]:
    """Open revision ``rev`` for writing, forking when writing there must not move its branch.

    A plain id that names no session is created (when ``new_header`` is given). A revision
    that is not its session's tip — or any revision when ``fork_as`` is given — is first
    forked to ``fork_as`` (default ``<id>-<n>``, the lowest free n whose lock no other writer
    holds): sending from the past never moves the original branch.

    Args:
        store: the session store.
        rev: ``SESSION``, ``SESSION~N``, ``SESSION^`` or ``SESSION@COMMIT``.
        fork_as: always fork, to this id.
        always_fork: fork even at a tip, to the default name when ``fork_as`` is None.
        new_header: builds the header of a new session from its id (None: it must exist).
        redactor: replaces secrets in what enters the session (see :class:`Session`).
        warnings: passed to :func:`open_session`.
        wait: how long to wait for the writer lock (see :func:`open_session`).
        system: the system prompt a new session starts with (see :func:`open_session`); a
            session that exists, and a fork, go on with what their log says.

    Returns:
        ``(session, note)``: the open session and, when a fork was made, a line saying so.

    Raises:
        BadRevision, SessionNotFound, SessionExists, SessionLocked, CorruptSession, InvalidSessionId.
    """
    for sid in ([] if any(c in rev for c in "~^@") else [rev]) + ([] if fork_as is None else [fork_as]):
        check_session_id(sid)  # a plain id or the fork's ("" too): say what is wrong with it
    if is_session_id(rev) and store.tip(rev) is None and fork_as is None:
        if new_header is None:
            raise SessionNotFound(rev, store.session_ids())  # did you mean ..., when another case has it
        check_free(store, rev, opening=True)  # the id in another case is the one meant; an archive keeps its id
        return open_session(store, rev, new_header=new_header(rev), redactor=redactor, warnings=warnings,
                            wait=wait, system=system), None
    target = store.resolve(rev)
    if target.is_tip and fork_as is None and not always_fork:
        return open_session(store, target.session_id, redactor=redactor, warnings=warnings, wait=wait), None
    snap = store.load(target.session_id, target.commit)
    if open_turn(snap.events) is not None:
        raise BadRevision(rev, "the fork point is inside an unfinished turn")
    taken: list[str] = []  # default names another writer holds or made meanwhile: theirs, so take the next
    while True:
        new_id = fork_as if fork_as is not None else fork_name(store, target.session_id, skip=taken)
        check_free(store, new_id)  # fork_as taken meanwhile: refused here, on the next round
        try:  # a turn a crashed writer of a new session of that id left is committed, not written over
            lock = hold(store, new_id, wait=wait if fork_as is not None else None, redactor=redactor,
                        warnings=warnings).lock
        except SessionLocked:
            if fork_as is not None:
                raise
            taken.append(new_id)
            continue
        if store.tip(new_id) is None:
            break
        lock.release()  # its holder made it meanwhile, or its orphaned journal just did
        taken.append(new_id)
    session = Session(store, new_id, snap.header, list(snap.events), None, lock, redactor,
                      fork_from=target)  # the branch is made by the first write: opening the past writes nothing
    note = (f"{rev} is not the tip of {target.session_id}: " if not target.is_tip else "") + \
        f"what you send goes to new session {new_id}, forked from {target.session_id} at {target.commit[:7]}"
    return session, note


def try_recover(store: SessionStore, session_id: str, redactor: Redactor = NO_REDACTION,
                warnings: list[str] | None = None) -> str | None:
    """Recover an orphaned journal of ``session_id`` if no live writer holds the session.

    Used by read-only commands (show, log, list). When a commit hook refuses the recovery, or
    the repo is read-only or full, the journal stays and the reason becomes one of
    ``warnings`` (if given): reading the committed history still works (a pending journal is
    reported, not committed).

    Args:
        store: the session store.
        session_id: the session.
        redactor: replaces secrets in the recovered events (see :func:`recover_journal`).
        warnings: gets a line per recovery a hook refused or that went to a new session.

    Returns:
        The recovery commit, or None (no journal, a live writer, or the recovery failed).
    """
    if not store.journal(session_id).exists():
        return None  # no lock taken (nor its file made) for a session with nothing pending
    try:
        with hold(store, session_id, redactor=redactor, warnings=warnings) as held:
            return held.recovered
    except SessionLocked:
        return None  # a live writer owns the journal
    except (CorruptSession, UnsupportedVersion):
        return None  # the journal stays; the reading command names the damage (one session, not all)
    except HookRefused as exc:
        if warnings is not None:
            warnings.append(f"{session_id}: {exc}")
        return None
    except (DiskFull, RepoReadOnly) as exc:
        if warnings is not None:
            why = (str(exc) if isinstance(exc, DiskFull)
                   else f"the session repo at {exc.path} is read-only ({exc.reason})")
            warnings.append(f"session {session_id} has a turn in its journal that is not saved yet (not shown "
                            f"here): {why}")
        return None
