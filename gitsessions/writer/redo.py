"""A new attempt at a past turn (``/retry``, ``/edit``, ``gs retry``) and the places ``/tree`` jumps to.

A new attempt is a sibling fork: it starts at the last save before the turn, so
the earlier attempt stays where it was and both live on as sessions. It is opened through
:func:`gitsessions.writer.opening.open_revision`, the one way of writing from the past that
``gs ask REV~k --fork NEW`` and ``/open REV`` use too, so the fork, its lineage and its name
follow one rule.

A turn that no earlier save precedes (turn 1 of a session, whose first save holds the header
and that turn; or a turn of an import saved whole) has no such commit: the attempt then forks
at the first save holding the turn and drops that turn and the ones after it from what the
model sees (``session/undo``, as ``/undo`` does). The log keeps them; the family stays one.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import GitSessionsError
from ..ids import SessionId
from ..log.events import Event
from ..log.transcript import undone_turns
from ..log.turns import turns_of
from ..secrets.redact import NO_REDACTION, Redactor
from ..store import LockWait, Revision, SessionStore
from .opening import open_revision
from .session import Session


@dataclass(frozen=True)
class Attempt:
    """Where a new attempt at a turn starts.

    Attributes:
        turn: the turn tried again.
        prompt: its prompt as stored (already redacted).
        base: the commit the new attempt forks at, named in the session it was made in when
            that session still holds it (else in the session asked about): the fork's
            lineage and name come from it, so siblings are ``work-1``, ``work-2``...
        undo: the turns the model sees at ``base`` from ``turn`` on, newest first, which the new
            attempt drops (empty when a save before the turn exists).
    """

    turn: int
    prompt: str
    base: Revision
    undo: tuple[int, ...]


def _prompt_of(events: list[Event], turn: int) -> tuple[int, str]:
    """The seq of turn ``turn``'s ``turn/start`` and the content of its first user message."""
    start, prompt = -1, None
    for ev, t in zip(events, turns_of(events), strict=True):
        if t != turn:
            continue
        if ev.type == "turn/start" and start < 0:
            start = ev.seq
        elif ev.type == "user/message" and prompt is None:
            prompt = str(ev.data.get("content", ""))
    return start, prompt or ""


def attempt_at(store: SessionStore, target: Revision, turn: int | None = None, name: str | None = None) -> Attempt:
    """Find where a new attempt at ``turn`` of ``target`` starts.

    Walks ``target``'s first parents (trailers only; a commit without gs's ``Events``
    trailer is read) to the newest save holding none of the turn's events.

    Args:
        store: the session store.
        target: the revision whose turn is tried again (a session's tip, usually).
        turn: the turn number (None: the last turn not undone).
        name: what the user calls ``target`` in messages (default its session: a past
            revision opened in the chat is named as the prompt shows it, ``work-3``).

    Returns:
        The :class:`Attempt`.

    Raises:
        GitSessionsError: there is no such turn (the message says which exist).
        CorruptSession: the log cannot be read.
    """
    sid = target.session_id
    name = name or sid
    events = store.load(sid, target.commit).events
    undone = undone_turns(events)
    numbers = sorted({t for ev, t in zip(events, turns_of(events), strict=True) if ev.type == "turn/start"})
    live = [t for t in numbers if t not in undone]
    if turn is None:
        if not live:
            raise GitSessionsError(f"{name} has no turn to try again or edit (none was sent, or all are undone): "
                                   "send a prompt first")
        turn = live[-1]
    if turn not in numbers:
        known = f"its turns are {numbers[0]} to {numbers[-1]}" if numbers else "it has no turns yet"
        raise GitSessionsError(f"{name} has no turn {turn}: {known}")
    start, prompt = _prompt_of(events, turn)
    base, oldest = None, None
    for info in store.first_parents(target.commit):
        fields = info.message.fields
        if fields.forked_from is not None and fields.events is None and info.parents:
            continue  # a fork's first commit holds what its parent holds: name the parent
        held = fields.events[1] + 1 if fields.events is not None else len(store.load(sid, info.commit).events)
        if held <= start:
            base = info
            break
        oldest = info
    undo: tuple[int, ...] = ()
    if base is None:  # no save before the turn: fork where it was first saved, drop it and those after
        assert oldest is not None  # target itself holds the turn
        base = oldest
        # What the fork drops is what the model sees at base, not at target: target's own
        # undos are later than base, so a turn it undid is live again at base.
        at_base = store.load(sid, base.commit).events
        held_turns, undone_there = set(turns_of(at_base)), undone_turns(at_base)
        undo = tuple(t for t in reversed(numbers) if t >= turn and t in held_turns and t not in undone_there)
    owner = _owner(store, sid, base.commit, base.message.fields.session)
    return Attempt(turn, prompt, Revision(SessionId(owner), base.commit, base.commit == store.tip(owner)), undo)


def _owner(store: SessionStore, sid: str, commit: str, made_in: str | None) -> str:
    """The session a fork at ``commit`` is named after: the one it was made in, if it still holds it."""
    if made_in and made_in != sid:
        tip = store.tip(made_in)
        if tip is not None and any(info.commit == commit for info in store.first_parents(tip)):
            return made_in
    return sid


def open_attempt(store: SessionStore, attempt: Attempt, *, fork_as: str | None = None,
                 redactor: Redactor = NO_REDACTION, warnings: list[str] | None = None,
                 wait: LockWait | None = None) -> Session:
    """Open the new attempt: a fork at ``attempt.base`` (through :func:`open_revision`).

    The fork is made at once when turns are dropped (their ``session/undo`` is its first save);
    else by the first write, as a past revision opened for writing always is.

    Args:
        store: the session store.
        attempt: from :func:`attempt_at`.
        fork_as: the new session's id (default ``<base session>-<n>``: see :func:`open_revision`).
        redactor: replaces secrets in what enters the session.
        warnings: passed to :func:`~gitsessions.writer.opening.open_session`.
        wait: how long to wait for the new session's writer lock.

    Returns:
        The open session (the caller closes it).

    Raises:
        SessionExists, InvalidSessionId, BadRevision, SessionLocked: see :func:`open_revision`.
    """
    session, _note = open_revision(store, f"{attempt.base.session_id}@{attempt.base.commit}", fork_as=fork_as,
                                   always_fork=True, redactor=redactor, warnings=warnings, wait=wait)
    try:
        for turn in attempt.undo:
            session.undo(turn)  # named: the fork's last live turn need not be one of them
    except BaseException:
        session.close()
        raise
    return session


def where_both_live(attempt: Attempt, old: str, new: str, back: str, edited: bool = False,
                    as_turn: int | None = None) -> str:
    """One line saying where the new attempt and the earlier one live, and how to go back.

    Args:
        attempt: the attempt made.
        old: the session holding the earlier attempt.
        new: the session holding the new one.
        back: what the user types to go back (``/open work``, ``gs chat work``).
        edited: the new attempt's prompt is an edit (``/edit``), not the same prompt again.
        as_turn: the number the new attempt gets in ``new`` (its next turn). It differs from
            ``attempt.turn`` when the fork holds the turn, undone (see the module's doc): said,
            so a save of ``turn 2: ...`` after "turn 1 again" is explained.
    """
    renumbered = "" if as_turn in (None, attempt.turn) else \
        f"; it is turn {as_turn} there, after the first attempt, which its log keeps undone"
    return (f"turn {attempt.turn} {'edited' if edited else 'again'} in {new}, forked from "
            f"{attempt.base.session_id} at {attempt.base.commit[:7]}{renumbered}; the earlier attempt stays "
            f"in {old}: {back} goes back")


