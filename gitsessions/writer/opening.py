"""Opening a session for writing: the one way a writer comes to hold a session.

:func:`open_session` checks the id, takes the writer lock, commits the turn an orphaned
journal holds (:mod:`gitsessions.writer.recovery`), then loads the tip, or checks that a new
id is free, and makes the session current.
"""

from __future__ import annotations

from ..errors import SessionNotFound
from ..ids import check_free, check_session_id
from ..secrets.redact import Redactor
from ..store import LockWait, SessionStore
from .recovery import recover_journal
from .session import Session


def open_session(store: SessionStore, session_id: str, *, new_header: dict | None = None,
                 redactor: Redactor | None = None, warnings: list[str] | None = None,
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
    lock = store.lock(session_id).acquire(wait)
    try:
        recovered = recover_journal(store, session_id, redactor, warnings)
        tip = store.tip(session_id)
        if tip is not None:
            snap = store.load(session_id, tip)
            session = Session(store, session_id, snap.header, list(snap.events), tip, lock, redactor,
                              forked_from=store.log(session_id, limit=1)[0].message.fields.forked_from)
            store.set_current(session_id)  # opened is current, as git's checkout makes it
        else:
            if new_header is None:
                raise SessionNotFound(session_id, store.session_ids())
            check_free(store, session_id)
            session = Session(store, session_id, new_header, [], None, lock, redactor)
            if system and system.strip():  # held as it will be logged: redacted
                session.starts_with = redactor.text(system) if redactor is not None else system
        session.recovered = recovered
        return session
    except BaseException:
        lock.release()
        raise
