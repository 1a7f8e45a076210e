"""Finding a text in the stored messages of sessions (``gs search``).

A service under ``gitsessions/cli/history.py``, beside :mod:`gitsessions.history`: each
session's ``session.jsonl`` is scanned once, and each hit is attributed to the commit that
added its message (with :class:`~gitsessions.history.EventRanges`). Nothing prints or reads
the environment; the CLI turns the hits into text and JSON.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from . import render
from .errors import CorruptSession, InvalidSessionId, SessionNotFound, UnsupportedVersion
from .events import loads_line
from .history import EventRanges
from .recovery import try_recover
from .redact import Redactor
from .store import CommitInfo, SessionStore
from .turns import turn_number

#: Event types whose ``content`` search looks at, and the role shown for each.
_SEARCHED = {"user/message": "user", "assistant/message": "assistant", "tool/result": "tool"}


@dataclass
class Hit:
    """A message that contains the searched text."""

    session: str
    archived: bool
    seq: int
    turn: int
    role: str
    snippet: str
    #: The commit that added the message (None until attributed, or if that failed).
    commit: CommitInfo | None = None


def scan_log(raw: bytes, query: str) -> list[tuple[int, int, str, str]]:
    """Find ``query`` (any case) in the message contents of one ``session.jsonl``.

    The whole file is decoded and casefolded once and checked for the query (JSON-escaped as
    it would be stored) before any line is parsed; only lines that contain it, and
    ``turn/start`` lines (to number turns), are parsed.

    Args:
        raw: the bytes of ``session.jsonl``.
        query: the text to find.

    Returns:
        ``(seq, turn, role, snippet)`` per matching message (its first match).
    """
    folded_q = query.casefold()
    stored_q = json.dumps(folded_q, ensure_ascii=False)[1:-1]
    text = raw.decode("utf-8", "replace")
    folded = text.casefold()
    # Another writer may have stored non-ASCII as \\uXXXX escapes: then parse every line.
    loose = not folded_q.isascii() and "\\u" in text
    if not loose and stored_q not in folded:
        return []
    hits = []
    turn = 0
    # casefold() never makes or removes a newline, so the folded lines align with the lines.
    for line, fline in zip(text.split("\n")[1:], folded.split("\n")[1:], strict=True):
        is_turn = '"turn/start"' in line
        if not is_turn and not loose and stored_q not in fline:
            continue
        try:
            obj = loads_line(line)  # well-formed text, also where the log holds an escaped lone surrogate
        except ValueError:
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("data"), dict):
            continue
        kind, data = obj.get("type"), obj["data"]
        if kind == "turn/start":
            turn = turn_number(data, turn)
            continue
        role = _SEARCHED.get(kind) if isinstance(kind, str) else None
        content = data.get("content")
        seq = obj.get("seq")
        if role is None or not isinstance(content, str) or not isinstance(seq, int):
            continue
        span = render.find_folded(content, folded_q)
        if span is not None:
            hits.append((seq, turn, role, render.snippet(content, *span)))
    return hits


def attribute(store: SessionStore, session_id: str, tip: str, hits: list[Hit]) -> None:
    """Set each hit's ``commit`` to the commit that added its event.

    Walks back from ``tip`` only as far as the oldest hit (the log is append-only, so every
    revision is a prefix). Hits older than every commit that added events get the oldest
    commit.

    Args:
        store: the session store.
        session_id: the session the hits were found in.
        tip: the commit whose log was searched.
        hits: hits of that log; changed in place.

    Raises:
        KeyError, ValueError: a commit on the way is missing or unreadable.
    """
    ranges = EventRanges(store, session_id)
    pending = sorted(hits, key=lambda h: h.seq, reverse=True)
    last = None
    for info in store.first_parents(tip):
        last = info
        start, end = ranges.of(info)
        if start == end:
            continue
        while pending and pending[0].seq >= start:
            pending.pop(0).commit = info
        if not pending:
            return
    for h in pending:
        h.commit = last


def dedupe(hits: list[Hit]) -> list[Hit]:
    """Keep one hit per (commit, seq): sessions that share history (forks) hold the same messages.

    Prefer the session the commit was made in (its ``Session`` trailer).

    Args:
        hits: attributed hits, in the order to show them.

    Returns:
        The kept hits, in the order of their first occurrence.
    """
    best: dict[tuple[str | None, int], Hit] = {}
    order: list[tuple[str | None, int]] = []
    for h in hits:
        key = (h.commit.commit if h.commit else f"{h.session}?", h.seq)
        if key not in best:
            best[key] = h
            order.append(key)
        elif h.commit and h.commit.message.trailers.get("Session") == h.session != best[key].session:
            best[key] = h
    return [best[k] for k in order]


def search(store: SessionStore, query: str, *, session: str | None = None, all_revisions: bool = False,
           on_skip: Callable[[str, CorruptSession], None] | None = None,
           redactor: Redactor | None = None, warnings: list[str] | None = None) -> list[Hit]:
    """Search the message contents (user, assistant, tool results) of sessions, any case.

    Orphaned journals of the searched sessions are recovered first. Each hit is attributed
    to the commit that added its message, when the history can be read.

    Args:
        store: the session store.
        query: the text to find (non-empty).
        session: search only this session (None: every live session).
        all_revisions: also search archived sessions, and report each message once, at the
            commit that added it (see :func:`dedupe`).
        on_skip: called with the session id and the error for each session whose log cannot
            be read (it is skipped), as it is met.
        redactor: replaces secrets in recovered turns.
        warnings: gets a line per recovery a hook refused.

    Returns:
        The hits, session by session, in the order of the messages.

    Raises:
        SessionNotFound: ``session`` names no session (nor, with ``all_revisions``, an
            archived one).
    """
    hits: list[Hit] = []
    targets: list[tuple[str, str, bool]] = []  # (session, commit, archived)
    for sid in store.journaled():
        if session is None or sid == session:
            try_recover(store, sid, redactor, warnings)
    if session is not None:
        tip: str | None = store.tip(session)
        arch = store.archive_ref(session) if all_revisions else None
        if tip is None and arch is None:
            raise SessionNotFound(session, store.session_ids())
        if tip is not None:
            targets.append((session, tip, False))
        if arch is not None:
            targets.append((session, arch, True))
    else:
        for sid in store.session_ids():
            try:
                tip = store.tip(sid)
            except InvalidSessionId:
                continue
            if tip is not None:
                targets.append((sid, tip, False))
        if all_revisions:
            for name in store.archived_ids():
                sha = store.archive_ref(name)
                if sha is not None:
                    targets.append((name, sha, True))
    for sid, tip, is_archived in targets:
        try:
            raw = store.read_raw(sid, tip)
        except CorruptSession as exc:
            if on_skip is not None:
                on_skip(sid, exc)
            continue
        found = [Hit(sid, is_archived, *h) for h in scan_log(raw, query)]
        if found:
            try:
                attribute(store, sid, tip, found)
            except (KeyError, ValueError, CorruptSession, UnsupportedVersion):
                pass
            hits.extend(found)
    return dedupe(hits) if all_revisions else hits
