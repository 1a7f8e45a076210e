"""A chat-completions ``messages`` array into session events.

Each user message opens a turn; each assistant message is a step (with its tool calls), tool
messages are its ``tool/result`` events; every turn is closed with ``step/end`` and
``turn/end`` (``completed``, or ``interrupted`` when a tool call was never answered; the
unanswered call gets a synthetic error result). ``system`` and ``developer`` messages, and
tool messages that answer no call, are kept as ignorable ``import/message`` events: stored,
shown in exports, never sent to the model (gs sends the configured system prompt instead).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from ...log.calls import ToolCall, ToolResult
from ...log.events import IMPORTED_MESSAGE, Event, make_event
from ...log.transcript import closing_events

#: Roles a chat-completions (or GeekAgent) message may have.
ROLES = ("system", "developer", "user", "assistant", "tool", "function")
#: The role another tool's reader gives its compaction summary (:func:`turns_from_messages` only):
#: it ends the turn and becomes a ``compaction/summary`` event.
COMPACTION = "compaction"


class _Bad(Exception):
    """Internal: a reason the input is refused (wrapped into :class:`TransferError`)."""


@dataclass(frozen=True)
class EventItem:
    """An event a reader puts among the messages given to :func:`turns_from_messages`, as it is.

    For what another tool kept that is no chat message (llm's system prompt, a
    ``session/system``). Never made from a file's JSON, so a messages file cannot ask for one.

    Attributes:
        type: the event type (known, or ``ignorable``).
        data: its data.
        ignorable: whether a reader may skip it.
    """

    type: str
    data: dict = field(default_factory=dict)
    ignorable: bool = False


#: Put among the messages given to :func:`turns_from_messages` where the source says a turn
#: is over: what follows it up to the next prompt (context the tool injected) is the next
#: turn's, in its commit.
TURN_OVER = object()


class _Builder:
    """Turns a chat-completions messages list into events, one turn per user message."""

    def __init__(self, t: int, model: str | None, where: str):
        self.t = t
        self.model = model
        self.where = where
        self.events: list[Event] = []
        self.notes: list[str] = []
        self.turn = 0
        self.step = 0
        self.in_turn = False
        self.step_open = False
        self.pending: dict[str, str] = {}  # unanswered call id -> tool name, in call order
        self.n_calls = 0

    def add(self, type_: str, data: dict, ignorable: bool = False) -> None:
        self.events.append(make_event(len(self.events), type_, data, time_ms=self.t, ignorable=ignorable))

    def start_turn(self) -> None:
        self.close_turn()
        self.turn += 1
        self.step = 0
        self.add("turn/start", {"turn": self.turn})
        self.in_turn = True

    def end_step(self) -> None:
        if self.step_open:
            self.add("step/end", {"step": self.step})
            self.step_open = False

    def close_turn(self) -> None:
        if not self.in_turn:
            return
        self.end_step()
        unanswered = bool(self.pending)
        if unanswered:
            self.notes.append(f"{self.where}turn {self.turn}: a tool call was never answered; it got an error "
                              "result and the turn was closed as interrupted")
        for type_, data in closing_events(self.events, "interrupted" if unanswered else "completed"):
            self.add(type_, data)
        self.pending.clear()
        self.in_turn = False

    def keep_aside(self, i: int, msg: dict, role: str, content: str, why: str | None) -> None:
        data: dict[str, Any] = {"role": role, "content": content}
        for key in ("name", "tool_call_id"):
            if isinstance(msg.get(key), str):
                data[key] = msg[key]
        self.add(IMPORTED_MESSAGE, data, ignorable=True)
        if why:
            self.notes.append(f"{self.where}message {i}: {why}; kept in the log, not sent to the model")

    def message(self, i: int, msg: Any) -> None:
        at = f"{self.where}message {i}"
        if not isinstance(msg, dict):
            raise _Bad(f"{at} is {_kind(msg)}, not an object")
        role = msg.get("role")
        if not isinstance(role, str):
            raise _Bad(f"{at} has no role")
        if role not in ROLES:
            raise _Bad(f"{at}: role {role!r} is not one of {', '.join(ROLES)}")
        content = _content(msg.get("content"), at)
        if role in ("system", "developer"):
            self.keep_aside(i, msg, role, content, None)
        elif role == "user":
            self.start_turn()
            self.add("user/message", {"content": content})
        elif role == "assistant":
            self.assistant(msg, content, at)
        else:
            self.tool(i, msg, role, content, at)

    def assistant(self, msg: dict, content: str, at: str) -> None:
        calls = []
        raw_calls = msg.get("tool_calls")
        if raw_calls is not None and not isinstance(raw_calls, list):
            raise _Bad(f"{at}: tool_calls is {_kind(raw_calls)}, not an array")
        for j, call in enumerate(raw_calls or []):
            calls.append(self.tool_call(call, f"{at}, tool call {j}"))
        if msg.get("function_call") is not None:  # the legacy single-call form
            calls.append(self.tool_call({"function": msg["function_call"]}, f"{at}, function_call"))
        if not self.in_turn:
            self.start_turn()  # a transcript that opens with the assistant
        self.end_step()
        self.step += 1
        self.add("step/start", {"step": self.step})
        model = msg.get("model") if isinstance(msg.get("model"), str) else self.model
        self.add("assistant/message", {"content": content, "tool_calls": calls,
                                       "finish_reason": "tool_calls" if calls else "stop",
                                       "model": model, "interrupted": False,
                                       "usage": msg["usage"] if isinstance(msg.get("usage"), dict) else None})
        self.step_open = True
        for call in calls:
            self.pending.setdefault(call["id"], call["name"])

    def tool_call(self, call: Any, at: str) -> dict:
        if not isinstance(call, dict):
            raise _Bad(f"{at} is {_kind(call)}, not an object")
        fn = call.get("function")
        if not isinstance(fn, dict):
            raise _Bad(f"{at} has no \"function\" object")
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            raise _Bad(f"{at} has no function name")
        args = fn.get("arguments", "")
        if args is None:
            args = ""
        elif not isinstance(args, str):
            args = json.dumps(args, ensure_ascii=False)
        call_id = call.get("id")
        if call_id is None or call_id == "":
            self.n_calls += 1
            call_id = f"call_imported_{self.n_calls}"
        elif not isinstance(call_id, str):
            raise _Bad(f"{at}: id is {_kind(call_id)}, not a string")
        return ToolCall(call_id, name, args).data()

    def tool(self, i: int, msg: dict, role: str, content: str, at: str) -> None:
        if role == "tool":
            call_id = msg.get("tool_call_id")
            if not isinstance(call_id, str):
                raise _Bad(f"{at}: a tool message needs a string tool_call_id")
        else:  # legacy "function": answers the oldest unanswered call of that name
            name = msg.get("name")
            call_id = next((cid for cid, n in self.pending.items() if n == name), None)
            if call_id is None:
                self.keep_aside(i, msg, role, content, f"function result {name!r} answers no call")
                return
        if not self.in_turn or call_id not in self.pending:
            self.keep_aside(i, msg, role, content, f"tool message answers no tool call (tool_call_id {call_id!r})")
            return
        name = self.pending.pop(call_id)
        self.add("tool/call", {"id": call_id, "name": name})
        self.add("tool/result", ToolResult(call_id, name, content, msg.get("is_error") is True).data())

    def finish(self) -> list[Event]:
        self.close_turn()
        return self.events


#: Times outside these (epoch seconds) are no times a conversation was had: git cannot date a
#: commit before 1970, and a huge one would overflow.
TIMES = (0, 2**32)


def iso_ms(value: Any, *, naive_utc: bool = False) -> int | None:
    """Read another tool's ISO 8601 time (``Z`` or an offset) as epoch ms.

    Args:
        value: the time as the tool wrote it.
        naive_utc: a time without a zone is UTC (the tool says so); else it is no time.

    Returns:
        Epoch ms, or None: not such a time, no zone, or outside :data:`TIMES`.
    """
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00")) if isinstance(value, str) else None
    except ValueError:
        return None
    if moment is None or (moment.tzinfo is None and not naive_utc):
        return None
    ms = int((moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).timestamp() * 1000)
    return ms if TIMES[0] <= ms // 1000 < TIMES[1] else None


def _kind(value: Any) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "a number",
             float: "a number", type(None): "null"}
    return names.get(type(value), type(value).__name__)


def _content(value: Any, at: str) -> str:
    """A message's content as text: a string, null, or a list of content parts."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for j, part in enumerate(value):
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            elif isinstance(part, dict) and isinstance(part.get("type"), str):
                parts.append(f"[{part['type']} part not imported]")
            else:
                raise _Bad(f"{at}: content part {j} is {_kind(part)} without text or type")
        return "\n".join(parts)
    raise _Bad(f"{at}: content is {_kind(value)}, not text")


