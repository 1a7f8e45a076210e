"""Turning sessions, logs and listings into text and JSON for people and scripts.

JSON shapes here are the stable, documented output of ``--json`` / ``--format json``
(README, "Commands"). Times are ISO 8601 with the committer's UTC offset.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from typing import Any

from .events import Event
from .store import CommitInfo, SessionInfo, Snapshot
from .transcript import derive_messages


def iso_time(epoch_s: int, tz_offset_s: int = 0) -> str:
    """Return ``epoch_s`` as ISO 8601 in the given UTC offset (seconds)."""
    tz = dt.timezone(dt.timedelta(seconds=tz_offset_s))
    return dt.datetime.fromtimestamp(epoch_s, tz).isoformat()


def local_time(epoch_s: int) -> str:
    """Return ``epoch_s`` as ``YYYY-MM-DD HH:MM`` local time, for tables."""
    return dt.datetime.fromtimestamp(epoch_s).strftime("%Y-%m-%d %H:%M")


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def session_row(info: SessionInfo) -> dict[str, Any]:
    """Return the ``gs list --json`` object of one session.

    Keys: ``id``, ``title``, ``turns``, ``messages``, ``saved`` (ISO 8601), ``commit``,
    ``error`` (null unless the session could not be read).
    """
    t = info.message.trailers
    return {
        "id": info.session_id,
        "title": t.get("Title", ""),
        "turns": _int(t.get("Turn")) or 0,
        "messages": _int(t.get("Messages")) or 0,
        "saved": iso_time(info.time) if info.time else None,
        "commit": info.tip,
        "error": info.error,
    }


def commit_row(info: CommitInfo) -> dict[str, Any]:
    """Return the ``gs log --json`` object of one commit.

    Keys: ``commit``, ``parents``, ``time`` (ISO 8601), ``turn`` (int or null), ``subject``,
    ``model`` (or null), ``events`` (``"a-b"`` or null), ``trailers`` (all of them).
    """
    t = info.message.trailers
    return {
        "commit": info.commit,
        "parents": info.parents,
        "time": iso_time(info.time, info.tz_offset),
        "turn": _int(t.get("Turn")),
        "subject": info.message.subject,
        "model": t.get("Model"),
        "events": t.get("Events"),
        "trailers": dict(t),
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
    return "\n".join(out) + ("\n" if out else "")
