"""Exports (``gs export``) for people and other tools.

``markdown`` and ``html`` are for reading (title, session, commit, then every message with its
role and time, tool calls and results, interrupted replies and turns that did not complete);
``json`` is exactly the ``gs show --format json`` object; ``jsonl`` is ``session.jsonl`` byte
for byte.
"""

from __future__ import annotations

import datetime as dt
import html
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..events import Event, clean_text
from ..render import dumps, show_object
from ..store import Snapshot
from ..transcript import derive_messages, title_of, undone_turns
from .messages import IMPORTED_MESSAGE

#: ``gs export --format`` values.
EXPORT_FORMATS = ("markdown", "json", "jsonl", "html")


def event_time(ms: int) -> str:
    """Return epoch milliseconds as local ISO 8601 with the UTC offset, to the second."""
    try:
        return dt.datetime.fromtimestamp(ms / 1000).astimezone().isoformat(timespec="seconds")
    except (OverflowError, OSError, ValueError, TypeError):
        return str(ms)


@dataclass
class _Item:
    """One thing a readable export shows, in log order."""

    kind: str  # turn | message | tool_call | tool_result | turn_end | note | summary
    time: int
    data: dict[str, Any] = field(default_factory=dict)


def _items(events: Sequence[Event]) -> Iterator[_Item]:
    undone = undone_turns(events)
    turn = 0
    for ev in events:
        d, t = ev.data, ev.type
        if t == "turn/start":
            turn = d.get("turn", turn + 1)
            yield _Item("turn", ev.time, {"turn": turn, "undone": turn in undone})
        elif t == "user/message":
            yield _Item("message", ev.time, {"role": "user", "content": str(d.get("content", ""))})
        elif t == "assistant/message":
            content = d.get("content")
            content = content if isinstance(content, str) else ""
            calls = [c for c in d.get("tool_calls") or [] if isinstance(c, dict)]
            yield _Item("message", ev.time, {"role": "assistant", "content": content, "calls": len(calls),
                                             "model": d.get("model"), "interrupted": bool(d.get("interrupted"))})
            for call in calls:
                yield _Item("tool_call", ev.time, {"id": str(call.get("id") or ""), "name": str(call.get("name", "")),
                                                   "arguments": str(call.get("arguments") or "")})
        elif t == "tool/result":
            yield _Item("tool_result", ev.time, {
                "id": str(d.get("id") or ""), "name": str(d.get("name") or ""), "content": str(d.get("content", "")),
                "is_error": bool(d.get("is_error")), "error_code": d.get("error_code")})
        elif t == "turn/end" and d.get("reason") != "completed":
            yield _Item("turn_end", ev.time, {"reason": str(d.get("reason")), "error": d.get("error")})
        elif t == "session/title":
            yield _Item("note", ev.time, {"text": f"title set to: {d.get('title', '')}"})
        elif t == "session/undo":
            yield _Item("note", ev.time, {"text": f"turn {d.get('turn')} undone (the model no longer sees it)"})
        elif t == "session/fork":
            yield _Item("note", ev.time, {"text": "forked"})
        elif t == "compaction/summary":
            yield _Item("summary", ev.time, {"content": str(d.get("summary", ""))})
        elif t == IMPORTED_MESSAGE:
            yield _Item("message", ev.time, {"role": str(d.get("role", "?")), "content": str(d.get("content", "")),
                                             "note": "imported; not sent to the model"})


def _meta(snap: Snapshot) -> tuple[str, list[tuple[str, str]]]:
    title = title_of(snap.events) or snap.session_id
    rows = [("Session", snap.session_id), ("Commit", snap.commit)]
    created = snap.header.get("created")
    if isinstance(created, int) and not isinstance(created, bool):
        rows.append(("Created", event_time(created)))
    models = sorted({str(e.data["model"]) for e in snap.events
                     if e.type == "assistant/message" and e.data.get("model")})
    if models:
        rows.append(("Model", ", ".join(models)))
    turns = sum(1 for e in snap.events if e.type == "turn/start")
    rows.append(("Turns", str(turns)))
    rows.append(("Messages", str(len(derive_messages(snap.events)))))
    return title, rows


