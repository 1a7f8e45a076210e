"""Exports (``gs export``) for people and other tools.

``markdown`` and ``html`` are for reading (title, session, commit, then every message with its
role and time, tool calls and results, interrupted replies and turns that did not complete):
both render :func:`gitsessions.log.view.items`, as ``gs show`` does. ``json`` is exactly the
``gs show --format json`` object; ``jsonl`` is ``session.jsonl`` byte for byte.
"""

from __future__ import annotations

import datetime as dt
import html
import re
from typing import Any

from ..log import view
from ..log.events import clean_text
from ..log.transcript import derive_messages, title_of
from ..log.turns import turn_count
from ..store import Snapshot
from ..text import dumps, fence

#: ``gs export --format`` values.
EXPORT_FORMATS = ("markdown", "json", "jsonl", "html")


def show_object(snap: Snapshot, *, full: bool = False) -> dict[str, Any]:
    """Return the ``gs show --format json`` object: ``id``, ``commit``, ``header``, ``events``, ``messages``.

    ``messages`` are what the next request sends; ``full``: as if no compaction was made
    (every message, none given way to a summary).
    """
    events = [e for e in snap.events if e.type != "compaction/summary"] if full else snap.events
    return {
        "id": snap.session_id,
        "commit": snap.commit,
        "header": snap.header,
        "events": [e.to_dict() for e in snap.events],
        "messages": derive_messages(events),
    }


def event_time(ms: int) -> str:
    """Return epoch milliseconds as local ISO 8601 with the UTC offset, to the second."""
    try:
        return dt.datetime.fromtimestamp(ms / 1000).astimezone().isoformat(timespec="seconds")
    except (OverflowError, OSError, ValueError, TypeError):
        return str(ms)


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
    rows.append(("Turns", str(turn_count(snap.events))))
    rows.append(("Messages", str(len(derive_messages(snap.events)))))
    return title, rows


def _code(text: str) -> str:
    """Return ``text`` as a markdown code span (safe for backticks inside)."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    bar = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{bar}{pad}{text}{pad}{bar}"


def _turn_end_text(item: view.TurnEnd) -> str:
    return f"turn ended: {item.reason}" + (f" — {item.error}" if item.error else "")


#: What an export says of a message an import kept aside.
_IMPORTED_NOTE = "imported; not sent to the model"


def _note_text(item: view.Item) -> str | None:
    """The words of a title change, a setting, a permission, an undo or a fork, else None."""
    if isinstance(item, view.TitleChange):
        return f"title set to: {item.title}"
    if isinstance(item, (view.Setting, view.Permission)):
        return item.text
    if isinstance(item, view.Undo):
        return f"turn {item.undone} undone (the model no longer sees it)"
    if isinstance(item, view.Fork):
        return "forked"
    return None


def export_markdown(snap: Snapshot) -> str:
    """Return the session as a Markdown document for reading."""
    title, rows = _meta(snap)
    out = [f"# {title}", ""]
    out += [f"- **{k}:** {_code(v) if k in ('Session', 'Commit') else v}" for k, v in rows]
    for item in view.items(snap.events):
        when = event_time(item.time)
        note = _note_text(item)
        if isinstance(item, view.TurnStart):
            out += ["", "---", "", f"## Turn {item.turn}" + (" (undone)" if item.undone else "")]
        elif isinstance(item, view.Message):
            extra = f" · {item.model}" if item.model else ""
            extra += f" · *{_IMPORTED_NOTE}*" if item.imported else ""
            out += ["", f"### {item.what} · {when}{extra}"]
            if item.text or not item.tool_calls:
                out += ["", item.text if item.text else "*(no text)*"]
            if item.interrupted:
                out += ["", "*[interrupted: the reply was cut short]*"]
            for call in item.tool_calls:
                out += ["", f"**tool call** {_code(call.name or '')} ({_code(call.id or '')}) · {when}", "",
                        fence(call.arguments or "", "json")]
        elif isinstance(item, view.ShownResult):
            flag = f" · **error** ({item.error_code})" if item.is_error and item.error_code else \
                (" · **error**" if item.is_error else "")
            out += ["", f"**tool result** {_code(item.name or '')} ({_code(item.call_id or '')}) · {when}{flag}", "",
                    fence(item.text)]
        elif isinstance(item, view.TurnEnd):
            out += ["", f"> **{_turn_end_text(item)}** · {when}"]
        elif note is not None:
            out += ["", f"*({note} · {when})*"]
        elif isinstance(item, view.Summary):
            out += ["", f"### summary of the earlier conversation · {when}", "", item.text]
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
    for item in view.items(snap.events):
        when = f'<time datetime="{e(event_time(item.time))}">{e(event_time(item.time))}</time>'
        note = _note_text(item)
        if isinstance(item, view.TurnStart):
            if in_section:
                out.append("</section>")
            cls = ' class="undone"' if item.undone else ""
            out.append(f"<section{cls}><h2>Turn {e(str(item.turn))}{' (undone)' if item.undone else ''}</h2>")
            in_section = True
        elif isinstance(item, view.Message):
            cls = re.sub(r"[^a-z]", "", item.role.lower()) or "other"
            if item.imported:
                cls += " imported"
            meta = f'<span class="role">{e(item.what)}</span> · {when}'
            if item.model:
                meta += f" · {e(item.model)}"
            if item.imported:
                meta += f' · <span class="mark">{e(_IMPORTED_NOTE)}</span>'
            body = f'<div class="text">{e(item.text)}</div>' if item.text else \
                ("" if item.tool_calls else '<div class="mark">(no text)</div>')
            mark = '<div class="mark">[interrupted: the reply was cut short]</div>' if item.interrupted else ""
            out.append(f'<article class="msg {cls}"><div class="meta">{meta}</div>{body}{mark}</article>')
            for call in item.tool_calls:
                out.append(f'<div class="tool call"><div class="meta"><span class="role">tool call</span> '
                           f'<code>{e(call.name or "")}</code> ({e(call.id or "")}) · {when}</div>'
                           f'<pre>{e(call.arguments or "")}</pre></div>')
        elif isinstance(item, view.ShownResult):
            flag = ""
            if item.is_error:
                code = f" ({e(item.error_code)})" if item.error_code else ""
                flag = f' · <span class="error">error{code}</span>'
            out.append(f'<div class="tool result"><div class="meta"><span class="role">tool result</span> '
                       f'<code>{e(item.name or "")}</code> ({e(item.call_id or "")}) · {when}{flag}</div>'
                       f'<pre>{e(item.text)}</pre></div>')
        elif isinstance(item, view.TurnEnd):
            out.append(f'<p class="mark error">{e(_turn_end_text(item))} · {when}</p>')
        elif note is not None:
            out.append(f'<p class="mark">({e(note)} · {when})</p>')
        elif isinstance(item, view.Summary):
            out.append(f'<article class="msg summary"><div class="meta"><span class="role">summary of the earlier '
                       f'conversation</span> · {when}</div><div class="text">{e(item.text)}</div></article>')
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
