"""A revision opened for writing: a tip as it is, a past revision as a fork.

Sending from the past never moves the original branch (issue 4): :func:`open_revision` opens
a past revision as a :class:`gitsessions.writer.session.Session` whose fork branch its first write
makes (:func:`gitsessions.writer.session.fork`). The chat, ``gs ask``, ``/retry`` and ``/edit`` open
revisions through it alone.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress

from ..errors import BadRevision, SessionLocked, SessionNotFound
from ..ids import SESSION_ID_RE, check_free, check_session_id, fork_name
from ..log.transcript import open_turn
from ..secrets.redact import Redactor
from ..store import LockWait, SessionStore
from .opening import open_session
from .session import Session


def open_revision(store: SessionStore, rev: str, *, fork_as: str | None = None, always_fork: bool = False,
                  new_header: Callable[[str], dict] | None = None,
                  redactor: Redactor | None = None, warnings: list[str] | None = None,
                  wait: LockWait | None = None, system: str | None = None) -> tuple[Session, str | None]:
    """Open revision ``rev`` for writing, forking when writing there must not move its branch.

    A plain id that names no session is created (when ``new_header`` is given). A revision
    that is not its session's tip — or any revision when ``fork_as`` is given — is first
    forked to ``fork_as`` (default ``<id>-<n>``, the lowest free n whose lock no other writer
    holds): sending from the past never moves the original branch (issue 4).

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
    if SESSION_ID_RE.match(rev) and store.tip(rev) is None:
        existing: str | None = store.find(rev)
        if existing is not None:  # the id in another case: not there under this name (nor can it be made)
            raise SessionNotFound(rev, store.session_ids())  # did you mean ...?
    else:
        existing = rev  # a revision, or a session that exists
    if existing is None and fork_as is None:
        if new_header is None:
            raise SessionNotFound(rev, store.session_ids())
        check_free(store, rev)  # an archived session keeps its id
        return open_session(store, rev, new_header=new_header(rev), redactor=redactor, warnings=warnings,
                            wait=wait, system=system), None
    target = store.resolve(rev)
    if target.is_tip and fork_as is None and not always_fork:
        return open_session(store, target.session_id, redactor=redactor, warnings=warnings, wait=wait), None
    snap = store.load(target.session_id, target.commit)
    if open_turn(snap.events) is not None:
        raise BadRevision(rev, "the fork point is inside an unfinished turn")
    held: list[str] = []  # default names whose lock another writer holds: theirs, so take the next
    while True:
        new_id = fork_as if fork_as is not None else fork_name(store, target.session_id, skip=held)
        check_free(store, new_id)
        if fork_as is not None:
            lock = store.lock(new_id).acquire(wait)
            break
        with suppress(SessionLocked):
            lock = store.lock(new_id).acquire(None)
            if store.tip(new_id) is None:
                break
            lock.release()  # its holder made it meanwhile
        held.append(new_id)
    session = Session(store, new_id, snap.header, list(snap.events), None, lock, redactor,
                      fork_from=target)  # the branch is made by the first write: opening the past writes nothing
    note = (f"{rev} is not the tip of {target.session_id}: " if not target.is_tip else "") + \
        f"what you send goes to new session {new_id}, forked from {target.session_id} at {target.commit[:7]}"
    return session, note