def _fence(text: str, info: str = "") -> str:
    """Return ``text`` in a code fence longer than any backtick run inside it."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    bar = "`" * max(3, longest + 1)
    return f"{bar}{info}\n{text}\n{bar}"


def _code(text: str) -> str:
    """Return ``text`` as a markdown code span (safe for backticks inside)."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    bar = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{bar}{pad}{text}{pad}{bar}"


def _turn_end_text(d: dict) -> str:
    return f"turn ended: {d['reason']}" + (f" — {d['error']}" if d.get("error") else "")


def export_markdown(snap: Snapshot) -> str:
    """Return the session as a Markdown document for reading."""
    title, rows = _meta(snap)
    out = [f"# {title}", ""]
    out += [f"- **{k}:** {_code(v) if k in ('Session', 'Commit') else v}" for k, v in rows]
    for item in _items(snap.events):
        d = item.data
        when = event_time(item.time)
        if item.kind == "turn":
            out += ["", "---", "", f"## Turn {d['turn']}" + (" (undone)" if d["undone"] else "")]
        elif item.kind == "message":
            extra = f" · {d['model']}" if d.get("model") else ""
            extra += f" · *{d['note']}*" if d.get("note") else ""
            out += ["", f"### {d['role']} · {when}{extra}"]
            if d["content"] or not d.get("calls"):
                out += ["", d["content"] if d["content"] else "*(no text)*"]
            if d.get("interrupted"):
                out += ["", "*[interrupted: the reply was cut short]*"]
        elif item.kind == "tool_call":
            out += ["", f"**tool call** {_code(d['name'])} ({_code(d['id'])}) · {when}", "",
                    _fence(d["arguments"], "json")]
        elif item.kind == "tool_result":
            flag = f" · **error** ({d['error_code']})" if d["is_error"] and d.get("error_code") else \
                (" · **error**" if d["is_error"] else "")
            out += ["", f"**tool result** {_code(d['name'])} ({_code(d['id'])}) · {when}{flag}", "",
                    _fence(d["content"])]
        elif item.kind == "turn_end":
            out += ["", f"> **{_turn_end_text(d)}** · {when}"]
        elif item.kind == "note":
            out += ["", f"*({d['text']} · {when})*"]
        elif item.kind == "summary":
            out += ["", f"### summary of the earlier conversation · {when}", "", d["content"]]
    return clean_text("\n".join(out).rstrip("\n") + "\n")


_CSS = """\
body{font:15px/1.5 system-ui,-apple-system,sans-serif;max-width:50rem;margin:2rem auto;padding:0 1rem;color:#1f2328}
h1{font-size:1.5rem;margin-bottom:.3rem}
h2{font-size:1.1rem;border-top:1px solid #d0d7de;padding-top:1rem;margin-top:2rem}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.1rem 1rem;font-size:.9rem}dt{color:#59636e}dd{margin:0}
.msg,.tool{border-left:4px solid #d0d7de;padding:.3rem .8rem;margin:.7rem 0}
.user{border-color:#0969da}.assistant{border-color:#1a7f37}.tool{border-color:#9a6700;font-size:.92rem}
.system,.developer,.imported{border-color:#8c959f;background:#f6f8fa}
.meta{font-size:.82rem;color:#59636e}.role{font-weight:600;color:#1f2328}
.text{white-space:pre-wrap;overflow-wrap:anywhere}
pre{white-space:pre-wrap;overflow-wrap:anywhere;background:#f6f8fa;padding:.4rem .6rem;margin:.3rem 0}
.mark{color:#9a6700;font-style:italic}.error{color:#cf222e}.undone{opacity:.55}
"""


