"""Export sessions for people and other tools, and import conversations from files.

Exports (``gs export``): ``markdown`` and ``html`` are for reading (title, session, commit,
then every message with its role and time, tool calls and results, interrupted replies and
turns that did not complete); ``json`` is exactly the ``gs show --format json`` object;
``jsonl`` is ``session.jsonl`` byte for byte.

Imports (``gs import``), the format detected from the content:

- gs's own ``jsonl`` export: the header and events are kept exactly (same seq, time, type and
  data), so the imported ``session.jsonl`` is byte-identical to the file (a turn left open
  in the file is closed by appending events, as after a crash).
- gs's own ``json`` export (the ``gs show --format json`` object): its ``header`` and
  ``events``, the same way.
- a chat-completions ``messages`` array, or an object with a ``messages`` key: each user
  message opens a turn; each assistant message is a step (with its tool calls), tool
  messages are its ``tool/result`` events; every turn is closed with ``step/end`` and
  ``turn/end`` (``completed``, or ``interrupted`` when a tool call was never answered; the
  unanswered call gets a synthetic error result). ``system`` and ``developer`` messages, and
  tool messages that answer no call, are kept as ignorable ``import/message`` events: stored,
  shown in exports, never sent to the model (gs sends the configured system prompt instead).
- the seed tutorial's ``.geekagent/sessions.json`` (``{"current": id, "sessions": {id:
  [messages]}}``): the whole archive is validated before anything is written (a malformed
  archive is refused entirely); every non-empty session becomes a gs session with the same
  id; an id that is taken (also by case, also by an archived session) is skipped and
  reported, never overwritten.

Text hygiene: a BOM and CRLF line ends are tolerated, invalid UTF-8 and lone surrogates
become U+FFFD. Nothing here prints or reads the environment; the CLI does.
"""

from __future__ import annotations

import datetime as dt
import html
import json
import re
import secrets
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from .errors import (
    CorruptSession,
    GitSessionsError,
    InvalidEvent,
    InvalidSessionId,
    SessionExists,
    UnsupportedVersion,
)
from .events import Event, clean_text, clean_value, encode_header, make_event, make_header, now_ms, parse_log
from .render import dumps, show_object
from .session import commit_message, recover_journal
from .rules import CommitMessage, check_session_id
from .store import GitStore, Snapshot
from .transcript import closing_events, derive_messages, open_turn, title_of, undone_turns

#: ``gs export --format`` values.
EXPORT_FORMATS = ("markdown", "json", "jsonl", "html")
#: Roles a chat-completions (or GeekAgent) message may have.
ROLES = ("system", "developer", "user", "assistant", "tool", "function")
#: The ignorable event that keeps a message gs does not send to the model.
IMPORTED_MESSAGE = "import/message"
#: GeekAgent's id rule (seed tutorial, ``ID_PATTERN``); gs's own rule is checked as well.
_GEEKAGENT_ID = re.compile(r"^[a-zA-Z0-9_-]+$")


class TransferError(GitSessionsError):
    """A file ``gs import`` refuses (nothing was written), or an export that cannot be made.

    Attributes:
        source: the file name.
        reason: what is wrong with it.
    """

    def __init__(self, source: str, reason: str, hint: str = "nothing was written"):
        self.source = source
        self.reason = reason
        super().__init__(f"cannot import {source}: {reason}" + (f"; {hint}" if hint else ""))


class _Bad(Exception):
    """Internal: a reason the input is refused (wrapped into :class:`TransferError`)."""


# =========================================================================== export


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


# =========================================================================== import: reading


@dataclass
class ImportedSession:
    """One session an import file holds, converted and validated, not yet written.

    Attributes:
        session_id: the id it asks for (None: a fresh id is made).
        events: its events, seq from 0.
        header: its header (None: a new header is made when written).
        notes: what the conversion changed or kept aside, for the user.
    """

    session_id: str | None
    events: list[Event]
    header: dict | None = None
    notes: list[str] = field(default_factory=list)


@dataclass
class ImportPlan:
    """What a file holds, validated as a whole before anything is written.

    Attributes:
        kind: ``jsonl``, ``json``, ``messages`` or ``geekagent``.
        source: the file name (for messages and commit subjects).
        sessions: the sessions to write, in file order.
        skipped: notes on sessions left out (empty ones).
        notes: notes about the file as a whole.
        clashes: ``(id, other)`` for ids in the file that differ only by case from an
            earlier id in the same file (the later one is not imported).
    """

    kind: str
    source: str
    sessions: list[ImportedSession]
    skipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    clashes: list[tuple[str, str]] = field(default_factory=list)


