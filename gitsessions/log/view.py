"""What a reader sees of a session's events: the one projection every display renders.

``gs show``, ``gs log -p``, ``gs diff`` and every export (markdown, html) read a session
through :func:`items`: one typed, frozen value per event a person would want to see, in log
order, each with the number of the turn it belongs to. The renderers only choose words and
layout; which events are visible, and what they mean, is decided here once.

Shown: the start of each turn (and whether ``session/undo`` dropped it), user and assistant
messages (tool calls, ``interrupted``), the system prompt where ``session/system`` set it,
tool results (``is_error``, error code), messages an import kept aside (``import/message``:
stored, never sent to the model), and notes: a turn that ended other than ``completed``, a
title change, a model or options set, a tool call allowed or denied, an undo, a fork, a
compaction summary (with what the next request sends beside it: the derivation's word, not a
guess of its own).
Not shown: ``step/*``, ``tool/call`` (the call is shown with its assistant message) and a
completed ``turn/end``.

Event data written by another tool may have any shape; every field is read tolerantly
(a missing text is ``""``, a non-string id or name is ``None``). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from .events import IMPORTED_MESSAGE, Event
from .request import options_of, options_text
from .transcript import SYSTEM_REMOVED, derived, summary_through, undone_turns
from .turns import Numbering


@dataclass(frozen=True)
class Item:
    """One thing a reader sees, made from one event.

    Attributes:
        seq: the event's ``seq``.
        time: the event's time, epoch milliseconds.
        turn: the number of the turn the event belongs to (0 before the first turn).
        type: the event's type (``user/message``, ...).
    """

    seq: int
    time: int
    turn: int
    type: str


@dataclass(frozen=True)
class TurnStart(Item):
    """A turn begins (``turn/start``); ``turn`` is its number.

    Attributes:
        undone: a later ``session/undo`` dropped this turn from what the model sees.
    """

    undone: bool = False


@dataclass(frozen=True)
class ShownCall:
    """A tool call an assistant message asked for, as a reader sees it (:class:`~.calls.ToolCall` is what runs).

    A log another tool wrote may hold fields of other types: they are shown as missing.

    Attributes:
        id: the call id (None when the event has no string id).
        name: the tool's name (None when the event has no string name).
        arguments: the arguments as the model wrote them (JSON text; None when absent).
    """

    id: str | None
    name: str | None
    arguments: str | None


@dataclass(frozen=True)
class Message(Item):
    """A message: the user's prompt, an assistant reply, or one an import kept aside.

    Attributes:
        role: ``user``, ``assistant`` or ``system`` (the system prompt from there on); for an
            imported message its own role (``system``, ``developer``, ``tool``, ...).
        text: the message text (``""`` when it has none).
        tool_calls: the tool calls of an assistant message, in order.
        model: the model that wrote an assistant message, if recorded.
        interrupted: an assistant reply that was cut short.
        imported: kept aside by an import (``import/message``): stored, never sent to the model.
        name: what an imported message is, as its source tool said (``codex instructions``,
            ``assistant thinking``, a tool's name); None when the event names nothing.
    """

    role: str = ""
    text: str = ""
    tool_calls: tuple[ShownCall, ...] = ()
    model: str | None = None
    interrupted: bool = False
    imported: bool = False
    name: str | None = None

    @property
    def what(self) -> str:
        """What the message is, in a word or two: its role, or for an imported one what its event names.

        An imported system or developer message's name says what it is (``codex
        instructions``, ``assistant thinking``); another role's name follows the role (a
        tool message that answered no call: ``tool clock``).
        """
        if self.name and self.role in ("system", "developer"):
            return self.name
        return f"{self.role} {self.name}" if self.name else self.role

    @property
    def empty(self) -> bool:
        """True for an assistant reply with no text, no tool call and no interruption."""
        return self.role == "assistant" and not self.text and not self.tool_calls and not self.interrupted


@dataclass(frozen=True)
class ShownResult(Item):
    """What a tool returned (``tool/result``), as a reader sees it (:class:`~.calls.ToolResult` is what is sent).

    Attributes:
        call_id: the id of the call it answers (None when not a string).
        name: the tool's name (None when not a string).
        text: the result text.
        is_error: the tool failed (or never ran).
        error_code: why, when ``is_error`` (``not_started``, ...), else None.
    """

    call_id: str | None = None
    name: str | None = None
    text: str = ""
    is_error: bool = False
    error_code: str | None = None


@dataclass(frozen=True)
class Note(Item):
    """Base of the items that are not messages: something that happened to the session."""


@dataclass(frozen=True)
class TurnEnd(Note):
    """A turn that ended other than ``completed`` (``turn/end``).

    Attributes:
        reason: ``aborted``, ``error``, ``interrupted``, ``max-steps`` (or another tool's word).
        error: the error text, if any.
    """

    reason: str = ""
    error: str | None = None


@dataclass(frozen=True)
class TitleChange(Note):
    """The title was set (``session/title``).

    Attributes:
        title: the new title.
    """

    title: str = ""


@dataclass(frozen=True)
class Undo(Note):
    """A turn was dropped from what the model sees (``session/undo``).

    Attributes:
        undone: the number of the dropped turn (None when the event names none).
    """

    undone: int | None = None


@dataclass(frozen=True)
class Setting(Note):
    """A setting of the next requests: a model (``session/model``) or request options (``session/options``).

    Attributes:
        text: what was set, in words (``model: gpt-4o``, ``options: temperature=0.2``).
    """

    text: str = ""


@dataclass(frozen=True)
class Permission(Note):
    """Whether a tool call that asks (a write, a command) was allowed, and by whom (``tool/permission``).

    Attributes:
        text: the decision in words (``run_command allowed once``, ``write_file denied``).
    """

    text: str = ""


@dataclass(frozen=True)
class Fork(Note):
    """A ``session/fork`` event.

    Attributes:
        details: its data as ``(key, value)`` pairs, in order.
    """

    details: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class Summary(Note):
    """A compaction summary: what the model sees instead of the conversation up to where it ends.

    What the next request sends with it is the derivation's
    (:attr:`gitsessions.log.transcript.Derivation.compacted`): the prompts it keeps before
    it, the messages after what it covers after it.

    Attributes:
        text: the summary.
        upto: the turn of the last event it covers (its ``through``; all before it when it names none).
        kept: how many of the prompts it covers are sent word for word before it.
        after: the roles (``user``, ``assistant``, ``tool``) of the messages before it that it
            does not cover, sent after it as they are, in order.
        void: a later ``session/undo`` dropped a turn it covers: it is not sent, what it covers is.
    """

    text: str = ""
    upto: int = 0
    kept: int = 0
    after: tuple[str, ...] = ()
    void: bool = False


def _text(value: Any) -> str:
    """A text field: a string as it is, nothing as ``""``, anything else as ``str()``."""
    if isinstance(value, str):
        return value
    return "" if value is None else str(value)


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


#: How a decision is said, by who gave it (``by``; the values of
#: :class:`gitsessions.chat.tools.toolset.Decision`): the user's own answer says what it was.
_ANSWERED = {"once": "allowed once", "session": "allowed for this session", "deny": "denied"}
_DECIDED_BY = {"session": "for this session, as answered earlier", "config": "by the config's permissions.allow",
               "--yes": "by --yes", "nobody": "with no one to ask"}


def _permission_text(d: dict[str, Any]) -> str:
    name, answer, by = _str_or_none(d.get("name")) or "a tool call", _text(d.get("answer")), _text(d.get("by"))
    if by in ("user", "") and answer in _ANSWERED:
        return f"{name} {_ANSWERED[answer]}"
    verb = "denied" if answer == "deny" else "allowed"
    return f"{name} {verb} {_DECIDED_BY.get(by, f'by {by}' if by else '')}".rstrip()


def _item(ev: Event, turn: int, undone: set[int], turns: Sequence[int]) -> Item | None:
    d, base = ev.data, (ev.seq, ev.time, turn, ev.type)
    t = ev.type
    if t == "turn/start":
        return TurnStart(*base, undone=turn in undone)
    if t == "user/message":
        return Message(*base, role="user", text=_text(d.get("content")))
    if t == "assistant/message":
        calls = tuple(ShownCall(_str_or_none(c.get("id")), _str_or_none(c.get("name")),
                               _str_or_none(c.get("arguments")))
                      for c in d.get("tool_calls") or [] if isinstance(c, dict))
        content = d.get("content")
        return Message(*base, role="assistant", text=content if isinstance(content, str) else "",
                       tool_calls=calls, model=_str_or_none(d.get("model")) or None,
                       interrupted=bool(d.get("interrupted")))
    if t == "tool/result":
        code = d.get("error_code")
        return ShownResult(*base, call_id=_str_or_none(d.get("id")), name=_str_or_none(d.get("name")),
                          text=_text(d.get("content")), is_error=bool(d.get("is_error")),
                          error_code=_text(code) if code else None)
    if t == "turn/end" and d.get("reason") != "completed":
        error = d.get("error")
        return TurnEnd(*base, reason=_text(d.get("reason")), error=_text(error) if error else None)
    if t == "session/system":  # an empty one removes it: a setting, not a message
        text = _text(d.get("content"))
        return Message(*base, role="system", text=text) if text.strip() else Setting(*base, text=SYSTEM_REMOVED)
    if t == "session/model":
        return Setting(*base, text=f"model: {_text(d.get('model'))}")
    if t == "session/options":
        return Setting(*base, text=f"options: {options_text(options_of(d.get('options'))) or 'the server defaults'}")
    if t == "tool/permission":
        return Permission(*base, text=_permission_text(d))
    if t == "session/title":
        return TitleChange(*base, title=_text(d.get("title")))
    if t == "session/undo":
        n = d.get("turn")
        return Undo(*base, undone=n if isinstance(n, int) and not isinstance(n, bool) else None)
    if t == "session/fork":
        return Fork(*base, details=tuple(d.items()))
    if t == "compaction/summary":
        through = summary_through(ev)
        return Summary(*base, text=_text(d.get("summary")), upto=turns[through] if 0 <= through < len(turns) else 0)
    if t == IMPORTED_MESSAGE:
        return Message(*base, role=_text(d.get("role")) or "?", text=_text(d.get("content")), imported=True,
                       name=_str_or_none(d.get("name")) or None)
    return None


def _sent_with(item: Summary, events: Sequence[Event]) -> Summary:
    """``item`` with what the next request sends beside it, as the derivation of ``events`` took it."""
    left = derived(events).compacted.get(item.seq)  # cached: one derivation per log, none without a summary
    return replace(item, void=True) if left is None else replace(item, kept=left.kept, after=left.after)


def items(events: Sequence[Event]) -> list[Item]:
    """Return what a reader sees of ``events``, in log order.

    Args:
        events: a session's events from the first (turn numbers and undone turns are
            counted over all of them; slice the result, not the input, to show a part).

    Returns:
        One :class:`Item` per visible event (see the module docstring for which are).
    """
    undone = undone_turns(events)
    out: list[Item] = []
    numbering = Numbering()
    turns: list[int] = []  # the turn of each event so far
    for ev in events:
        turn = numbering.add(ev)
        turns.append(turn)
        item = _item(ev, turn, undone, turns)
        if isinstance(item, Summary):
            item = _sent_with(item, events)
        if item is not None:
            out.append(item)
    return out


def is_message(item: Item) -> bool:
    """True for messages and tool results (what ``gs diff`` counts), False for turn starts and notes."""
    return isinstance(item, (Message, ShownResult))
