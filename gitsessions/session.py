"""A session open for writing: its committed events, the turn in progress, and saving.

This is the service layer between the chat loop and the store: the loop appends events and
streamed text here; this module journals them, closes unfinished turns, and turns each
finished turn into one commit. It knows the store's interface, not git or OpenAI.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .errors import BadRevision, HookRefused, InvalidEvent, SessionExists, SessionNotFound
from .events import Event, make_event
from .rules import SESSION_ID_RE, CommitMessage, check_session_id
from .store import Revision, SessionStore
from .transcript import closing_events, derive_messages, open_turn, title_of, undone_turns

#: Events after which the journal is fsynced (message boundaries; design.md).
_SYNC_TYPES = frozenset({"user/message", "assistant/message", "tool/result", "turn/end"})


def commit_message(session_id: str, events: Sequence[Event], first_new: int,
                   forked_from: str | None = None) -> CommitMessage:
    """Build the commit message of a save holding ``events[first_new:]``.

    Subject ``turn N: <first line of the prompt>`` (design.md), trailers ``Session``, ``Turn``,
    ``Model``, ``Events`` (seq range), ``Messages`` (derived message count), ``Title`` and
    ``Forked-From`` (``<session>@<commit>``, carried by every commit of a fork) so that
    ``gs list`` and ``gs log`` never read blobs.
    """
    new = events[first_new:]
    turn = 0
    for ev in events:
        if ev.type == "turn/start":
            turn = ev.data.get("turn", turn + 1)
    prompt = next((str(e.data.get("content", "")) for e in new if e.type == "user/message"), None)
    models = [e.data.get("model") for e in new if e.type == "assistant/message" and e.data.get("model")]
    model = models[-1] if models else None
    if prompt is not None:
        first_line = prompt.strip().split("\n", 1)[0] or "(empty prompt)"
        subject = f"turn {turn}: {first_line}"
    elif any(e.type == "session/title" for e in new):
        subject = "title: " + title_of(events)
    elif any(e.type == "session/undo" for e in new):
        undone = [str(e.data.get("turn")) for e in new if e.type == "session/undo"]
        subject = "undo: turn " + ", ".join(undone)
    else:
        kinds = sorted({e.type for e in new})
        subject = "save: " + ", ".join(kinds)
    trailers = {"Session": session_id, "Turn": str(turn)}
    if model:
        trailers["Model"] = str(model)
    if new:
        trailers["Events"] = f"{new[0].seq}-{new[-1].seq}"
    trailers["Messages"] = str(len(derive_messages(events)))
    title = title_of(events)
    if title:
        trailers["Title"] = title[:200]
    if forked_from:
        trailers["Forked-From"] = forked_from
    return CommitMessage(subject, trailers)


class Session:
    """One session held for writing (the caller holds its lock for the object's lifetime).

    Use :meth:`open`; then :meth:`append` events and :meth:`delta` streamed text; then
    :meth:`end_turn` (or :meth:`save`) makes a commit. Close with :meth:`close`.

    Attributes:
        id: the session id.
        tip: the commit the next save builds on (None before the first save).
        header: line 1 of the log.
        events: every event, committed or pending, in seq order.
        recovered: the commit made by recovering an orphaned journal when opening, if any.
    """

    def __init__(self, store: SessionStore, session_id: str, header: dict, events: list[Event],
                 tip: str | None, lock: Any):
        self.store = store
        self.id = session_id
        self.header = header
        self.events = events
        self.tip = tip
        self.recovered: str | None = None
        self.forked_from: str | None = None
        self._fork_from: Revision | None = None
        self._committed = len(events)
        self._lock = lock
        self._journal = store.journal(session_id)
        self._journal_open = False

    @classmethod
    def open(cls, store: SessionStore, session_id: str, *, new_header: dict | None = None,
             warnings: list[str] | None = None) -> Session:
        """Open ``session_id`` for writing, taking its lock and recovering an orphaned journal.

        Args:
            store: the session store.
            session_id: the session; created on first save when it does not exist and
                ``new_header`` is given.
            new_header: the header for a new session (None: the session must exist).
            warnings: gets a line when the recovered turn went to a new session.

        Raises:
            SessionLocked: another live process writes it.
            SessionNotFound: it does not exist and ``new_header`` is None.
            SessionExists: it would differ only by case from an existing session.
            CorruptSession, UnsupportedVersion: its log cannot be read safely.
        """
        check_session_id(session_id)
        lock = store.lock(session_id).acquire()
        try:
            recovered = recover_journal(store, session_id, warnings)
            tip = store.tip(session_id)
            if tip is not None:
                snap = store.load(session_id, tip)
                session = cls(store, session_id, snap.header, list(snap.events), tip, lock)
                session.forked_from = store.log(session_id, limit=1)[0].message.trailers.get("Forked-From")
            else:
                if new_header is None:
                    raise SessionNotFound(session_id, store.session_ids())
                existing = store.find(session_id)
                if existing is not None:
                    raise SessionExists(session_id, existing)
                session = cls(store, session_id, new_header, [], None, lock)
            session.recovered = recovered
            return session
        except BaseException:
            lock.release()
            raise

    # -- what the chat loop uses -----------------------------------------------------------

    def messages(self) -> list[dict[str, Any]]:
        """Return the derived chat-completions messages (see :func:`derive_messages`)."""
        return derive_messages(self.events)

    @property
    def next_turn(self) -> int:
        """The number the next turn gets (1-based)."""
        return 1 + max((e.data.get("turn", 0) for e in self.events if e.type == "turn/start"), default=0)

    def append(self, type: str, data: dict[str, Any] | None = None) -> Event:
        """Append one event (journaled at once; fsynced at message boundaries) and return it.

        Raises:
            InvalidEvent: unknown type or data that is not plain JSON.
        """
        if self.store.redactor is not None:
            data = self.store.redactor.value(data or {})  # in memory as on disk
        event = make_event(len(self.events), type, data)
        if self._fork_from is not None:
            # First write to a past revision: only now does the fork branch come to be.
            self.tip = fork(self.store, self._fork_from, self.id)
            self.forked_from = f"{self._fork_from.session_id}@{self._fork_from.commit}"
            self._fork_from = None
        if not self._journal_open:
            self._journal.begin(self.tip, self.header if self.tip is None else None)
            self._journal_open = True
        self._journal.append_event(event, sync=type in _SYNC_TYPES)
        self.events.append(event)
        return event

    def delta(self, text: str) -> None:
        """Journal streamed reply text that is not yet part of an event."""
        if self._journal_open:
            self._journal.append_delta(text)

    def end_turn(self, reason: str, **extra: Any) -> str | None:
        """Close the open turn (see :func:`closing_events`) and save it as one commit.

        Args:
            reason: ``completed``, ``aborted``, ``error``, ``max-steps`` or ``interrupted``.
            **extra: more ``turn/end`` data (e.g. ``error="..."``).

        Returns:
            The new commit id, or None when nothing was pending.
        """
        for type_, data in closing_events(self.events, reason):
            if type_ == "turn/end":
                data.update(extra)
            self.append(type_, data)
        return self.save()

    def save(self) -> str | None:
        """Commit the pending events (if any) and clear the journal; return the commit id.

        Raises:
            ConcurrentUpdate: the branch moved (the journal is kept; nothing is lost).
        """
        pending = self.events[self._committed:]
        if not pending:
            return None
        message = commit_message(self.id, self.events, self._committed, self.forked_from)
        commit = self.store.append(
            self.id, pending, message, expected_tip=self.tip,
            header=self.header if self.tip is None else None,
        )
        self.tip = commit
        self._committed = len(self.events)
        self._journal.clear()
        self._journal_open = False
        return commit

    def set_title(self, title: str) -> str:
        """Set the session title (any Unicode, one line) with a ``session/title`` event; commit it."""
        title = " ".join(title.split())
        if not title:
            raise InvalidEvent("the title is empty")
        self.append("session/title", {"title": title})
        return self.save()

    def undo(self) -> int:
        """Drop the last turn not yet undone from what the model sees; return its number.

        Appends ``session/undo`` and commits: the log keeps everything and the branch only
        moves forward (issue 4).

        Raises:
            InvalidEvent: there is no turn left to undo.
        """
        undone = undone_turns(self.events)
        turns = [e.data.get("turn") for e in self.events if e.type == "turn/start"]
        left = [t for t in turns if t not in undone]
        if not left:
            raise InvalidEvent("there is no turn to undo")
        self.append("session/undo", {"turn": left[-1]})
        self.save()
        return left[-1]

    @property
    def in_turn(self) -> bool:
        """True while a turn is open (started, not ended)."""
        return open_turn(self.events) is not None

    def close(self) -> None:
        """Close the turn left open (reason ``aborted``), then release the lock."""
        try:
            if self.in_turn:
                self.end_turn("aborted")
            else:
                self.save()  # events outside a turn (a title) are not left in the journal
        finally:
            self._journal.close()
            self._lock.release()


def recover_journal(store: SessionStore, session_id: str, warnings: list[str] | None = None) -> str | None:
    """Commit the turn an orphaned journal holds, closed as ``interrupted``; the caller holds the lock.

    Complete events are kept, streamed text after the last event becomes an interrupted
    assistant message, and :func:`closing_events` answers unanswered tool calls and ends the
    turn. A journal whose events the tip already holds (a crash between commit and clearing
    the journal) is just removed. When the branch moved on meanwhile, the turn is kept on a
    new session and ``warnings`` (if given) gets a line saying so.

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
    else:
        journal.clear()
        return None
    new = list(contents.events)
    target = session_id
    if contents.base != tip:
        if new and len(events) > new[-1].seq and all(events[e.seq].to_dict() == e.to_dict() for e in new):
            journal.clear()  # committed already: the crash came between commit and cleanup
            return None
        # The branch moved on (a pull, another tool): keep the turn on a branch of its own,
        # grown from the commit it was built on. Never drop it.
        target = fork_name(store, session_id, "recovered")
        if contents.base is not None:
            snap = store.load(session_id, contents.base)
            header, events = snap.header, list(snap.events)
            tip = store.branch_from(target, contents.base, f"fork: {target}: an interrupted turn of {session_id}",
                                    f"{session_id}@{contents.base}")
        else:
            header, events, tip = contents.header or header, [], None
        if warnings is not None:
            warnings.append(f"{session_id} moved on while a turn was in progress; that turn is kept "
                            f"in session {target}")
    # Keep the run of journal events that continues the log exactly and that the store
    # accepts (a damaged or newer-format record ends the run instead of blocking every open).
    kept: list[Event] = []
    for ev in new:
        if ev.seq != len(events) + len(kept) or type(ev.time) is not int:
            break
        try:
            kept.append(make_event(ev.seq, ev.type, ev.data, time_ms=ev.time, ignorable=ev.ignorable))
        except InvalidEvent:
            break
    if not kept and not contents.partial:
        journal.clear()
        return None
    session = Session(store, target, header, events + kept, tip, lock=_Nothing())
    session._committed = len(events)
    # The orphaned journal stays as it is until the commit lands: a crash here just
    # means the next opener recovers it again.
    session._journal = session._lock
    session._journal_open = True
    if contents.partial and session.in_turn:
        session.append("assistant/message", {"content": contents.partial, "tool_calls": [],
                                             "finish_reason": None, "interrupted": True})
    commit = session.end_turn("interrupted") if session.in_turn else session.save()
    journal.clear()
    return commit


def try_recover(store: SessionStore, session_id: str, warnings: list[str] | None = None) -> str | None:
    """Recover an orphaned journal of ``session_id`` if no live writer holds the session.

    Used by read-only commands (show, log, list). Returns the recovery commit, or None.
    When a commit hook refuses the recovery, the journal stays and the refusal becomes a line
    of ``warnings`` (if given): reading the committed history still works.
    """
    journal = store.journal(session_id)
    if not journal.exists():
        return None
    lock = store.lock(session_id)
    if not lock.try_acquire():
        return None  # a live writer owns the journal
    try:
        return recover_journal(store, session_id, warnings)
    except HookRefused as exc:
        if warnings is not None:
            warnings.append(f"{session_id}: {exc}")
        return None
    finally:
        lock.release()


class _Nothing:
    """Stands in for the lock and journal while recovering (both are held by the caller)."""

    def _skip(self, *args: object, **kwargs: object) -> None:
        return None

    release = close = clear = append_event = append_delta = _skip


def fork_name(store: SessionStore, session_id: str, kind: str = "") -> str:
    """Return ``<id>-<n>`` (``<id>-<kind>-<n>`` with ``kind``), the lowest n >= 1 no session or
    archive uses; the id part is shortened so the result stays within the 64-character limit."""
    prefix = f"{session_id[:50]}-{kind}" if kind else session_id[:60]
    n = 1
    while True:
        name = f"{prefix}-{n}"
        if store.find(name) is None and store.archive_ref(name) is None:
            return name
        n += 1


def fork(store: SessionStore, rev: Revision, new_id: str) -> str:
    """Create session ``new_id`` starting at ``rev`` in O(1) (one commit, no content copied).

    The fork's commits carry ``Forked-From: <session>@<commit>``, and its first commit's
    parent is the fork point, so ``git merge-base`` finds it after push and clone.

    Returns:
        The fork's first commit id.

    Raises:
        BadRevision: the fork point is inside an unfinished turn.
        SessionExists, InvalidSessionId: ``new_id`` is taken or malformed.
    """
    check_session_id(new_id)
    snap = store.load(rev.session_id, rev.commit)
    if open_turn(snap.events) is not None:
        raise BadRevision(f"{rev.session_id}@{rev.commit[:7]}", "the fork point is inside an unfinished turn")
    subject = f"fork: {new_id} from {rev.session_id} at {rev.commit[:7]}"
    return store.branch_from(new_id, rev.commit, subject, f"{rev.session_id}@{rev.commit}")


def open_revision(store: SessionStore, rev: str, *, fork_as: str | None = None,
                  new_header: Callable[[str], dict] | None = None,
                  warnings: list[str] | None = None) -> tuple[Session, str | None]:
    """Open revision ``rev`` for writing, forking when writing there must not move its branch.

    A plain id that names no session is created (when ``new_header`` is given). A revision
    that is not its session's tip — or any revision when ``fork_as`` is given — is first
    forked to ``fork_as`` (default ``<id>-<n>``, the lowest free n): sending from the past
    never moves the original branch (issue 4). ``warnings`` is passed to :meth:`Session.open`.

    Returns:
        ``(session, note)``: the open session and, when a fork was made, a line saying so.

    Raises:
        BadRevision, SessionNotFound, SessionExists, SessionLocked, CorruptSession.
    """
    if not any(c in rev for c in "~^@"):
        check_session_id(rev)  # a plain id: say what is wrong with it, not with a revision
    if SESSION_ID_RE.match(rev) and store.tip(rev) is None:
        existing: str | None = store.find(rev)
        if existing is not None:
            raise SessionExists(rev, existing)  # differs only by case from an existing id
    else:
        existing = rev  # a revision, or a session that exists
    if existing is None and not fork_as:
        if new_header is None:
            raise SessionNotFound(rev, store.session_ids())
        if store.archive_ref(rev):
            raise SessionExists(rev, f"archive/{rev}")
        return Session.open(store, rev, new_header=new_header(rev), warnings=warnings), None
    target = store.resolve(rev)
    if target.is_tip and not fork_as:
        return Session.open(store, target.session_id, warnings=warnings), None
    new_id = fork_as or fork_name(store, target.session_id)
    check_session_id(new_id)
    existing = store.find(new_id) or (f"archive/{new_id}" if store.archive_ref(new_id) else None)
    if existing:
        raise SessionExists(new_id, existing)
    snap = store.load(target.session_id, target.commit)
    if open_turn(snap.events) is not None:
        raise BadRevision(rev, "the fork point is inside an unfinished turn")
    lock = store.lock(new_id).acquire()
    session = Session(store, new_id, snap.header, list(snap.events), None, lock)
    session._fork_from = target  # the branch is made by the first write (see append)
    note = (f"{rev} is not the tip of {target.session_id}: " if not target.is_tip else "") + \
        f"what you send goes to new session {new_id}, forked from {target.session_id} at {target.commit[:7]}"
    return session, note