def _reject_constant(name: str) -> Any:
    raise _Bad(f"not JSON: {name} is not a JSON value")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise _Bad(f"key {key!r} appears twice in one object")
        out[key] = value
    return out


def _loads(text: str) -> Any:
    return json.loads(text, object_pairs_hook=_no_duplicates, parse_constant=_reject_constant)


def _decode(data: bytes) -> str:
    """Bytes to text: BOM dropped, invalid UTF-8 -> U+FFFD."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    return data.decode("utf-8", errors="replace")


def read_import(data: bytes, source: str, *, time_ms: int | None = None) -> ImportPlan:
    """Detect the format of an import file from its content, validate all of it and convert it.

    Args:
        data: the file's bytes.
        source: the file name, for messages.
        time_ms: the time given to events made from messages (default: now).

    Returns:
        The plan (nothing is written).

    Raises:
        TransferError: the file is not JSON, has an unknown shape, or holds something invalid
            (the message says what and where).
    """
    t = now_ms() if time_ms is None else time_ms
    try:
        return _read(data, source, t)
    except _Bad as exc:
        raise TransferError(source, str(exc)) from None
    except InvalidEvent as exc:
        raise TransferError(source, exc.reason) from None


def _read(data: bytes, source: str, t: int) -> ImportPlan:
    text = _decode(data)
    if not text.strip():
        raise _Bad("the file is empty")
    try:
        obj = _loads(text)
    except json.JSONDecodeError as exc:
        first = text.split("\n", 1)[0].rstrip("\r")
        try:
            head = json.loads(first)
        except ValueError:
            head = None
        if isinstance(head, dict) and head.get("type") == "session":
            return _read_jsonl(text, source, t)
        raise _Bad(f"not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    if isinstance(obj, list):
        return _read_messages(obj, source, t, model=None)
    if isinstance(obj, dict):
        if obj.get("type") == "session":
            return _read_jsonl(text, source, t)  # a header-only log
        if "header" in obj and "events" in obj:
            return _read_show_json(obj, source, t)
        if "sessions" in obj:
            return _read_geekagent(obj, source, t)
        if "messages" in obj:
            model = obj.get("model") if isinstance(obj.get("model"), str) else None
            return _read_messages(obj["messages"], source, t, model=model)
    raise _Bad(
        "unknown shape: gs imports its own jsonl or json export, a chat-completions messages array "
        "(or an object with \"messages\"), or a GeekAgent sessions.json ({\"current\", \"sessions\"}); "
        "markdown and html exports are for reading only"
    )


def _close_open_turn(events: list[Event], t: int, notes: list[str]) -> list[Event]:
    if open_turn(events) is None:
        return events
    out = list(events)
    for type_, data in closing_events(out, "interrupted"):
        out.append(make_event(len(out), type_, data, time_ms=t))
    notes.append("its last turn was unfinished; it was closed as interrupted (events appended, none changed)")
    return out


def _from_log(raw: bytes, source: str, t: int, where: Callable[[int], str]) -> ImportedSession:
    try:
        parsed = parse_log(raw, source)
    except CorruptSession as exc:
        raise _Bad(f"{where(exc.line)}{exc.reason}") from None
    except UnsupportedVersion as exc:
        raise _Bad(f"format version {exc.version} is newer than this gitsessions reads ({exc.supported}); "
                   "upgrade gitsessions") from None
    if parsed.dropped_tail:
        raise _Bad(f"{where(len(parsed.events) + 2)}not valid JSON (a torn last line)")
    try:
        header = clean_value(parsed.header, "header")
        events = [make_event(e.seq, e.type, e.data, time_ms=e.time, ignorable=e.ignorable)
                  for e in parsed.events]
    except InvalidEvent as exc:
        raise _Bad(exc.reason) from None
    notes: list[str] = []
    events = _close_open_turn(events, t, notes)
    sid = header.get("id")
    return ImportedSession(sid if isinstance(sid, str) else None, events, header, notes)


def _read_jsonl(text: str, source: str, t: int) -> ImportPlan:
    raw = text.encode("utf-8")
    session = _from_log(raw, source, t, lambda line: f"line {line}: " if line else "")
    return ImportPlan("jsonl", source, [session])


def _line(obj: Any) -> bytes:
    return (json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False) + "\n").encode("utf-8")


def _read_show_json(obj: dict, source: str, t: int) -> ImportPlan:
    header, events = obj["header"], obj["events"]
    if not isinstance(header, dict):
        raise _Bad("\"header\" is not an object")
    if not isinstance(events, list):
        raise _Bad("\"events\" is not an array")
    try:
        raw = encode_header(clean_value(header, "header")) + b"".join(
            _line(clean_value(ev, f"events[{i}]")) for i, ev in enumerate(events))
    except InvalidEvent as exc:
        raise _Bad(exc.reason) from None

    def where(line: int) -> str:
        return "header: " if line == 1 else (f"events[{line - 2}]: " if line else "")

    session = _from_log(raw, source, t, where)
    sid = obj.get("id")
    if isinstance(sid, str):
        session.session_id = sid
    if "messages" in obj and obj["messages"] != derive_messages(session.events):
        session.notes.append("its \"messages\" differ from what its events give; the events were imported")
    return ImportPlan("json", source, [session])


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
                                       "model": model, "usage": None, "interrupted": False})
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
        return {"id": call_id, "name": name, "arguments": args}

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
        self.add("tool/result", {"id": call_id, "name": name, "content": content, "is_error": False})

    def finish(self) -> list[Event]:
        self.close_turn()
        return self.events


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


def _read_messages(messages: Any, source: str, t: int, model: str | None) -> ImportPlan:
    if not isinstance(messages, list):
        raise _Bad(f"\"messages\" is {_kind(messages)}, not an array")
    if not messages:
        raise _Bad("it holds no messages")
    events, notes = events_from_messages(messages, time_ms=t, model=model)
    return ImportPlan("messages", source, [ImportedSession(None, events, None, notes)])


def _read_geekagent(obj: dict, source: str, t: int) -> ImportPlan:
    # The seed's rule: validate the whole archive before anything is written.
    bad = "not a valid GeekAgent sessions archive: "
    sessions, current = obj.get("sessions"), obj.get("current")
    if not isinstance(sessions, dict):
        raise _Bad(bad + f"\"sessions\" is {_kind(sessions)}, not an object of id -> messages")
    if not isinstance(current, str):
        raise _Bad(bad + f"\"current\" is {_kind(current)}, not a session id")
    if current not in sessions:
        raise _Bad(bad + f"\"current\" names {current!r}, which is not in \"sessions\"")
    plan = ImportPlan("geekagent", source, [])
    seen: dict[str, str] = {}
    for sid, messages in sessions.items():
        if not _GEEKAGENT_ID.match(sid):
            raise _Bad(bad + f"session id {sid!r} has characters other than letters, digits, '-' and '_'")
        try:
            check_session_id(sid)
        except InvalidSessionId as exc:
            raise _Bad(f"session id {sid!r} cannot be a gs session id ({exc.reason}; gs ids are 1-64 letters, "
                       "digits, '-' or '_' starting with a letter or digit); rename it in the file") from None
        if not isinstance(messages, list):
            raise _Bad(bad + f"session {sid!r} is {_kind(messages)}, not an array of messages")
        events, notes = events_from_messages(messages, time_ms=t, where=f"session {sid!r}, ")
        if not messages:
            plan.skipped.append(f"{sid} (empty)")
            continue
        folded = sid.casefold()
        if folded in seen:
            plan.clashes.append((sid, seen[folded]))
            continue
        seen[folded] = sid
        plan.sessions.append(ImportedSession(sid, events, None, notes))
    plan.notes.append(f"the archive's current session was {current}")
    return plan


# =========================================================================== import: writing


@dataclass
class ImportResult:
    """What :func:`write_import` did.

    Attributes:
        imported: ``(id, commit, session)`` per session written.
        clashes: ``(id, reason)`` per session not written because its id is taken.
    """

    imported: list[tuple[str, str, ImportedSession]] = field(default_factory=list)
    clashes: list[tuple[str, str]] = field(default_factory=list)


def new_import_id(store: GitStore) -> str:
    """Return a fresh 8-hex-digit id no session or archived session uses."""
    while True:
        sid = secrets.token_hex(4)
        if taken_by(store, sid) is None:
            return sid


def taken_by(store: GitStore, session_id: str) -> str | None:
    """Return what already uses ``session_id`` (a session, also by case, or ``archive/<name>``), else None."""
    existing = store.find(session_id)
    if existing is not None:
        return existing
    folded = session_id.casefold()
    for name in store.archived_ids():
        if name.casefold() == folded:
            return f"archive/{name}"
    return None


def _clash_text(session_id: str, other: str) -> str:
    if other.startswith("archive/"):
        return f"session {session_id!r} exists as the archived session {other[len('archive/'):]!r} (refs/{other})"
    if other == session_id:
        return f"session {session_id!r} already exists"
    return f"session {session_id!r} would differ only by case from the existing {other!r}"


def check_plan(plan: ImportPlan, as_id: str | None) -> None:
    """Refuse an ``--as`` that cannot apply to ``plan`` (before anything is written).

    Raises:
        TransferError: ``--as`` with an archive of several sessions, an invalid ``--as``,
            or a plan with nothing to import.
    """
    if as_id is not None:
        try:
            check_session_id(as_id)
        except InvalidSessionId as exc:
            raise TransferError(plan.source, str(exc)) from None
        if len(plan.sessions) + len(plan.clashes) > 1:
            raise TransferError(plan.source, f"--as names one session, but the archive holds "
                                f"{len(plan.sessions) + len(plan.clashes)} non-empty sessions; import "
                                "without --as (each keeps its id)")
    if not plan.sessions and not plan.clashes:
        empty = f" (skipped: {', '.join(plan.skipped)})" if plan.skipped else ""
        raise TransferError(plan.source, f"it holds no non-empty session{empty}")


def write_import(store: GitStore, plan: ImportPlan, *, as_id: str | None = None,
                 header_extra: dict[str, Any] | None = None) -> ImportResult:
    """Write the sessions of a validated plan, one commit each (``import: <file>``).

    A session whose id is taken (by a session, also differing only by case, or by an archived
    one) is never touched: for a single-session file that is an error; for an archive the
    session is skipped and reported in :attr:`ImportResult.clashes`, and the others are written.

    Args:
        store: the session store.
        plan: from :func:`read_import`.
        as_id: the id for a single-session file.
        header_extra: fields of headers made here (``cwd``, ``generator``).

    Returns:
        What was written and what was skipped.

    Raises:
        TransferError: a refused ``--as`` or an empty plan.
        SessionExists: the id of a single-session file is taken.
        SessionLocked: never; a session being written by another process counts as a clash.
    """
    check_plan(plan, as_id)
    result = ImportResult(clashes=[(sid, _clash_text(sid, other) + " in the same file")
                                   for sid, other in plan.clashes])
    single = plan.kind != "geekagent"
    for item in plan.sessions:
        sid = as_id or item.session_id
        if sid is None:
            sid = new_import_id(store)
        elif as_id is None:
            try:
                check_session_id(sid)
            except InvalidSessionId:
                raise TransferError(plan.source, f"its session id {sid!r} is not a valid gs id; "
                                    "give one with --as ID") from None
        lock = store.lock(sid)
        if not lock.try_acquire():
            why = f"session {sid!r} is being written by {lock.holder()}"
            if single:
                raise TransferError(plan.source, why)
            result.clashes.append((sid, why))
            continue
        try:
            recover_journal(store, sid)  # an orphaned new session of that id is committed first
            other = taken_by(store, sid)
            if other is not None:
                if single:
                    raise TransferError(plan.source, _clash_text(sid, other),
                                        "it was left untouched; import under another id with --as ID")
                result.clashes.append((sid, _clash_text(sid, other) + "; it was left untouched"))
                continue
            header = item.header
            if header is None:
                header = make_header(sid, imported_from=plan.source, **(header_extra or {}))
            base = commit_message(sid, item.events, 0)
            trailers = dict(base.trailers)
            trailers["Imported-From"] = plan.source
            message = CommitMessage(f"import: {plan.source}", trailers)
            try:
                commit = store.append(sid, item.events, message, expected_tip=None, header=header)
            except SessionExists as exc:  # created between our check and the write
                if single:
                    raise
                result.clashes.append((sid, str(exc)))
                continue
            result.imported.append((sid, commit, item))
        finally:
            lock.release()
    return result
