"""A session open for writing: its committed events, the turn in progress, and saving.

This is the service layer between the chat loop and the store: the loop appends events and
streamed text here; this module journals them, closes unfinished turns, and turns each
finished turn into one commit. It knows the store's interface, not git or OpenAI. A session is
opened by :mod:`gitsessions.writer.opening`.
"""

from __future__ import annotations

from typing import Any

from ..errors import DiskFull, GitSessionsError, NothingToSave
from ..ids import CommitId, SessionId
from ..log.commits import Lineage, commit_message
from ..log.events import Event, make_event
from ..log.transcript import closing_events, derive_messages, derived, open_turn, undone_turns
from ..log.turns import turn_numbers
from ..secrets.redact import NO_REDACTION, Redactor
from ..secrets.redact_stream import StreamRedactor
from ..store import Revision, SessionStore, TurnJournal
from .forking import fork
from .saving import CommitJob

#: Events after which the journal is fsynced (message boundaries).
_SYNC_TYPES = frozenset({"user/message", "assistant/message", "tool/result", "turn/end"})
#: The events that open a turn: when the journal refuses one, the turn is taken back whole.
_OPENING = frozenset({"turn/start", "user/message"})


class Session:
    """One session held for writing (the caller holds its lock for the object's lifetime).

    Open one with :func:`~gitsessions.writer.opening.open_session`; then :meth:`append` events
    and :meth:`delta` streamed text; then :meth:`end_turn` (or :meth:`save`) makes a commit.
    Close with :meth:`close`.

    With :attr:`saves_behind` a turn is committed in a thread while the next prompt is read;
    the journal keeps it (and the next turn after it) until the commit lands (:meth:`wait_saved`).

    Text enters the session here, so this is where it is redacted (its one door):
    :meth:`append` redacts every event, :meth:`delta` streams through a
    :class:`~gitsessions.secrets.redact_stream.StreamRedactor`; the journal, the store and the commit
    message are derived from the redacted events.

    Attributes:
        id: the session id.
        tip: the commit the next save builds on (None before the first save).
        header: line 1 of the log.
        events: every event, committed or pending, in seq order.
        recovered: the commit made by recovering an orphaned journal when opening, if any.
        forked_from: the lineage every commit of a fork carries (None for no fork).
        fork_from: the past revision the first write forks from (None: none, or it did).
        redactor: what :meth:`append` and :meth:`delta` replace (:data:`NO_REDACTION`: redaction is off).
        saves_behind: :meth:`end_turn` commits in a thread and returns at once (default False).
        starts_with: the system prompt a new session starts with, written as its first event
            (``session/system``) with the first event appended (None: none, or written).

    Args:
        store: the session store.
        session_id: the session.
        header: line 1 of the log.
        events: the events so far.
        tip: the commit the next save builds on (None: the first save creates the session).
        lock: the writer lock the caller took (released by :meth:`close`).
        redactor: see Attributes.
        committed: how many of ``events`` the tip holds (default: all); the rest go into the next save.
        journal: where pending events are journaled (default: the store's journal of
            ``session_id``); an open journal (``journal_open``) is appended to as it is.
        journal_open: True when ``journal`` already holds the pending events (a recovery).
        fork_from: a past revision the first write forks from (the branch is made then).
        forked_from: the lineage the session's commits carry (a fork's).
    """

    def __init__(self, store: SessionStore, session_id: str, header: dict, events: list[Event],
                 tip: str | None, lock: Any, redactor: Redactor = NO_REDACTION, *,
                 committed: int | None = None, journal: TurnJournal | None = None, journal_open: bool = False,
                 fork_from: Revision | None = None, forked_from: Lineage | None = None):
        self.store = store
        self.id = session_id
        self.header = header
        self.events = events
        self._tip = tip
        self.saves_behind = False
        self._saving: CommitJob | None = None  # the commit being made behind the prompt
        self.recovered: str | None = None
        self.forked_from = forked_from
        self.redactor = redactor
        self._stream = StreamRedactor(redactor)
        self.fork_from = fork_from
        self._committed = len(events) if committed is None else committed
        self._lock = lock
        self._journal = store.journal(session_id) if journal is None else journal
        self._journal_open = journal_open
        # How many of ``events`` the journal (or the tip) holds: fewer once the disk refused a record
        # mid-turn (memory keeps the rest; the next append writes them first, the next save commits all).
        self._journaled = len(events)
        self._deltas_refused = False  # streamed text is journaled in order or not at all
        self.starts_with: str | None = None

    # -- what the chat loop uses -----------------------------------------------------------

    def messages(self) -> list[dict[str, Any]]:
        """Return the derived chat-completions messages (see :func:`derive_messages`)."""
        return derive_messages(self.events)

    @property
    def system(self) -> str:
        """The system prompt the next request begins with (``""``: none): the log's, or :attr:`starts_with`."""
        return self.starts_with if self.starts_with is not None else derived(self.events).system

    @property
    def model(self) -> str | None:
        """The model the last ``session/model`` chose (None: none; the run's default)."""
        return derived(self.events).model

    @property
    def options(self) -> dict[str, Any]:
        """The request options in effect (``session/options``; see :mod:`gitsessions.log.request`)."""
        return derived(self.events).options

    @property
    def next_turn(self) -> int:
        """The number the next turn gets (1-based; see :func:`gitsessions.log.turns.next_turn`)."""
        return derived(self.events).next_turn

    def append(self, type: str, data: dict[str, Any] | None = None) -> Event:
        """Append one event, redacted (journaled at once; fsynced at message boundaries); return it.

        On a full disk: when the event opens a turn (``turn/start``,
        ``user/message``) the turn is taken back and :class:`DiskFull` (``kept="prompt"``)
        tells the face to hand the prompt back; later in a turn the event is kept in memory
        and saved with the turn, the journal keeping what came before it until a later
        append finds room for the rest.

        Raises:
            InvalidEvent: unknown type or data that is not plain JSON.
            DiskFull: no space for the journal record of an event opening a turn.
            RepoReadOnly: the journal cannot be written.
        """
        self._settle(block=False, raising=False)  # a commit that landed frees its journal first
        if self.starts_with is not None:  # a new session's first event: the system prompt it starts with
            system, self.starts_with = self.starts_with, None
            self.append("session/system", {"content": system})
        data = self.redactor.value(data or {})  # in memory as on disk
        event = make_event(len(self.events), type, data)
        self._stream.reset()  # the event supersedes the text streamed before it
        if self.fork_from is not None:
            # First write to a past revision: only now does the fork branch come to be.
            self._tip = fork(self.store, self.fork_from, self.id)
            self.forked_from = Lineage(SessionId(self.fork_from.session_id), CommitId(self.fork_from.commit))
            self.fork_from = None
        self._deltas_refused = False
        try:
            self._journal_event(event)
        except DiskFull as exc:
            if type in _OPENING:
                self._take_back_turn_start()
                raise DiskFull(exc.path, kept="prompt") from None
        self.events.append(event)
        return event

    def _journal_event(self, event: Event) -> None:
        """Journal the events a refused write left out (in order), then ``event``."""
        if not self._journal_open:
            self._journal.begin(self._tip, self.header if self._tip is None else None)
            self._journal_open = True
            self._journaled = self._committed
        for ev in [*self.events[self._journaled:], event]:
            self._journal.append_event(ev, sync=self._syncs(ev))
            self._journaled += 1

    def _syncs(self, event: Event) -> bool:
        """Whether journaling ``event`` fsyncs: at message boundaries, unless another follows at once."""
        if event.type == "assistant/message" and not event.data.get("tool_calls"):
            return False  # a reply ending its turn: the turn's end is fsynced a moment later
        # the end of a turn committed behind the prompt is fsynced by that commit's thread
        return event.type in _SYNC_TYPES and not (event.type == "turn/end" and self.saves_behind)

    def _take_back_turn_start(self) -> None:
        """Drop a ``turn/start`` whose prompt could not be journaled, from memory and journal."""
        if len(self.events) > self._committed and self.events[-1].type == "turn/start":
            if self._journaled == len(self.events):
                self._journal.drop_last()
                self._journaled -= 1
            self.events.pop()
        if len(self.events) == self._committed and self._journal_open:
            self._journal.clear()  # nothing of this session is pending: no journal at all
            self._journal_open = False

    def delta(self, text: str) -> None:
        """Journal streamed reply text that is not yet part of an event.

        With a redactor, only text that is final is journaled: a look-behind window is held
        back, so a secret split across chunks never sits whole in the journal (it is
        replaced once it arrived whole; the held tail is lost only by a crash mid-reply).
        """
        text = self._stream.feed(text)
        if self._journal_open and text and self._journaled == len(self.events) and not self._deltas_refused:
            try:
                self._journal.append_delta(text)
            except DiskFull:
                self._deltas_refused = True  # the reply goes on in memory; its event supersedes the text

    def end_turn(self, reason: str, **extra: Any) -> str | None:
        """Close the open turn (see :func:`closing_events`) and save it as one commit.

        Args:
            reason: ``completed``, ``aborted``, ``error``, ``max-steps`` or ``interrupted``.
            **extra: more ``turn/end`` data (e.g. ``error="..."``).

        Returns:
            The new commit id, or None when nothing was pending (or when :attr:`saves_behind`:
            the commit is being made; :meth:`wait_saved` gives it).
        """
        self._close_turn(reason, extra)
        return self.save(behind=self.saves_behind)

    def _close_turn(self, reason: str, extra: dict[str, Any]) -> None:
        for type_, data in closing_events(self.events, reason):
            if type_ == "turn/end":
                data.update(extra)
            self.append(type_, data)

    def set_title(self, title: str) -> str:
        """Set the session title (any Unicode, one line) with a ``session/title`` event; commit it.

        Raises:
            NothingToSave: the title is empty, or only white space.
        """
        title = " ".join(title.split())
        if not title:
            raise NothingToSave("a title needs some text; this one is empty or only spaces")
        commit = self._save_one("session/title", {"title": title})
        assert commit is not None  # an event is pending
        return commit

    def set_system(self, text: str) -> str | None:
        """Save ``text`` as the system prompt (a ``session/system`` event; ``""`` removes it); commit it.

        What the model sees is derived from the log: the request of this turn and
        of every later one, from here or from a fork, begins with it. In a new session not yet
        written it replaces :attr:`starts_with` (``""``: it starts with none, and no event says so).

        Returns:
            The commit, or None when nothing was saved: ``text`` (redacted) is the system
            prompt already, or it cleared a new session's :attr:`starts_with`.
        """
        content = self.redactor.text(text)
        if content.strip() == self.system.strip():
            return None
        self.starts_with = None
        if not content.strip() and not derived(self.events).system:
            return None
        return self._save_one("session/system", {"content": text})

    def set_model(self, model: str) -> str | None:
        """Save ``model`` as the model of the next requests (a ``session/model`` event); commit it.

        Returns:
            The commit, or None when it is the session's model already.

        Raises:
            NothingToSave: the name is empty.
        """
        model = model.strip()
        if not model:
            raise NothingToSave("a model needs a name; /models lists what the server offers")
        if model == derived(self.events).model:
            return None
        return self._save_one("session/model", {"model": model})

    def set_options(self, options: dict[str, Any]) -> str | None:
        """Save the request options in effect from now on (a ``session/options`` event, all of them); commit it.

        Args:
            options: every option to send (``{}``: the server's defaults); see :mod:`gitsessions.log.request`.

        Returns:
            The commit, or None when these are the options already.
        """
        if options == derived(self.events).options:
            return None
        return self._save_one("session/options", {"options": options})

    def compacted(self, data: dict[str, Any]) -> str:
        """Commit a ``compaction/summary`` with ``data`` (see :mod:`gitsessions.chat.compaction`); return the commit."""
        commit = self._save_one("compaction/summary", data)
        assert commit is not None  # an event is pending
        return commit

    def _save_one(self, type: str, data: dict[str, Any]) -> str | None:
        """Append one event outside a turn (a title, an undo) and commit it at once.

        Raises:
            DiskFull: ``kept="journal"`` when the event waits in the journal; ``"nothing"``
                when not even the journal took it (it is taken back: the user runs the command
                again, rather than being told a change is kept that is not).
        """
        self.append(type, data)
        try:
            return self.save()
        except DiskFull as exc:
            if exc.kept == "partial" and self._journaled < len(self.events) and not self.in_turn:
                self.events.pop()  # it is nowhere but here: say so instead of keeping it in memory
                raise DiskFull(exc.path, kept="nothing") from None
            raise

    # -- saving ----------------------------------------------------------------------------

    @property
    def tip(self) -> str | None:
        """The commit the next save builds on (None before the first save); waits for one in flight."""
        self._settle()
        return self._tip

    @tip.setter
    def tip(self, commit: str | None) -> None:
        self._tip = commit

    def save(self, behind: bool = False) -> str | None:
        """Commit the pending events (if any) and clear the journal; return the commit id.

        A commit still being made behind the prompt is waited for first (and its failure raised).

        Args:
            behind: commit in a thread and return None; whatever waits for it raises the failures below.

        Raises:
            ConcurrentUpdate: the branch moved (the journal is kept; nothing is lost).
            DiskFull: no space for the commit (``kept="journal"``: the pending events stay in
                the journal and in memory, and the next save commits them; ``"partial"``: the
                journal holds them up to where the disk filled).
            RepoReadOnly: the repo cannot be written.
        """
        self._settle()
        pending = self.events[self._committed:]
        if not pending:
            return None
        message = commit_message(self.id, self.events, self._committed, lineage=self.forked_from)
        tip, header = self._tip, self.header if self._tip is None else None
        journal = self._journal

        def make() -> str:
            if behind:
                journal.sync()  # the turn's end, journaled without it: durable before the commit
            return self.store.append(self.id, pending, message, expected_tip=tip, header=header)

        self._saving = CommitJob(make, len(self.events), behind)
        return None if behind else self._settle()

    def wait_saved(self) -> str | None:
        """Wait for the commit made behind the prompt, if any; return the tip.

        Raises:
            ConcurrentUpdate, DiskFull, RepoReadOnly, HookRefused: it failed (raised once; its
                events stay pending, in memory and in the journal, for the next save).
        """
        self._settle()
        return self._tip

    def _settle(self, block: bool = True, raising: bool = True) -> str | None:
        """Take the result of the commit in flight (see :meth:`wait_saved`); return it, or None."""
        saving = self._saving
        if saving is None or not (block or saving.done()) or (saving.error is not None and not raising):
            return None
        saving.join()
        self._saving = None
        if isinstance(saving.error, DiskFull):
            kept = "partial" if self._journaled < len(self.events) else "journal"
            raise DiskFull(saving.error.path, kept=kept) from None
        if saving.error is not None:
            raise saving.error
        self._tip, self._committed = saving.commit, saving.count
        if self._committed == len(self.events):  # nothing pending after it: the journal is done with
            self._journal.clear()
            self._journal_open = False
            self._journaled = len(self.events)
        return self._tip

    def undo(self, turn: int | None = None) -> int:
        """Commit a ``session/undo`` of ``turn`` (None: the last not undone; the log keeps it); return it.

        Raises:
            NothingToSave: there is no turn left to undo, or ``turn`` is not one the model sees.
        """
        undone = undone_turns(self.events)
        left = [t for t in turn_numbers(self.events) if t not in undone]
        drop = left[-1] if left and turn is None else turn
        if drop is None or drop not in left:
            raise NothingToSave(f"turn {turn} cannot be undone: it is undone already or does not exist (/log lists "
                                "the turns)" if left else "there is no turn to undo")
        self._save_one("session/undo", {"turn": drop})
        return drop

    @property
    def all_saved(self) -> bool:
        """True when every event is in a commit: no save in flight, nothing pending (in memory and the journal)."""
        return self._saving is None and self._committed == len(self.events)

    @property
    def in_turn(self) -> bool:
        """True while a turn is open (started, not ended)."""
        return open_turn(self.events) is not None

    def close(self) -> None:
        """Close the turn left open (reason ``aborted``), save what is pending, release the lock.

        A commit made behind the prompt that failed is tried again here (its second failure is raised).
        """
        try:
            try:
                self._settle()
            except GitSessionsError:
                pass  # its events are still pending: the save below takes them again
            if self.in_turn:
                self._close_turn("aborted", {})
            self.save()  # events outside a turn (a title) are not left in the journal
        finally:
            self._journal.close()
            self._lock.release()

