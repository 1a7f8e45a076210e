"""Turning sessions, logs and listings into text and JSON for people and scripts.

JSON shapes here are the stable, documented output of ``--json`` / ``--format json``
(README, "Commands"). Times are ISO 8601 with the committer's UTC offset.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Sequence
from typing import Any

from .events import Event
from .rules import turns_of
from .store import CommitInfo, SessionInfo, Snapshot
from .transcript import derive_messages

_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x9b]")


def terminal_safe(text: str) -> str:
    """Return ``text`` with control characters (ESC, NUL, ...; not newline or tab) shown as
    ``^X``, so that content from a model or a file cannot drive the terminal.
    """
    return _UNSAFE.sub(lambda m: "^" + chr((ord(m.group()) + 64) % 128) if ord(m.group()) < 128 else "^[", text)


def iso_time(epoch_s: int, tz_offset_s: int = 0) -> str:
    """Return ``epoch_s`` as ISO 8601 in the given UTC offset (seconds)."""
    tz = dt.timezone(dt.timedelta(seconds=tz_offset_s))
    return dt.datetime.fromtimestamp(epoch_s, tz).isoformat()


def local_time(epoch_s: int) -> str:
    """Return ``epoch_s`` as ``YYYY-MM-DD HH:MM`` local time, for tables."""
    return dt.datetime.fromtimestamp(epoch_s).strftime("%Y-%m-%d %H:%M")


def session_row(info: SessionInfo) -> dict[str, Any]:
    """Return the ``gs list --json`` object of one session.

    Keys: ``id``, ``title``, ``turns``, ``messages``, ``saved`` (ISO 8601), ``commit``,
    ``forked_from`` (``"<session>@<commit>"`` from the tip's ``Forked-From`` trailer, else
    null), ``error`` (null unless the session could not be read).
    """
    t = info.message.fields
    return {
        "id": info.session_id,
        "title": t.title or "",
        "turns": t.turn or 0,
        "messages": t.messages or 0,
        "saved": iso_time(info.time) if info.time else None,
        "commit": info.tip,
        "forked_from": str(t.forked_from) if t.forked_from else None,
        "error": info.error,
    }


def commit_row(info: CommitInfo) -> dict[str, Any]:
    """Return the ``gs log --json`` object of one commit.

    Keys: ``commit``, ``parents``, ``time`` (ISO 8601), ``turn`` (int or null), ``subject``,
    ``model`` (or null), ``events`` (``"a-b"`` or null), ``forked_from``
    (``"<session>@<commit>"`` from the ``Forked-From`` trailer, or null), ``trailers`` (all).
    """
    t = info.message.fields
    return {
        "commit": info.commit,
        "parents": info.parents,
        "time": iso_time(info.time, info.tz_offset),
        "turn": t.turn,
        "subject": info.message.subject,
        "model": t.model,
        "events": info.message.trailers.get("Events"),
        "forked_from": str(t.forked_from) if t.forked_from else None,
        "trailers": dict(info.message.trailers),
    }


def show_object(snap: Snapshot) -> dict[str, Any]:
    """Return the ``gs show --format json`` object: ``id``, ``commit``, ``header``, ``events``, ``messages``."""
    return {
        "id": snap.session_id,
        "commit": snap.commit,
        "header": snap.header,
        "events": [e.to_dict() for e in snap.events],
        "messages": derive_messages(snap.events),
    }


def dumps(obj: Any) -> str:
    """Return pretty, stable JSON (UTF-8 text, not ASCII-escaped)."""
    return json.dumps(obj, ensure_ascii=False, indent=2)


def transcript_text(events: Sequence[Event]) -> str:
    """Return a readable plain-text transcript: one block per message, tool calls inline."""
    out: list[str] = []
    for ev in events:
        d = ev.data
        if ev.type == "turn/start":
            out.append(f"── turn {d.get('turn')} ──")
        elif ev.type == "user/message":
            out.append("you › " + str(d.get("content", "")))
        elif ev.type == "assistant/message":
            text = str(d.get("content") or "")
            if text:
                mark = " [interrupted]" if d.get("interrupted") else ""
                out.append(f"assistant › {text}{mark}")
            for call in d.get("tool_calls") or []:
                out.append(f"  ⚙ {call.get('name')}({call.get('arguments') or ''})")
        elif ev.type == "tool/result":
            flag = " (error)" if d.get("is_error") else ""
            out.append(f"  ↳ {d.get('content', '')}{flag}")
        elif ev.type == "turn/end" and d.get("reason") != "completed":
            why = f": {d['error']}" if d.get("error") else ""
            out.append(f"  (turn ended: {d.get('reason')}{why})")
        elif ev.type == "session/title":
            out.append(f"(title: {d.get('title', '')})")
        elif ev.type == "session/undo":
            out.append(f"(undo: turn {d.get('turn')} dropped from what the model sees)")
        elif ev.type == "compaction/summary":
            out.append(f"(summary: {d.get('summary', '')})")
    return terminal_safe("\n".join(out) + ("\n" if out else ""))


# -- compact rendering of the events a commit (or one side of a diff) added ---------------

#: Longest tool result / tool-call argument shown by the compact rendering, characters.
COMPACT_TOOL_CHARS = 200


def fold(text: str) -> str:
    """Return ``text`` on one line: every run of whitespace (newlines too) becomes one space."""
    return " ".join(text.split())


def clip(text: str, limit: int) -> str:
    """Return ``text`` cut to ``limit`` characters, ending in ``…`` when cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def message_items(events: Sequence[Event], turns: Sequence[int] | None = None) -> list[dict[str, Any]]:
    """Return the readable items of ``events`` as JSON objects (``gs diff --json``, ``log -p --json``).

    Each item has ``seq``, ``turn``, ``type`` (the event type) and ``role``: ``user``,
    ``assistant`` (``content``, ``tool_calls`` [{id, name, arguments}], ``interrupted``),
    ``tool`` (``tool_call_id``, ``name``, ``content``, ``is_error``) or ``note`` (a turn that
    did not complete, a title, an undo, a summary: ``content`` says what).
    """
    turns = list(turns) if turns is not None else turns_of(events)
    out: list[dict[str, Any]] = []
    for ev, turn in zip(events, turns, strict=True):
        d = ev.data
        base: dict[str, Any] = {"seq": ev.seq, "turn": turn, "type": ev.type}
        if ev.type == "user/message":
            out.append({**base, "role": "user", "content": str(d.get("content", ""))})
        elif ev.type == "assistant/message":
            calls = [{"id": c.get("id"), "name": c.get("name"), "arguments": c.get("arguments")}
                     for c in d.get("tool_calls") or [] if isinstance(c, dict)]
            content = d.get("content") if isinstance(d.get("content"), str) else ""
            if not content and not calls and not d.get("interrupted"):
                continue
            out.append({**base, "role": "assistant", "content": content, "tool_calls": calls,
                        "interrupted": bool(d.get("interrupted"))})
        elif ev.type == "tool/result":
            out.append({**base, "role": "tool", "tool_call_id": d.get("id"), "name": d.get("name"),
                        "content": str(d.get("content", "")), "is_error": bool(d.get("is_error"))})
        else:
            note = _note(ev)
            if note:
                out.append({**base, "role": "note", "content": note})
    return out