def export_html(snap: Snapshot) -> str:
    """Return the session as a standalone HTML page (all content escaped, inline CSS)."""
    e = html.escape
    title, rows = _meta(snap)
    out = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f"<title>{e(title)}</title>", f"<style>\n{_CSS}</style>", "</head>", "<body>",
           f"<header><h1>{e(title)}</h1>", "<dl>"]
    out += [f"<dt>{e(k)}</dt><dd>{f'<code>{e(v)}</code>' if k in ('Session', 'Commit') else e(v)}</dd>"
            for k, v in rows]
    out += ["</dl></header>", "<main>"]
    in_section = False
    for item in _items(snap.events):
        d = item.data
        when = f'<time datetime="{e(event_time(item.time))}">{e(event_time(item.time))}</time>'
        if item.kind == "turn":
            if in_section:
                out.append("</section>")
            cls = ' class="undone"' if d["undone"] else ""
            out.append(f"<section{cls}><h2>Turn {e(str(d['turn']))}{' (undone)' if d['undone'] else ''}</h2>")
            in_section = True
        elif item.kind == "message":
            role = d["role"]
            cls = re.sub(r"[^a-z]", "", role.lower()) or "other"
            if d.get("note"):
                cls += " imported"
            meta = f'<span class="role">{e(role)}</span> · {when}'
            if d.get("model"):
                meta += f" · {e(str(d['model']))}"
            if d.get("note"):
                meta += f' · <span class="mark">{e(d["note"])}</span>'
            body = f'<div class="text">{e(d["content"])}</div>' if d["content"] else \
                ("" if d.get("calls") else '<div class="mark">(no text)</div>')
            mark = '<div class="mark">[interrupted: the reply was cut short]</div>' if d.get("interrupted") else ""
            out.append(f'<article class="msg {cls}"><div class="meta">{meta}</div>{body}{mark}</article>')
        elif item.kind == "tool_call":
            out.append(f'<div class="tool call"><div class="meta"><span class="role">tool call</span> '
                       f'<code>{e(d["name"])}</code> ({e(d["id"])}) · {when}</div><pre>{e(d["arguments"])}</pre></div>')
        elif item.kind == "tool_result":
            flag = ""
            if d["is_error"]:
                code = f" ({e(str(d['error_code']))})" if d.get("error_code") else ""
                flag = f' · <span class="error">error{code}</span>'
            out.append(f'<div class="tool result"><div class="meta"><span class="role">tool result</span> '
                       f'<code>{e(d["name"])}</code> ({e(d["id"])}) · {when}{flag}</div>'
                       f'<pre>{e(d["content"])}</pre></div>')
        elif item.kind == "turn_end":
            out.append(f'<p class="mark error">{e(_turn_end_text(d))} · {when}</p>')
        elif item.kind == "note":
            out.append(f'<p class="mark">({e(d["text"])} · {when})</p>')
        elif item.kind == "summary":
            out.append(f'<article class="msg summary"><div class="meta"><span class="role">summary of the earlier '
                       f'conversation</span> · {when}</div><div class="text">{e(d["content"])}</div></article>')
    if in_section:
        out.append("</section>")
    out += ["</main>", "</body>", "</html>"]
    return clean_text("\n".join(out) + "\n")


def export_bytes(snap: Snapshot, fmt: str) -> bytes:
    """Return the export of ``snap`` in ``fmt`` (one of :data:`EXPORT_FORMATS`) as UTF-8 bytes.

    ``json`` is exactly what ``gs show --format json`` prints; ``jsonl`` is ``snap.raw``.

    Raises:
        ValueError: an unknown format.
    """
    if fmt == "jsonl":
        return snap.raw
    if fmt == "json":
        return clean_text(dumps(show_object(snap)) + "\n").encode("utf-8")
    if fmt == "markdown":
        return export_markdown(snap).encode("utf-8")
    if fmt == "html":
        return export_html(snap).encode("utf-8")
    raise ValueError(f"unknown export format {fmt!r}; use one of {', '.join(EXPORT_FORMATS)}")
