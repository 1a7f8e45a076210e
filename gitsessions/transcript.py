"""The derived transcript: events -> chat-completions messages, and closing unfinished turns.

The model never sees the log; it sees the messages :func:`derive_messages` derives from it
(design.md, "The derived transcript"). Whatever the log holds, the result is a valid
chat-completions transcript: every assistant tool call is answered by exactly one tool
message right after it, no tool message answers nothing, strings are well-formed Unicode.

A turn that did not finish (a crash, Ctrl+C, an API error) is closed by *appending* the
events :func:`closing_events` returns — never by cutting the log (seed design record).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .events import Event, clean_text
from .turns import last_turn, turn_count, turn_number

__all__ = [
    "CANCELLED", "NOT_STARTED", "OUTCOME_UNKNOWN", "closing_events", "derive_messages", "open_turn",
    "title_of", "turn_count", "undone_turns",
]

#: ``tool/result.error_code`` for a call the assistant asked for that never started.
NOT_STARTED = "not_started"
#: ``tool/result.error_code`` for a call that started but whose outcome was never recorded.
OUTCOME_UNKNOWN = "outcome_unknown"
#: ``tool/result.error_code`` for a call skipped because the user cancelled the reply.
CANCELLED = "cancelled"

_SYNTHETIC_CONTENT = {
    NOT_STARTED: "error: this tool call was never run (the turn ended before it started).",
    OUTCOME_UNKNOWN: (
        "error: this tool call was started but its outcome is unknown (the turn was "
        "interrupted). Do not blindly retry it: check first whether it already took effect."
    ),
    CANCELLED: "error: this tool call was not run because the user cancelled the reply.",
}


def undone_turns(events: Sequence[Event]) -> set[int]:
    """Return the turn numbers that ``session/undo`` events dropped from the transcript."""
    return {e.data["turn"] for e in events if e.type == "session/undo" and isinstance(e.data.get("turn"), int)}


def derive_messages(events: Sequence[Event]) -> list[dict[str, Any]]:
    """Derive the chat-completions ``messages`` list from a session's events.

    Args:
        events: the log after the header, in seq order (any content, any interruption).

    Returns:
        Messages as dicts: ``{"role": "user", "content": str}``,
        ``{"role": "assistant", "content": str, "tool_calls": [...]}`` (``tool_calls``
        only when non-empty, in the API's ``{"id", "type": "function", "function": {"name",
        "arguments"}}`` shape) and ``{"role": "tool", "tool_call_id": str, "content": str}``.
        A ``compaction/summary`` replaces what it covers with one user message holding the
        summary. Undone turns are left out.
    """
    undone = undone_turns(events)
    messages: list[dict[str, Any]] = []
    pending: list[tuple[str, str]] = []  # (call id, name) awaiting a result, in call order
    results: dict[Any, str] = {}
    started: set[str] = set()  # pending calls a tool/call event shows began
    turn = 0

    def flush() -> None:
        for call_id, _name in pending:
            content = results.get(call_id)
            if content is None:
                code = OUTCOME_UNKNOWN if call_id in started else NOT_STARTED
                content = _SYNTHETIC_CONTENT[code]
            messages.append({"role": "tool", "tool_call_id": call_id, "content": content})
        pending.clear()
        results.clear()
        started.clear()

    for ev in events:
        if ev.type == "turn/start":
            turn = turn_number(ev.data, turn)
            continue
        if turn in undone:
            continue
        d = ev.data
        if ev.type == "user/message":
            flush()
            messages.append({"role": "user", "content": clean_text(str(d.get("content", "")))})
        elif ev.type == "assistant/message":
            flush()
            calls: list[dict[str, Any]] = []
            seen: set[str] = set()
            for call in d.get("tool_calls") or []:
                # Compare cleaned ids: two lone surrogates both become U+FFFD.
                call_id = clean_text(str(call.get("id") or ""))
                if not call_id or call_id in seen:
                    continue  # an id we could never answer unambiguously
                seen.add(call_id)
                calls.append(
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {
                            "name": clean_text(str(call.get("name", ""))),
                            "arguments": clean_text(str(call.get("arguments", "") or "")),
                        },
                    }
                )
            content = d.get("content")
            content = clean_text(content) if isinstance(content, str) else ""
            if not content and not calls:
                continue  # an interrupted reply that produced nothing
            # "" rather than null beside tool calls: some servers (llama.cpp) refuse null.
            msg: dict[str, Any] = {"role": "assistant", "content": content}
            if calls:
                msg["tool_calls"] = calls
            messages.append(msg)
            pending.extend((c["id"], c["function"]["name"]) for c in calls)
        elif ev.type == "tool/call":
            cid = d.get("id")
            if isinstance(cid, str) and any(clean_text(cid) == p for p, _ in pending):
                started.add(clean_text(cid))
        elif ev.type == "tool/result":
            cid = d.get("id")
            cid = clean_text(cid) if isinstance(cid, str) else cid
            if any(cid == p for p, _ in pending) and cid not in results:
                results[cid] = clean_text(str(d.get("content", "")))
        elif ev.type == "compaction/summary":
            flush()
            messages.clear()
            summary = clean_text(str(d.get("summary", "")))
            messages.append({"role": "user", "content": "Summary of the conversation so far:\n" + summary})
    flush()
    return messages


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
    turn = last_turn(events[: start + 1])
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
        out.append(
            ("tool/result", {"id": call_id, "name": name, "content": _SYNTHETIC_CONTENT[code],
                             "is_error": True, "error_code": code})
        )
    if open_step is not None:
        out.append(("step/end", {"step": open_step}))
    out.append(("turn/end", {"turn": turn, "reason": reason}))
    return out


def title_of(events: Sequence[Event]) -> str:
    """Return the session title: the last ``session/title``, else the first prompt's first line."""
    title = ""
    for ev in events:
        if ev.type == "session/title":
            title = str(ev.data.get("title", ""))
        elif ev.type == "user/message" and not title:
            title = str(ev.data.get("content", "")).strip().split("\n", 1)[0]
    return title