def _summary(msg: dict, messages: list, upto: list[int], at: str) -> dict[str, Any]:
    """A :data:`COMPACTION` message's ``compaction/summary`` data, the messages it names made seqs.

    ``upto`` holds, per message before it, the seq of the last event given by then (a
    prompt's: its ``user/message``).
    """
    data: dict[str, Any] = {"summary": _content(msg.get("content"), at)}
    through = msg.get("through")
    if isinstance(through, int) and not isinstance(through, bool) and 0 <= through < len(upto) and upto[through] >= 0:
        data["through"] = upto[through]
    kept = [upto[j] for j in msg.get("kept") or () if isinstance(j, int) and not isinstance(j, bool)
            and 0 <= j < len(upto) and isinstance(messages[j], dict) and messages[j].get("role") == "user"]
    if kept:
        data["kept"] = kept
    if isinstance(msg.get("model"), str):
        data["model"] = msg["model"]
    if isinstance(msg.get("usage"), dict):
        data["usage"] = msg["usage"]
    return data


def turns_from_messages(messages: list, times: list[int], *, title: str = "",
                        where: str = "") -> tuple[list[list[Event]], list[str]]:
    """Convert a messages list said at known times into one list of events per commit.

    An import keeps each turn as a commit dated when it was said; this is the split: the
    first list holds what comes before the first prompt (the title, system messages; maybe
    empty), then one list per turn. Every event carries the time of the message it comes
    from; a turn's closing events carry the time of its last message. Seq runs on across
    the lists, so the same messages give the same events, whichever branch they lie on.

    Args:
        messages: chat-completions messages (assistant messages may name their ``model`` and
            ``usage``, as the API's usage object; tool messages say ``is_error``); a
            :data:`COMPACTION` message is a compaction summary (it opens a turn, unless
            the source marks turns' ends; it may name the ``model`` that wrote it, its
            ``usage``, the index of the last message it covers, ``through``, and those of
            the prompts it keeps word for word, ``kept``: the seqs of their events in the
            summary's data); :class:`EventItem` values are kept as they are,
            and :data:`TURN_OVER` marks where the source ends a turn (its time is not used).
        times: each message's time, epoch ms.
        title: a title event opens the log when given.
        where: prefix for messages (``"conversation 2, "``).

    Returns:
        ``(chunks, notes)``.

    Raises:
        TransferError: never; :class:`_Bad` is raised for invalid messages (wrapped by the caller).
    """
    builder = _Builder(times[0] if times else 0, None, where)
    if title:
        builder.add("session/title", {"title": title})
    # Where the source marks turns' ends (Codex), a compaction may fall inside a turn (an
    # automatic one, the context full mid-task): it is that turn's, not a turn of its own.
    opening = ("user",) if any(msg is TURN_OVER for msg in messages) else ("user", COMPACTION)
    upto: list[int] = []  # per message, the seq of the last event given by then (a prompt's: its user/message)
    for i, msg in enumerate(messages):
        if isinstance(msg, dict) and msg.get("role") in opening:
            builder.close_turn()  # at the time of the turn's last message
        if msg is TURN_OVER:
            builder.close_turn()
        elif isinstance(msg, dict) and msg.get("role") == COMPACTION:
            builder.t = times[i]
            builder.add("compaction/summary", _summary(msg, messages, upto, f"{where}message {i}"))
        elif isinstance(msg, EventItem):
            builder.t = times[i]
            builder.add(msg.type, dict(msg.data), msg.ignorable)
        else:
            builder.t = times[i]
            builder.message(i, msg)
        upto.append(len(builder.events) - 1)
    events = builder.finish()
    bounds = [0]  # the first list is empty when the log opens with a prompt
    for i, ev in enumerate(events):
        if ev.type == "turn/start":
            j = i  # what lies between a turn's end and the next start opens the next commit
            while j > bounds[-1] and events[j - 1].type != "turn/end":
                j -= 1
            bounds.append(j if j > bounds[-1] else i)
    bounds.append(len(events))
    return [events[a:b] for a, b in zip(bounds, bounds[1:], strict=False)], builder.notes


def events_from_messages(messages: list, *, time_ms: int, model: str | None = None,
                         where: str = "") -> tuple[list[Event], list[str]]:
    """Convert a chat-completions ``messages`` list into session events.

    Args:
        messages: the messages.
        time_ms: the time given to every event.
        model: the model named on assistant messages that do not name one.
        where: prefix for messages (``"session 'x', "``).

    Returns:
        ``(events, notes)``.

    Raises:
        TransferError: never; :class:`_Bad` is raised for invalid messages (wrapped by the caller).
    """
    builder = _Builder(time_ms, model, where)
    for i, msg in enumerate(messages):
        builder.message(i, msg)
    return builder.finish(), builder.notes