def _note(ev: Event) -> str | None:
    d = ev.data
    if ev.type == "turn/end" and d.get("reason") != "completed":
        why = f": {fold(str(d['error']))}" if d.get("error") else ""
        return f"turn {d.get('turn')} ended: {d.get('reason')}{why}"
    if ev.type == "session/title":
        return f"title: {d.get('title', '')}"
    if ev.type == "session/undo":
        return f"undo: turn {d.get('turn')}"
    if ev.type == "compaction/summary":
        return f"summary: {clip(fold(str(d.get('summary', ''))), COMPACT_TOOL_CHARS)}"
    if ev.type == "session/fork":
        return "fork: " + ", ".join(f"{k}={v}" for k, v in d.items())
    return None


def count_messages(items: Sequence[dict[str, Any]]) -> int:
    """Return how many of :func:`message_items` are messages (user, assistant, tool), not notes."""
    return sum(1 for i in items if i["role"] != "note")


def compact_lines(items: Sequence[dict[str, Any]], indent: str = "    ") -> list[str]:
    """Render :func:`message_items` compactly, one block per item (``gs log -p``, ``gs diff``).

    ``user: ...`` and ``assistant: ...`` keep their text (continuation lines indented),
    ``[interrupted]`` marks a cut-off reply, tool calls are ``⚙ name(args)`` and results
    ``↳ ...`` on one clipped line, and notes (a turn that ended early, titles, undo) sit in
    parentheses.
    """
    out: list[str] = []

    def block(label: str, text: str) -> None:
        lines = text.split("\n") if text else [""]
        pad = indent + " " * len(label)
        out.append(f"{indent}{label}{lines[0]}".rstrip())
        out.extend(f"{pad}{line}".rstrip() for line in lines[1:])

    for item in items:
        role = item["role"]
        if role == "user":
            block("user: ", item["content"])
        elif role == "assistant":
            mark = " [interrupted]" if item["interrupted"] else ""
            if item["content"] or not item["tool_calls"]:
                block("assistant: ", item["content"] + mark)
                mark = ""
            for call in item["tool_calls"]:
                args = clip(fold(str(call.get("arguments") or "")), COMPACT_TOOL_CHARS)
                out.append(f"{indent}⚙ {call.get('name')}({args}){mark}")
        elif role == "tool":
            flag = " (error)" if item["is_error"] else ""
            out.append(f"{indent}↳ {clip(fold(item['content']), COMPACT_TOOL_CHARS)}{flag}")
        else:
            out.append(f"{indent}({item['content']})")
    return out


def snippet(text: str, start: int, end: int, context: int = 40) -> str:
    """Return ``text[start:end]`` with ``context`` characters either side, on one line.

    Newlines (and every whitespace run) are folded to one space; ``…`` marks a cut.
    """
    lo, hi = max(0, start - context), min(len(text), end + context)
    head = "…" if lo > 0 else ""
    tail = "…" if hi < len(text) else ""
    return head + fold(text[lo:hi]) + tail


def find_folded(text: str, needle_folded: str) -> tuple[int, int] | None:
    """Find ``needle_folded`` (already casefolded) in ``text`` ignoring case.

    Returns:
        ``(start, end)`` indexes into ``text`` itself (casefolding may change lengths, as
        ``ß`` -> ``ss``), or None.
    """
    if not needle_folded:
        return None
    folded: list[str] = []
    origin: list[int] = []  # index in text of each folded character
    for i, ch in enumerate(text):
        f = ch.casefold()
        folded.append(f)
        origin.extend([i] * len(f))
    flat = "".join(folded)
    pos = flat.find(needle_folded)
    if pos < 0:
        return None
    last = pos + len(needle_folded) - 1
    return origin[pos], origin[last] + 1
