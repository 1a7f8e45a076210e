"""Finding a text in the stored messages of sessions (``gs search``).

A service under ``gitsessions/cli/history.py``, beside :mod:`gitsessions.history.reading`: each
session's ``session.jsonl`` is scanned once, and each hit is attributed to the commit that
added its message (with :class:`~gitsessions.history.reading.EventRanges`). Nothing prints or reads
the environment; the CLI turns the hits into text and JSON.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import CorruptSession, SessionNotFound, UnsupportedVersion
from ..secrets.redact import NO_REDACTION, Redactor
from ..store import CommitInfo, SessionStore
from ..text import find_folded, fold, snippet
from ..writer.opening import try_recover
from .messages import body_text, read_messages
from .reading import EventRanges


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
    #: The other sessions that hold the same message (forks share history): (session, archived).
    also: list[tuple[str, bool]] = field(default_factory=list)


def marked(snippet: str, query: str) -> tuple[str, str, str]:
    """Split a hit's snippet around the match, for a terminal to highlight: ``(before, match, after)``.

    The snippet's white space is folded (:func:`gitsessions.text.snippet`), so the query is
    looked for folded too, in any case; ``(snippet, "", "")`` when it is not there.
    """
    span = find_folded(snippet, fold(query).casefold())
    if span is None:
        return snippet, "", ""
    return snippet[:span[0]], snippet[span[0]:span[1]], snippet[span[1]:]


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
    text = body_text(raw)
    # Another writer may have stored non-ASCII as \\uXXXX escapes: then parse every line.
    loose = not folded_q.isascii() and "\\u" in text
    if not loose and stored_q not in text.casefold():
        return []
    want = None if loose else (lambda line: stored_q in line.casefold())
    hits = []
    for seq, turn, role, content in read_messages(text, want=want)[0]:
        span = find_folded(content, folded_q)
        if span is not None:
            hits.append((seq, turn, role, snippet(content, *span)))
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


def _attribute_all(store: SessionStore, sid: str, tip: str, found: list[Hit], known: dict[int, str],
                   index: Path | None) -> None:
    """Attribute ``found``: from the commits the index knows added them, else by :func:`attribute` (noted)."""
    try:
        if len(known) == len(found):
            infos = {c: store.commit_info(c) for c in set(known.values())}
            for h in found:
                h.commit = infos[known[h.seq]]
            return
    except store.unreadable:
        pass  # a commit gone from the repo: walk the history as the scan does
    try:
        attribute(store, sid, tip, found)
    except (KeyError, ValueError, CorruptSession, UnsupportedVersion):
        return
    if index is not None:
        from .search_index import remember

        remember(index, (sid, found[0].archived), tip, [(h.seq, h.commit.commit) for h in found if h.commit])


def dedupe(hits: list[Hit]) -> list[Hit]:
    """Keep one hit per (commit, seq): sessions that share history (forks) hold the same messages.

    Prefer the session the commit was made in (its ``Session`` trailer); the others that hold
    the message are named in the kept hit's ``also``, in order of their names.

    Args:
        hits: attributed hits, in the order to show them.

    Returns:
        The kept hits, in the order of their first occurrence.
    """
    best: dict[tuple[str | None, int], Hit] = {}
    order: list[tuple[str | None, int]] = []
    for h in hits:
        key = (h.commit.commit if h.commit else f"{h.session}?", h.seq)
        kept = best.get(key)
        if kept is None:
            best[key] = h
            order.append(key)
        elif h.commit and h.commit.message.trailers.get("Session") == h.session != kept.session:
            h.also = [*kept.also, (kept.session, kept.archived)]
            best[key] = h
        else:
            kept.also.append((h.session, h.archived))
    for h in best.values():
        h.also.sort()
    return [best[k] for k in order]


def search(store: SessionStore, query: str, *, session: str | None = None, all_revisions: bool = False,
           on_skip: Callable[[str, CorruptSession], None] | None = None,
           redactor: Redactor = NO_REDACTION, warnings: list[str] | None = None,
           index: Path | None = None) -> list[Hit]:
    """Search the message contents (user, assistant, tool results) of sessions, any case.

    Orphaned journals of the searched sessions are recovered first. Each hit is attributed
    to the commit that added its message, when the history can be read.

    Args:
        store: the session store.
        query: the text to find (non-empty).
        session: search only this session (None: every live session).
        all_revisions: also search archived sessions.
        on_skip: called with the session id and the error for each session whose log cannot
            be read (it is skipped), as it is met.
        redactor: replaces secrets in recovered turns.
        warnings: gets a line per recovery a hook refused.
        index: the file of the search index (:mod:`gitsessions.history.search_index`), brought up to
            date and used when it can be; None (or an index that cannot be used) scans every log.

    Returns:
        The hits, session by session, in the order of the messages: one per message, at the
        commit that added it, in the session it was written in when several (forks) hold it
        (the others in its ``also``; see :func:`dedupe`).

    Raises:
        SessionNotFound: ``session`` names no session (nor, with ``all_revisions``, an
            archived one).
    """
    for sid in store.journaled():
        if session is None or sid == session:
            try_recover(store, sid, redactor, warnings)
    targets = _targets(store, session, all_revisions)
    indexed = None
    if index is not None:
        from .search_index import lookup  # sqlite3 is loaded only by a search

        complete = frozenset() if session is not None else frozenset({False, True} if all_revisions else {False})
        indexed = lookup(store, index, targets, query.casefold(), complete=complete, on_skip=on_skip)
    hits: list[Hit] = []
    for sid, tip, is_archived in targets:
        known: dict[int, str] = {}
        if indexed is not None:
            found = [Hit(sid, is_archived, *h[:4]) for h in indexed.get((sid, is_archived), [])]
            known = {h[0]: h[4] for h in indexed.get((sid, is_archived), []) if h[4]}
        else:
            try:
                found = [Hit(sid, is_archived, *h) for h in scan_log(store.read_raw(sid, tip), query)]
            except CorruptSession as exc:
                if on_skip is not None:
                    on_skip(sid, exc)
                continue
        if found:
            _attribute_all(store, sid, tip, found, known, index if indexed is not None else None)
            hits.extend(found)
    return dedupe(hits)


def _targets(store: SessionStore, session: str | None, all_revisions: bool) -> list[tuple[str, str, bool]]:
    """The logs a search reads: ``(session, commit, archived)`` of one session, or of every one.

    Raises:
        SessionNotFound: ``session`` names no session (nor, with ``all_revisions``, an archived one).
    """
    if session is not None:
        tip: str | None = store.tip(session)
        arch = store.archive_ref(session) if all_revisions else None
        if tip is None and arch is None:
            raise SessionNotFound(session, store.session_ids())
        return [*([(session, tip, False)] if tip is not None else []), *([(session, arch, True)] if arch else [])]
    targets: list[tuple[str, str, bool]] = [(sid, tip, False) for sid, tip in store.tips().items()]  # one pass
    if all_revisions:
        for name in store.archived_ids():
            sha = store.archive_ref(name)
            if sha is not None:
                targets.append((name, sha, True))
    return targets
