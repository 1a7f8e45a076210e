"""Imports (``gs import``): an import file into a validated :class:`ImportPlan`.

The format is detected from the content:

- gs's own ``jsonl`` export: the header and events are kept exactly (same seq, time, type and
  data), so the imported ``session.jsonl`` is byte-identical to the file (a turn left open
  in the file is closed by appending events, as after a crash).
- gs's own ``json`` export (the ``gs show --format json`` object): its ``header`` and
  ``events``, the same way.
- a chat-completions ``messages`` array, or an object with a ``messages`` key (see
  :mod:`.messages`).
- the seed tutorial's ``.geekagent/sessions.json`` (``{"current": id, "sessions": {id:
  [messages]}}``): the whole archive is validated before anything is written (a malformed
  archive is refused entirely); every non-empty session becomes a gs session with the same
  id; an id that is taken (also by case, also by an archived session) is skipped and
  reported, never overwritten.
- another tool's conversations, written a commit per turn: ChatGPT's data export
  (:mod:`.chatgpt`) and Claude Code's transcripts (:mod:`.claude_code`, told by their first
  line).

Text hygiene: a BOM and CRLF line ends are tolerated, invalid UTF-8 and lone surrogates
become U+FFFD.
"""

from __future__ import annotations

import io
import itertools
import json
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import CorruptSession, InvalidEvent, InvalidSessionId, TransferError, UnsupportedVersion
from ..ids import check_session_id
from ..log.events import Event, clean_value, encode_header, make_event, now_ms, parse_log
from ..log.transcript import closing_events, derive_messages, open_turn
from .readers import chatgpt, claude_ai, claude_code, codex, llm_db, stream
from .readers.conversation import ImportedConversation
from .readers.messages import _Bad, _kind, events_from_messages

