"""The derived transcript: events -> chat-completions messages, and closing unfinished turns.

The model never sees the log; it sees the messages :func:`derive_messages` derives from it.
Whatever the log holds, the result is a valid chat-completions transcript: every assistant
tool call is answered by exactly one tool message right after it, no tool message answers
nothing, strings are well-formed Unicode.

A turn that did not finish (a crash, Ctrl+C, an API error) is closed by *appending* the
events :func:`closing_events` returns — never by cutting the log.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .calls import ToolCall, ToolResult
from .events import Event, clean_text
from .request import options_of
from .turns import Numbering

__all__ = [
    "CANCELLED", "NOT_STARTED", "OUTCOME_UNKNOWN", "SYSTEM_REMOVED", "Compacted", "closing_events", "derive_messages",
    "open_turn", "summary_kept", "summary_moved", "summary_through", "title_of", "undone_turns",
]

#: ``tool/result.error_code`` for a call the assistant asked for that never started.
NOT_STARTED = "not_started"
#: ``tool/result.error_code`` for a call that started but whose outcome was never recorded.
OUTCOME_UNKNOWN = "outcome_unknown"
#: ``tool/result.error_code`` for a call skipped because the user cancelled the reply.
CANCELLED = "cancelled"

#: What the summary of a ``compaction/summary`` is sent after, as a user message.
SUMMARY_LEAD = "Summary of the conversation so far:\n"
#: What an empty ``session/system`` (it removes the system prompt) is said to be, shown or saved.
SYSTEM_REMOVED = "system prompt removed"

_SYNTHETIC_CONTENT = {
    NOT_STARTED: "error: this tool call was never run (the turn ended before it started).",
    OUTCOME_UNKNOWN: (
        "error: this tool call was started but its outcome is unknown (the turn was "
        "interrupted). Do not blindly retry it: check first whether it already took effect."
    ),
    CANCELLED: "error: this tool call was not run because the user cancelled the reply.",
}


def _unanswered(call_id: str, name: str, code: str) -> ToolResult:
    """Return the error result of a call no result answers: what the model is told of it.

    Args:
        call_id: the call's id.
        name: the tool it named.
        code: why there is none: :data:`NOT_STARTED`, :data:`OUTCOME_UNKNOWN` or :data:`CANCELLED`.
    """
    return ToolResult(call_id, name, _SYNTHETIC_CONTENT[code], True, code)


def undone_turns(events: Sequence[Event]) -> set[int]:
    """Return the turn numbers that ``session/undo`` events dropped from the transcript."""
    return {e.data["turn"] for e in events if e.type == "session/undo" and isinstance(e.data.get("turn"), int)}


def summary_through(ev: Event) -> int:
    """Return the seq of the last event a ``compaction/summary`` covers: its ``through``, else the one before it."""
    through = ev.data.get("through")
    if isinstance(through, int) and not isinstance(through, bool) and 0 <= through < ev.seq:
        return through
    return ev.seq - 1


def summary_kept(ev: Event) -> set[int]:
    """Return the seqs of the prompts a ``compaction/summary`` keeps: its ``kept``, those it covers.

    A tool that compacts by keeping the user's earlier prompts word for word and summarizing
    the rest (Codex) names them so: they are sent as they are, before the summary. Seqs that
    are no number, or that the summary does not cover, are passed over.
    """
    kept = ev.data.get("kept")
    through = summary_through(ev)
    return {seq for seq in kept if isinstance(seq, int) and not isinstance(seq, bool) and 0 <= seq <= through} \
        if isinstance(kept, list) else set()


def summary_moved(ev: Event, at: Callable[[int], int]) -> Event:
    """Return ``ev`` with the seqs a ``compaction/summary`` names (``through``, ``kept``) moved as ``at`` says.

    For events written at other seqs than they were made with (an import appended after
    events the session has and its source not): what they name moves with them. Any other
    event is returned as it is.

    Args:
        ev: the event.
        at: the seq each seq of its making is written at.
    """
    if ev.type != "compaction/summary":
        return ev
    data = dict(ev.data)
    through, kept = data.get("through"), data.get("kept")
    if isinstance(through, int) and not isinstance(through, bool):
        data["through"] = at(through)
    if isinstance(kept, list):
        data["kept"] = [at(seq) if isinstance(seq, int) and not isinstance(seq, bool) else seq for seq in kept]
    return dataclasses.replace(ev, data=data)


@dataclass(frozen=True)
class Compacted:
    """What a ``compaction/summary`` left of the messages before it, in the request sent next.

    Attributes:
        kept: how many prompts it covers are sent word for word before it (its ``kept``).
        after: the roles (``user``, ``assistant``, ``tool``) of the messages it does not cover
            (after its ``through``) that are sent after it as they are, in order.
    """

    kept: int
    after: tuple[str, ...]


def derive_messages(events: Sequence[Event]) -> list[dict[str, Any]]:
    """Derive the chat-completions ``messages`` list from a session's events.

    The result depends on ``events`` alone; when they are the list derived last, grown by
    appending, only the new events are looked at (see :func:`derived`).

    Args:
        events: the log after the header, in seq order (any content, any interruption).

    Returns:
        Messages as dicts: ``{"role": "user", "content": str}``,
        ``{"role": "assistant", "content": str, "tool_calls": [...]}`` (``tool_calls``
        only when non-empty, in the API's ``{"id", "type": "function", "function": {"name",
        "arguments"}}`` shape) and ``{"role": "tool", "tool_call_id": str, "content": str}``.
        A ``compaction/summary`` replaces the messages of the events it covers (up to its
        ``through``, a seq; all before it when it names none) with one user message holding
        the summary, after the prompts it keeps (its ``kept``: seqs of ``user/message``
        events it covers, sent as they are); a summary of a turn that a later ``session/undo`` drops is void (the model
        would see the dropped turn through it). Undone turns are left out. The last
        ``session/system`` (a setting: no undo drops it) is the first message, ``{"role":
        "system", "content": str}``; an empty one removes it. The dicts may be shared with
        later calls: read them, do not change them.
    """
    return derived(events).messages()


class Derivation:
    """What a log says, derived event by event: the transcript so far, each event's turn, the title.

    The one body of :func:`derive_messages` (and of the ``Turn``, ``Title`` and ``Messages``
    a save's commit message carries): :meth:`add` takes the events in log order.

    Args:
        undone: the turns ``session/undo`` events drop (:func:`undone_turns` of the whole log).

    Attributes:
        undone: as given.
        count: events taken.
        turns: the turn of each event taken, in order (see :mod:`gitsessions.log.turns`).
        title: :func:`title_of` the events taken.
        model: the model the last ``session/model`` chose (None: none did; the run's default).
        options: the request options of the last ``session/options`` (see :mod:`gitsessions.log.request`).
        compacted: by the seq of each ``compaction/summary`` taken, what it left (none for a
            summary a later undo voids: what it covers is sent as the log has it).
    """

    def __init__(self, undone: set[int]):
        self.undone = undone
        self.count = 0
        self.turns: list[int] = []
        self.title = ""
        self.model: str | None = None
        self.options: dict[str, Any] = {}
        self.compacted: dict[int, Compacted] = {}
        self._numbering = Numbering()
        self._system: dict[str, Any] | None = None  # the system message of the last session/system
        self._messages: list[dict[str, Any]] = []
        self._origins: list[int] = []  # the seq of the event each message comes from (a tool's: its call's)
        self._asked = -1  # the seq of the assistant message the pending calls belong to
        self._undone_before: set[int] = set()  # the turns undone by the events taken
        self._pending: dict[str, ToolCall] = {}  # the calls awaiting a result by id, in call order
        self._results: dict[str, str] = {}
        self._started: set[str] = set()  # pending calls a tool/call event shows began
        self._last: Event | None = None

    @property
    def turn(self) -> int:
        """The number of the last turn started (0 before the first)."""
        return self._numbering.turn

    @property
    def next_turn(self) -> int:
        """The number the next turn gets: one more than any turn started."""
        return self._numbering.next

    @property
    def system(self) -> str:
        """The system prompt in effect after the events taken (``""``: none)."""
        return str(self._system["content"]) if self._system else ""

    def messages(self) -> list[dict[str, Any]]:
        """The messages of the events taken (calls still unanswered get synthetic results)."""
        return ([self._system] if self._system else []) + self._messages + self._answers()

    def _answers(self) -> list[dict[str, Any]]:
        """The tool messages answering the pending calls: their results, else a synthetic error."""
        out = []
        for call in self._pending.values():
            content = self._results.get(call.id)
            if content is not None:
                out.append(ToolResult(call.id, call.name, content).wire())
            else:
                code = OUTCOME_UNKNOWN if call.id in self._started else NOT_STARTED
                out.append(_unanswered(call.id, call.name, code).wire())
        return out

    def _flush(self) -> None:
        answers = self._answers()
        self._messages += answers
        self._origins += [self._asked] * len(answers)
        self._pending.clear()
        self._results.clear()
        self._started.clear()

    def add(self, ev: Event) -> None:
        """Take the next event of the log."""
        self.count += 1
        self._last = ev
        turn = self._numbering.add(ev)
        self.turns.append(turn)
        if ev.type != "user/message" or turn not in self.undone:  # an undone prompt is no title
            self.title = _titled(self.title, ev)
        if ev.type == "compaction/summary":  # it stands for the turns it covers, not for its own
            self._summarize(ev)
        elif ev.type.startswith("session/"):
            self._session(ev)
        elif ev.type != "turn/start" and turn not in self.undone:
            self._converse(ev)

    def _session(self, ev: Event) -> None:
        """Take a ``session/`` event (a setting, an undo): none is part of a turn, so no undo drops it."""
        if ev.type == "session/system":
            system = clean_text(str(ev.data.get("content", "")))
            self._system = {"role": "system", "content": system} if system.strip() else None
        elif ev.type == "session/model":  # what the next requests send besides messages
            self.model = clean_text(str(ev.data.get("model") or "")).strip() or None
        elif ev.type == "session/options":
            self.options = options_of(ev.data.get("options"))
        elif ev.type == "session/undo" and isinstance(ev.data.get("turn"), int):
            self._undone_before.add(ev.data["turn"])

    def _converse(self, ev: Event) -> None:
        """Take an event of a turn left in: a message, a tool call starting or its result."""
        d = ev.data
        if ev.type == "user/message":
            self._flush()
            self._messages.append({"role": "user", "content": clean_text(str(d.get("content", "")))})
            self._origins.append(ev.seq)
        elif ev.type == "assistant/message":
            self._reply(ev)
        elif ev.type == "tool/call":
            cid = d.get("id")
            if isinstance(cid, str) and clean_text(cid) in self._pending:
                self._started.add(clean_text(cid))
        elif ev.type == "tool/result":
            cid = d.get("id")
            cid = clean_text(cid) if isinstance(cid, str) else None  # another type answers no call
            if cid in self._pending and cid not in self._results:
                self._results[cid] = clean_text(str(d.get("content", "")))

    def _reply(self, ev: Event) -> None:
        """Take an assistant message: its text and the calls it asks for, each to be answered."""
        self._flush()
        calls: dict[str, ToolCall] = {}
        entries = ev.data.get("tool_calls")
        for entry in entries if isinstance(entries, list) else []:
            if not isinstance(entry, dict):
                continue  # another tool's log may hold anything there: no call to send
            call = ToolCall.of(entry).cleaned()  # compare cleaned ids: two lone surrogates both become U+FFFD
            if not call.id or call.id in calls:
                continue  # an id we could never answer unambiguously
            calls[call.id] = call
        content = ev.data.get("content")
        content = clean_text(content) if isinstance(content, str) else ""
        if not content and not calls:
            return  # an interrupted reply that produced nothing
        # "" rather than null beside tool calls: some servers (llama.cpp) refuse null.
        msg: dict[str, Any] = {"role": "assistant", "content": content}
        if calls:
            msg["tool_calls"] = [call.wire() for call in calls.values()]
        self._messages.append(msg)
        self._origins.append(ev.seq)
        self._pending.update(calls)
        self._asked = ev.seq

    def _summarize(self, ev: Event) -> None:
        """Take a ``compaction/summary``: the messages of the events it covers give way to it.

        A tool message goes with the call it answers (kept or replaced together), so what is
        left is a valid transcript wherever ``through`` falls.
        """
        through = summary_through(ev)
        if set(self.turns[:through + 1]) & (self.undone - self._undone_before):
            return  # a turn it covers was undone after it: what it covers is sent as the log has it
        if self._asked <= through:  # the calls still unanswered are replaced with the message asking
            self._pending.clear()
            self._results.clear()
            self._started.clear()
        prompts = summary_kept(ev)
        before = [i for i, origin in enumerate(self._origins)
                  if origin in prompts and self._messages[i]["role"] == "user"]
        keep = [i for i, origin in enumerate(self._origins) if origin > through]
        summary = {"role": "user", "content": SUMMARY_LEAD + clean_text(str(ev.data.get("summary", "")))}
        # the calls still pending were asked after what it covers: their answers come after it too
        self.compacted[ev.seq] = Compacted(len(before), tuple(self._messages[i]["role"] for i in keep)
                                           + ("tool",) * len(self._pending))
        self._messages = [*(self._messages[i] for i in before), summary, *(self._messages[i] for i in keep)]
        self._origins = [*(self._origins[i] for i in before), ev.seq, *(self._origins[i] for i in keep)]

    def derives(self, events: Sequence[Event]) -> bool:
        """True when ``events`` begins with the events taken.

        Judged by the last one taken: the lists kept only grow at the end or lose their last events.
        """
        return len(events) >= self.count and (self.count == 0 or events[self.count - 1] is self._last)


_derived: list[tuple[Sequence[Event], Derivation]] = []  # the lists derived last, newest first
_derived_lock = threading.Lock()
_KEEP = 4


def derived(events: Sequence[Event]) -> Derivation:
    """Return the :class:`Derivation` of ``events``, taking only what is new since the last time.

    A session's events are one list that grows by a few events per save, and every request
    and every save derives from it: the derivation of each of the last few lists is kept and
    extended by the events appended since (a cache keyed by the list object: the result is
    the same as a fresh derivation's). It starts again when the list lost or replaced the
    events it had, or when a new ``session/undo`` changes which turns are left out.

    Args:
        events: the log after the header, in seq order.

    Returns:
        The derivation; shared with later calls: read it, do not change it.
    """
    with _derived_lock:
        found = next((d for seen, d in _derived if seen is events), None)
        if found is not None and not found.derives(events):
            found = None
        if found is not None and any(e.type == "session/undo" for e in events[found.count:]):
            if undone_turns(events) != found.undone:
                found = None
        if found is None:
            found = Derivation(undone_turns(events))
        for ev in events[found.count:]:
            found.add(ev)
        _derived[:] = [(events, found), *((seen, d) for seen, d in _derived if seen is not events)][:_KEEP]
        return found


def open_turn(events: Sequence[Event]) -> int | None:
    """Return the index in ``events`` of the ``turn/start`` of an unfinished turn, else None."""
    for i in range(len(events) - 1, -1, -1):
        if events[i].type == "turn/end":
            return None
        if events[i].type == "turn/start":
            return i
    return None


def closing_events(events: Sequence[Event], reason: str) -> list[tuple[str, dict[str, Any]]]:
    """Return the events (type, data) that close the last turn if it is unfinished.

    Unanswered tool calls get synthetic error results — ``not_started`` when no ``tool/call``
    event shows the call began (``cancelled`` when the user cancelled), ``outcome_unknown``
    when it began but has no result; a missing ``step/end`` is added; then ``turn/end`` with
    ``reason``.

    Args:
        events: the log so far.
        reason: the ``turn/end`` reason (``interrupted`` after a crash, ``aborted`` for a
            user cancel, ``error`` after an API failure).

    Returns:
        The (type, data) pairs to append, in order; empty when no turn is open.
    """
    start = open_turn(events)
    if start is None:
        return []
    turn_events = events[start:]
    turn = derived(events).turns[start]
    # Unanswered calls, in request order. A result answers the latest request of its id, so an
    # id reused in a later step (some local servers number calls per reply) is answered again.
    requested: dict[Any, str] = {}  # ids as the log holds them (another writer may use non-strings)
    started: set[Any] = set()
    open_step = None
    for ev in turn_events:
        if ev.type == "assistant/message":
            for call in ev.data.get("tool_calls") or []:
                if call.get("id"):
                    requested.setdefault(call["id"], call.get("name", ""))
        elif ev.type == "tool/call":
            started.add(ev.data.get("id"))
        elif ev.type == "tool/result":
            requested.pop(ev.data.get("id"), None)
            started.discard(ev.data.get("id"))
        elif ev.type == "step/start":
            open_step = ev.data.get("step")
        elif ev.type == "step/end":
            open_step = None
    out: list[tuple[str, dict[str, Any]]] = []
    for call_id, name in requested.items():
        if call_id in started:
            code = OUTCOME_UNKNOWN
        else:
            code = CANCELLED if reason == "aborted" else NOT_STARTED
        out.append(("tool/result", _unanswered(call_id, name, code).data()))
    if open_step is not None:
        out.append(("step/end", {"step": open_step}))
    out.append(("turn/end", {"turn": turn, "reason": reason}))
    return out


def title_of(events: Sequence[Event]) -> str:
    """Return the session title: the last ``session/title``, else the first prompt's first line.

    An undone turn's prompt is no title: a new attempt at turn 1 undoes it (see :mod:`gitsessions.writer.redo`)
    and is titled by its own prompt.
    """
    return derived(events).title


def _titled(title: str, ev: Event) -> str:
    """The title after ``ev``, given the title before it (see :func:`title_of`)."""
    if ev.type == "session/title":
        return str(ev.data.get("title", ""))
    if ev.type == "user/message" and not title:
        return str(ev.data.get("content", "")).strip().split("\n", 1)[0]
    return title
