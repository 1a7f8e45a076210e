"""Recovering the turn a crashed ``gs`` left in an orphaned journal.

A writer journals every event before it is committed (:class:`~gitsessions.writer.session.Session`);
when the process dies mid-turn, the next opener (:func:`~gitsessions.writer.opening.open_session`)
or a read-only command (:func:`~gitsessions.writer.opening.try_recover`) commits what the
journal holds, closed as ``interrupted``; each through :func:`~gitsessions.writer.opening.hold`,
which takes the session's lock first.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from ..errors import InvalidEvent
from ..ids import CommitId, SessionId, fork_name, taken_by
from ..log.commits import Lineage, commit_message
from ..log.events import Event, make_event
from ..secrets.redact import NO_REDACTION, Redactor
from ..store import JournalContents, SessionStore
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
    # The orphaned journal stays as it is until the commit lands: a crash meanwhile just
    # means the next opener recovers it again.
    commit = None if contents is None else _recover(store, session_id, contents, redactor, warnings)
    journal.clear()  # committed now, or it held nothing the session does not
    return commit


def _recover(store: SessionStore, session_id: str, contents: JournalContents, redactor: Redactor,
             warnings: list[str] | None) -> str | None:
    """Commit what ``contents`` holds that the session does not (see :func:`recover_journal`); None: nothing."""
    place = _place(store, session_id, contents, warnings)
    if place is None:
        return None
    kept = _continuing(place, redactor)
    if not kept and not contents.partial:
        return None
    return _commit(store, place, kept, contents.partial, redactor)


@dataclass(frozen=True)
class _Place:
    """Where a recovered turn is committed, and what of the journal is not committed yet.

    Attributes:
        target: the session that gets it.
        header: its header.
        events: its events before the turn.
        tip: the commit the turn builds on (None: the first commit makes the session).
        lineage: the lineage of a session made for the turn from the commit it was built on.
        new: the journal's events the session does not hold.
    """

    target: str
    header: dict
    events: list[Event]
    tip: str | None
    lineage: Lineage | None
    new: list[Event]


def _place(store: SessionStore, session_id: str, contents: JournalContents,
           warnings: list[str] | None) -> _Place | None:
    """Where the journal's turn goes (see :class:`_Place`); None when it holds nothing to commit."""
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
        return None  # no base, no header: the journal never held a turn
    place = _Place(session_id, header, events, tip, None, list(contents.events))
    other = taken_by(store, session_id) if tip is None and contents.base is None else None
    if other is not None:
        # The id went to another session meanwhile (a case variant): keep the turn apart.
        place = dataclasses.replace(place, target=fork_name(store, session_id, "recovered"))
        _warn(warnings, f"{session_id} is taken by {other}; the turn its journal held is kept in session "
                        f"{place.target}")
    if contents.base == tip:
        return place
    held = [e for e in place.new if e.seq < len(events)]
    if held and all(events[e.seq].to_dict() == e.to_dict() for e in held):
        # The tip holds the journal's first events already: the crash came between their commit
        # (made behind the prompt while the next turn was journaled) and the journal's cleanup.
        return dataclasses.replace(place, new=place.new[len(held):]) if len(held) < len(place.new) else None
    return _moved_on(store, session_id, contents, place, warnings)


def _moved_on(store: SessionStore, session_id: str, contents: JournalContents, place: _Place,
              warnings: list[str] | None) -> _Place:
    """Keep the turn of a branch that moved on (a pull, another tool) on a branch of its own. Never drop it.

    It grows from the commit the turn was built on; the branch is made here.
    """
    target = fork_name(store, session_id, "recovered")
    what = "moved on" if place.tip is not None else "was renamed or removed"
    if contents.base is not None:
        snap = store.load(session_id, contents.base)
        lineage = Lineage(SessionId(session_id), CommitId(contents.base))
        tip = store.branch_from(target, contents.base, commit_message(target, snap.events, kind="fork", lineage=lineage,
                                                                      why="an interrupted turn"))
        place = dataclasses.replace(place, header=snap.header, events=list(snap.events), tip=tip, lineage=lineage)
    else:
        place = dataclasses.replace(place, header=contents.header or place.header, events=[], tip=None)
    _warn(warnings, f"{session_id} {what} while a turn was in progress; that turn is kept in session {target}")
    return dataclasses.replace(place, target=target)


def _continuing(place: _Place, redactor: Redactor) -> list[Event]:
    """The run of the journal's new events that continues the log exactly and that the store accepts, redacted.

    A damaged or newer-format record ends the run instead of blocking every open.
    """
    kept: list[Event] = []
    for ev in place.new:
        if ev.seq != len(place.events) + len(kept) or type(ev.time) is not int:
            break
        data = redactor.value(ev.data) if isinstance(ev.data, dict) else ev.data
        try:
            kept.append(make_event(ev.seq, ev.type, data, time_ms=ev.time, ignorable=ev.ignorable))
        except InvalidEvent:
            break
    return kept


def _commit(store: SessionStore, place: _Place, kept: list[Event], partial: str, redactor: Redactor) -> str | None:
    """Commit ``kept`` (and ``partial``, the reply text streamed after them) at ``place``, the turn closed."""
    forked_from = place.lineage or (store.log(place.target, limit=1)[0].message.fields.forked_from
                                    if place.tip else None)
    session = Session(store, place.target, place.header, place.events + kept, place.tip, lock=_Held(),
                      redactor=redactor, committed=len(place.events), journal=_Held(), journal_open=True,
                      forked_from=forked_from)
    if partial and session.in_turn:
        session.append("assistant/message", {"content": partial, "tool_calls": [], "finish_reason": None,
                                             "interrupted": True})
    return session.end_turn("interrupted") if session.in_turn else session.save()


def _warn(warnings: list[str] | None, line: str) -> None:
    if warnings is not None:
        warnings.append(line)


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