#: GeekAgent's id rule (seed tutorial, ``ID_PATTERN``); gs's own rule is checked as well.
_GEEKAGENT_ID = re.compile(r"^[a-zA-Z0-9_-]+$")


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
        kind: ``jsonl``, ``json``, ``messages``, ``geekagent``, ``chatgpt`` or ``claude-code``.
        source: the file name (for messages and commit subjects).
        sessions: the sessions to write, in file order.
        skipped: notes on sessions left out (empty ones).
        notes: notes about the file as a whole.
        clashes: ``(id, other)`` for ids in the file that differ only by case from an
            earlier id in the same file (the later one is not imported).
        conversations: another tool's conversations (kinds of :data:`TOOLS`), written a commit
            per turn by :func:`~.branches.write_conversation`.
    """

    kind: str
    source: str
    sessions: list[ImportedSession]
    skipped: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    clashes: list[tuple[str, str]] = field(default_factory=list)
    conversations: Collection[ImportedConversation] = field(default_factory=list)


#: Other tools whose files hold conversations (a plan's ``conversations``, written a commit per turn).
TOOLS = (chatgpt.TOOL, claude_ai.TOOL, claude_code.TOOL, codex.TOOL, llm_db.TOOL)
#: What ``gs import --from`` names (``auto``: detect from the content).
FORMATS = ("auto", "gs", "messages", "geekagent", *TOOLS)


def read_import(data: bytes | None, source: str, *, time_ms: int | None = None, fmt: str = "auto",
                path: Path | None = None, keep_paths: bool = False,
                folders: Mapping[str, Path] | None = None) -> ImportPlan:
    """Detect the format of an import file from its content, validate all of it and convert it.

    A data export (ChatGPT's or Claude.ai's ``conversations.json``, or its ``.zip``) is read
    a conversation at a time (:mod:`.stream`): checked whole now, read again as it is
    written when it is large; every other format is read whole (each is one conversation
    or one session, or small).

    Args:
        data: the file's bytes (None: read from ``path``, a piece at a time).
        source: the file name, for messages.
        time_ms: the time given to events made from messages (default: now).
        fmt: one of :data:`FORMATS`; a named format is read as that one or refused.
        path: the file ``data`` was read from, if any: a database (llm's ``logs.db``) is
            opened there, read-only, to see what its writer has not merged into it yet; a
            Claude Code transcript's folder tells its ``--fork-session`` copies.
        keep_paths: keep the local paths a tool wrote into its own text (Codex's context, Claude
            Code's compaction summaries and notes).
        folders: where each tool keeps its files on this machine, by name (the face finds
            them: :func:`~.discover.folders`): a Codex fork's origin not beside it is looked
            for there.

    Returns:
        The plan (nothing is written).

    Raises:
        TransferError: the file cannot be opened, is not JSON, has an unknown shape, or holds
            something invalid (the message says what and where).
    """
    t = now_ms() if time_ms is None else time_ms
    src = stream.Source(data, path, source)
    try:
        head = src.head(len(llm_db.MAGIC))
        if head.startswith(b"PK\x03\x04") and fmt in ("auto", chatgpt.TOOL, claude_ai.TOOL):  # a data export's zip
            src.in_zip(chatgpt.member)
        if src.member is None and llm_db.is_db(head):
            plan = _conversations(llm_db.TOOL, source, llm_db.read_db(path, b"" if data is None else data))
        else:
            plan = (_export(src, fmt) or _lines(src, fmt, keep_paths, path, folders or {})
                    or _read(src.read(), source, t, fmt, keep_paths))
        if fmt not in ("auto", "gs" if plan.kind in ("jsonl", "json") else plan.kind):
            raise _Bad(f"it is not a {fmt} file (it reads as {plan.kind})")
        return plan
    except _Bad as exc:
        raise TransferError(source, str(exc)) from None
    except InvalidEvent as exc:
        raise TransferError(source, exc.reason) from None


#: The data exports read a conversation at a time: their tool and conversion.
_EXPORTS = ((chatgpt.TOOL, chatgpt.is_export, chatgpt.convert),
            (claude_ai.TOOL, claude_ai.is_export, claude_ai.convert))


def _export(src: stream.Source, fmt: str) -> ImportPlan | None:
    """The plan of a data export, checked a conversation at a time; None when the file is no export.

    What it is is told by the array's first element (as when the file is read whole); a file
    that is no array, or whose first element does not read, is left to :func:`_read`. An
    export read as another format (``--from codex``) is refused, as one read whole would be.
    """
    none = object()
    with src.open() as raw:
        try:
            first = next(iter(stream.ArrayReader(stream.text_of(raw))), none)
        except _Bad:
            return None
    for tool, is_export, convert in _EXPORTS:
        if (is_export([first]) if first is not none else fmt == tool):
            if fmt not in ("auto", tool):
                raise _Bad(f"it is not a {fmt} file (it reads as {tool})")
            convs = stream.Conversations(src, convert)
            return ImportPlan(tool, src.source, [], skipped=convs.skipped, conversations=convs)
    return None


def _lines(src: stream.Source, fmt: str, keep_paths: bool, path: Path | None,
           folders: Mapping[str, Path]) -> ImportPlan | None:
    """The plan of another tool's JSON-lines file, read a line at a time; None when the file is none.

    Claude Code's transcripts and Codex's rollouts are told by their first line and can be
    hundreds of megabytes: each line is let go once converted, so memory
    follows what the conversation holds, not the file's text too. A Codex fork's plan holds
    its origins' conversations first (:func:`.codex.read_rollouts`).
    """
    with src.open() as raw:
        first = raw.readline()
        try:
            head = json.loads(next(stream.lines([first]))[1]) if first.strip() else None
        except ValueError:
            return None
        if fmt in ("auto", claude_code.TOOL) and claude_code.is_transcript(head):
            return ImportPlan(claude_code.TOOL, src.source, [],
                              conversations=claude_code.read_transcript(itertools.chain([first], raw), path,
                                                                         keep_paths=keep_paths))
        if codex.is_rollout(head):
            elsewhere = [folders[codex.TOOL]] if codex.TOOL in folders else []
            return _conversations(codex.TOOL, src.source, codex.read_rollouts(
                itertools.chain([first], raw), path, keep_paths=keep_paths, elsewhere=elsewhere))
    return None


def _read(data: bytes, source: str, t: int, fmt: str, keep_paths: bool = False) -> ImportPlan:
    text = stream.decode(data)
    if not text.strip():
        raise _Bad("the file is empty")
    try:
        obj = stream.loads(text)
    except json.JSONDecodeError as exc:
        first = text.split("\n", 1)[0].rstrip("\r")
        try:
            head = json.loads(first)
        except ValueError:
            head = None
        if isinstance(head, dict) and head.get("type") == "session":
            return _read_jsonl(text, source, t)
        raise _Bad(f"not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    if isinstance(obj, list):  # (a data export is read by _export)
        return _read_messages(obj, source, t, model=None)
    if isinstance(obj, dict):
        if obj.get("type") == "session":
            return _read_jsonl(text, source, t)  # a header-only log
        if codex.is_rollout(obj):  # one object over several lines (a rollout's first line is _lines')
            return _conversations(codex.TOOL, source, [codex.read_rollout(io.BytesIO(data), keep_paths=keep_paths)])
        if "header" in obj and "events" in obj:
            return _read_show_json(obj, source, t)
        if "sessions" in obj:
            return _read_geekagent(obj, source, t)
        if "messages" in obj:
            model = obj.get("model") if isinstance(obj.get("model"), str) else None
            return _read_messages(obj["messages"], source, t, model=model)
    raise _Bad(
        "unknown shape: gs imports its own jsonl or json export, a chat-completions messages array "
        "(or an object with \"messages\"), a GeekAgent sessions.json ({\"current\", \"sessions\"}), "
        "ChatGPT's or Claude.ai's data export (conversations.json or the .zip), a Claude Code transcript, "
        "a Codex rollout or llm's logs.db; markdown and html exports are for reading only"
    )


def _conversations(tool: str, source: str, convs: list[ImportedConversation]) -> ImportPlan:
    """The plan of a file of another tool's conversations.

    Those without a turn to write are left out: skipped, with the reason, when their reader
    gave one (a turn still under way: a file being written is no failure), else silently.
    """
    return ImportPlan(tool, source, [], skipped=[f"{c.tool} conversation {c.source_id} ({'; '.join(c.notes)})"
                                                 for c in convs if not c.branches and c.notes],
                      conversations=[c for c in convs if c.branches])


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
