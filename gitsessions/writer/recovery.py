"""Recovering the turn a crashed ``gs`` left in an orphaned journal.

A writer journals every event before it is committed (:class:`~gitsessions.writer.session.Session`);
when the process dies mid-turn, the next opener (:func:`~gitsessions.writer.opening.open_session`)
or a read-only command (:func:`~gitsessions.writer.opening.try_recover`) commits what the
journal holds, closed as ``interrupted``; each through :func:`~gitsessions.writer.opening.hold`,
which takes the session's lock first.
"""

from __future__ import annotations

from ..errors import InvalidEvent
from ..ids import CommitId, SessionId, fork_name, taken_by
from ..log.commits import Lineage, commit_message
from ..log.events import Event, make_event
from ..secrets.redact import NO_REDACTION, Redactor
from ..store import SessionStore
from .session import Session


def recover_journal(store: SessionStore, session_id: str, redactor: Redactor = NO_REDACTION,
                    warnings: list[str] | None = None) -> str | None:
    """Commit the turn an orphaned journal holds, closed as ``interrupted``; the caller holds the lock.

    Complete events are kept, streamed text after the last event becomes an interrupted
    assistant message, and :func:`~gitsessions.log.transcript.closing_events` answers unanswered
    tool calls and ends the turn. Events the tip already holds (a crash between their commit
    and clearing the journal) are passed over; a journal of nothing more is just removed.
    When the branch moved on meanwhile, the turn is kept on a new session and ``warnings``
    (if given) gets a line saying so.

    The journal's text enters the session again here, so it goes through the door again:
    ``redactor`` replaces what the process that wrote the journal did not know was secret
    (redaction was off there, or a secret or pattern is new here) before the blob, the
    subject and the trailers are derived from it.

    Args:
        store: the session store.
        session_id: the session.
        redactor: replaces secrets in the recovered events (:data:`NO_REDACTION`: redaction is off).
        warnings: gets a line when the turn had to go to a new session.

    Returns:
        The commit made, or None when there was nothing to recover.
    """
    journal = store.journal(session_id)
    contents = journal.read()
    if contents is None:
        journal.clear()
        return None
    tip = store.tip(session_id)
    if tip is not None:
        snap = store.load(session_id, tip)
        header, events = snap.header, list(snap.events)
    elif contents.header is not None:
        header, events = contents.header, []
    elif contents.base is not None:
        # The session was renamed, archived or deleted (plain git) under its journal: the
        # turn goes on from the commit it was built on, below, as a session of its own.
        header, events = {}, []
    else:
        journal.clear()  # no base, no header: the journal never held a turn
        return None
    new = list(contents.events)
    target = session_id
    lineage = None
    other = taken_by(store, session_id) if tip is None and contents.base is None else None
    if other is not None:
        # The id went to another session meanwhile (a case variant): keep the turn apart.
        target = fork_name(store, session_id, "recovered")
        if warnings is not None:
            warnings.append(f"{session_id} is taken by {other}; the turn its journal held is kept in session {target}")
    held = [e for e in new if e.seq < len(events)]
    if contents.base != tip and held and all(events[e.seq].to_dict() == e.to_dict() for e in held):
        # The tip holds the journal's first events already: the crash came between their commit
        # (made behind the prompt while the next turn was journaled) and the journal's cleanup.
        new = new[len(held):]
        if not new:
            journal.clear()
            return None
    elif contents.base != tip:
        # The branch moved on (a pull, another tool): keep the turn on a branch of its own,
        # grown from the commit it was built on. Never drop it.
        target = fork_name(store, session_id, "recovered")
        what = "moved on" if tip is not None else "was renamed or removed"
        if contents.base is not None:
            snap = store.load(session_id, contents.base)
            header, events = snap.header, list(snap.events)
            lineage = Lineage(SessionId(session_id), CommitId(contents.base))
            tip = store.branch_from(target, contents.base,
                                    commit_message(target, events, kind="fork", lineage=lineage,
                                                   why="an interrupted turn"))
        else:
            header, events, tip = contents.header or header, [], None
        if warnings is not None:
            warnings.append(f"{session_id} {what} while a turn was in progress; that turn is kept "
                            f"in session {target}")
    # Keep the run of journal events that continues the log exactly and that the store
    # accepts (a damaged or newer-format record ends the run instead of blocking every open).
    kept: list[Event] = []
    for ev in new:
        if ev.seq != len(events) + len(kept) or type(ev.time) is not int:
            break
        data = redactor.value(ev.data) if isinstance(ev.data, dict) else ev.data
        try:
            kept.append(make_event(ev.seq, ev.type, data, time_ms=ev.time, ignorable=ev.ignorable))
        except InvalidEvent:
            break
    if not kept and not contents.partial:
        journal.clear()
        return None
    # The orphaned journal stays as it is until the commit lands: a crash here just
    # means the next opener recovers it again.
    session = Session(store, target, header, events + kept, tip, lock=_Held(), redactor=redactor,
                      committed=len(events), journal=_Held(), journal_open=True,
                      forked_from=lineage or (store.log(target, limit=1)[0].message.fields.forked_from
                                              if tip else None))
    if contents.partial and session.in_turn:
        session.append("assistant/message", {"content": contents.partial, "tool_calls": [],
                                             "finish_reason": None, "interrupted": True})
    commit = session.end_turn("interrupted") if session.in_turn else session.save()
    journal.clear()
    return commit


class _Held:
    """Stands in for the lock and the journal while recovering.

    The caller holds the lock, and the orphaned journal already holds the turn, so the
    recovered session writes neither.
    """

    def exists(self) -> bool:
        return True

    def read(self) -> None:
        return None

    def begin(self, base: str | None, header: dict | None) -> None:
        return None

    def append_event(self, event: Event, sync: bool = True) -> None:
        return None

    def append_delta(self, text: str) -> None:
        return None

    def release(self) -> None:
        return None

    close = clear = drop_last = sync = release
