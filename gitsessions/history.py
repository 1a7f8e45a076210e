"""Reading sessions' history for the read-only commands (``list``, ``log``, ``diff``, ``search``).

The service layer under ``gitsessions/cli/history.py``: which revision a name means (after
recovering a journal a crashed ``gs`` left), which events each commit added (``log -p``),
where other sessions branch off a history (``log --graph``), what two revisions hold beyond
their merge base (``diff``), and where a text occurs in the stored messages (``search``).

Everything here works on a :class:`~gitsessions.store.SessionStore` and returns values; nothing
prints, reads the environment or imports the terminal libraries. Turning the values into
text and JSON is the CLI's job (with :mod:`gitsessions.render`).
"""

from __future__ import annotations

import json
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from . import render
from .errors import CorruptSession, InvalidSessionId, SessionNotFound, UnsupportedVersion
from .events import Event
from .redact import Redactor
from .rules import rev_session_id, turn_number
from .session import try_recover
from .store import CommitInfo, Revision, SessionInfo, SessionStore
from .view import Item
from .view import items as view_items

#: Event types whose ``content`` search looks at, and the role shown for each.
_SEARCHED = {"user/message": "user", "assistant/message": "assistant", "tool/result": "tool"}


def _int(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


# -- revisions and listings ------------------------------------------------------------------


def read_revision(store: SessionStore, rev: str, redactor: Redactor | None = None,
                  warnings: list[str] | None = None) -> Revision:
    """Recover an orphaned journal of the session ``rev`` names, then resolve ``rev``.

    Args:
        store: the session store.
        rev: ``SESSION``, ``SESSION~N``, ``SESSION^`` or ``SESSION@COMMIT``.
        redactor: replaces secrets in a recovered turn (see :func:`~gitsessions.session.recover_journal`).
        warnings: gets a line per recovery a hook refused (see :func:`~gitsessions.session.try_recover`).

    Returns:
        The revision ``rev`` names.

    Raises:
        BadRevision: ``rev`` is malformed or names no commit.
        InvalidSessionId: the session part is no valid session id.
        SessionNotFound: no such session.
    """
    sid = rev_session_id(rev)
    if sid is not None:
        try:
            try_recover(store, sid, redactor, warnings)
        except InvalidSessionId:
            pass  # resolve() says what is wrong with it
    return store.resolve(rev)


def list_sessions(store: SessionStore, *, archived: bool = False, redactor: Redactor | None = None,
                  warnings: list[str] | None = None) -> list[SessionInfo]:
    """Return the sessions of ``store``, live ones after recovering their orphaned journals.

    Args:
        store: the session store.
        archived: list archived sessions (``gs rm``) instead of live ones.
        redactor: replaces secrets in recovered turns.
        warnings: gets a line per recovery a hook refused.

    Returns:
        One :class:`SessionInfo` per session, in the store's order.
    """
    if archived:
        return store.archived_sessions()
    for sid in store.journaled():
        try_recover(store, sid, redactor, warnings)
    return store.list_sessions()


def fork_origin(info: CommitInfo) -> tuple[str, str] | None:
    """Tell whether ``info`` is the commit that made a fork, and of what.

    Args:
        info: a commit.

    Returns:
        ``(session, commit)`` from its ``Forked-From`` trailer when that commit is its first
        parent (the fork point), else None (an ordinary commit, or a later commit of a fork).
    """
    lineage = info.message.fields.forked_from
    if lineage is None or not info.parents or lineage.commit != info.parents[0]:
        return None
    return lineage.session_id, lineage.commit


# -- which events each commit added ------------------------------------------------------------


def _trailer_range(info: CommitInfo) -> tuple[int, int] | None:
    """The ``Events: a-b`` trailer as a half-open range ``(a, b + 1)``, or None."""
    events = info.message.fields.events
    return (events[0], events[1] + 1) if events is not None else None


class EventRanges:
    """Finds the events each commit of one session added.

    From the commit's ``Events`` trailer, else (a commit made by another tool) the
    difference of the event counts of its blob and its parent's. Blob counts are cached,
    so walking a history reads each blob at most once.
    """

    def __init__(self, store: SessionStore, session_id: str):
        """Prepare to read commits of ``session_id`` in ``store``."""
        self.store = store
        self.session_id = session_id
        self._counts: dict[str, int] = {}

    def _count_at(self, commit: str) -> int:
        if commit not in self._counts:
            raw = self.store.read_raw(self.session_id, commit)
            self._counts[commit] = max(0, raw.count(b"\n") - 1)  # whole lines after the header
        return self._counts[commit]

    def of(self, info: CommitInfo) -> tuple[int, int]:
        """Return the events ``info`` added as a half-open seq range ``(start, end)``.

        Args:
            info: a commit of the session.

        Returns:
            ``(start, end)``; empty (``start == end``) for a fork commit, a commit whose blob
            cannot be read, or one that holds fewer events than its parent.
        """
        rng = _trailer_range(info)
        if rng is not None:
            return rng
        if info.message.fields.forked_from is not None and "Events" not in info.message.trailers:
            return (0, 0)  # a fork commit: same tree as its parent, adds nothing
        try:
            end = self._count_at(info.commit)
            start = self._count_at(info.parents[0]) if info.parents else 0
        except CorruptSession:
            return (0, 0)
        return (start, end) if start <= end else (end, end)


def added_by(ranges: EventRanges, commits: Sequence[CommitInfo], items: Sequence[Item]) -> dict[str, list[Item]]:
    """Pick out of ``items`` the ones made from the events each of ``commits`` added.

    Args:
        ranges: the :class:`EventRanges` of the session.
        commits: commits of the session.
        items: :func:`gitsessions.view.items` of the session's events at the newest of ``commits`` (or later).

    Returns:
        commit id -> the items of the events it added (empty for a commit that added none).
    """
    seqs = [item.seq for item in items]
    out: dict[str, list[Item]] = {}
    for info in commits:
        start, end = ranges.of(info)
        out[info.commit] = list(items[bisect_left(seqs, start):bisect_left(seqs, end)])
    return out


# -- graph: where other sessions branch off -----------------------------------------------------


@dataclass
class Branch:
    """A live session whose history leaves another session's history at some commit."""

    session_id: str
    tip: str
    turns_since: int
    how: str  # "forked here", "branches off here", "continues from here", "points here"


def branches(store: SessionStore, target: Revision, history: Sequence[CommitInfo]) -> dict[str, list[Branch]]:
    """Find where the live sessions of ``store`` leave ``history``.

    Each session's first-parent chain is walked from its tip until it meets ``history`` (the
    merge base). Results are memoised per commit, so sessions sharing a stretch of history
    walk it once: linear in the number of distinct commits, not sessions x commits. A session
    with an unreadable commit is left out (``gs list`` reports it).

    Args:
        store: the session store.
        target: the revision ``history`` was read from (its own tip is not listed).
        history: the first-parent history of ``target``, newest first.

    Returns:
        commit id of ``history`` -> the sessions leaving it there, sorted by session id.
    """
    main: dict[str, CommitInfo] = {c.commit: c for c in history}
    # commit -> (merge base or None, commits above the base, first commit above the base)
    memo: dict[str, tuple[str | None, int, CommitInfo | None]] = {}
    out: dict[str, list[Branch]] = defaultdict(list)
    for info in store.list_sessions():
        if info.session_id == target.session_id and target.is_tip:
            continue
        path: list[CommitInfo] = []
        sha: str | None = info.tip
        try:
            while sha is not None and sha not in main and sha not in memo:
                ci = store.commit_info(sha)
                path.append(ci)
                sha = ci.parents[0] if ci.parents else None
        except (KeyError, ValueError):
            continue  # an unreadable commit: gs list reports it
        found: tuple[str | None, int, CommitInfo | None]
        if sha is None:
            found = (None, 0, None)
        elif sha in main:
            found = (sha, 0, None)
        else:
            found = memo[sha]
        for ci in reversed(path):
            found = (found[0], found[1] + 1, found[2] or ci)
            memo[ci.commit] = found
        base, distance, first = found
        if base is None:
            continue
        turns = (_int(info.message.trailers.get("Turn")) or 0) - (_int(main[base].message.trailers.get("Turn")) or 0)
        if distance == 0:
            how = "points here"
        elif info.session_id == target.session_id:
            how = "continues from here"
        elif first is not None and (lineage := first.message.fields.forked_from) and lineage.commit == base:
            how = "forked here"
        else:
            how = "branches off here"
        out[base].append(Branch(info.session_id, info.tip, max(turns, 0), how))
    for found_branches in out.values():
        found_branches.sort(key=lambda b: b.session_id)
    return out


# -- log -------------------------------------------------------------------------------------


@dataclass
class LogView:
    """What ``gs log`` shows of one revision."""

    #: The commits shown, newest first.
    commits: list[CommitInfo]
    #: commit id -> sessions branching off there (``graph`` only; else empty).
    branches: dict[str, list[Branch]] = field(default_factory=dict)
    #: commit id -> what a reader sees of the events it added (``patch`` only; else empty).
    added: dict[str, list[Item]] = field(default_factory=dict)


def read_log(store: SessionStore, target: Revision, *, limit: int | None = None, graph: bool = False,
             patch: bool = False) -> LogView:
    """Read the history of ``target`` for ``gs log``.

    Args:
        store: the session store.
        target: where the log starts.
        limit: show at most this many commits (None: all).
        graph: also find where other sessions branch off (the whole history is walked,
            whatever ``limit`` is, so that branches below the limit still meet it).
        patch: also find what each shown commit added (its items, turns numbered over the
            whole log).

    Returns:
        The :class:`LogView`.

    Raises:
        SessionNotFound: the session has no branch.
        CorruptSession, UnsupportedVersion: with ``patch``, the log at ``target`` cannot be read.
    """
    sid = target.session_id
    view = LogView([])
    if graph:
        history = store.log(sid, start=target.commit)
        view.commits = history[:limit] if limit is not None else history
        view.branches = branches(store, target, history)
    else:
        view.commits = store.log(sid, start=target.commit, limit=limit)
    if patch:
        snap = store.load(sid, target.commit)
        view.added = added_by(EventRanges(store, sid), view.commits, view_items(snap.events))
    return view


# -- diff ------------------------------------------------------------------------------------


def merge_base(store: SessionStore, a: str, b: str) -> str | None:
    """Return the newest commit on both first-parent chains of ``a`` and ``b``.

    Linear: ``a``'s chain is read once into a set, ``b``'s is walked until it meets it.

    Args:
        store: the session store.
        a: a commit id.
        b: a commit id.

    Returns:
        The merge base's commit id, or None when the chains share no commit.

    Raises:
        KeyError: a commit on the way is missing.
    """
    ancestors = {info.commit for info in store.first_parents(a)}
    for info in store.first_parents(b):
        if info.commit in ancestors:
            return info.commit
    return None


@dataclass
class DiffSide:
    """One side of a :class:`Diff`: what a revision holds beyond the merge base."""

    revision: Revision
    #: What a reader sees of the events after the merge base's (turns numbered over the whole log).
    items: list[Item]


@dataclass
class Diff:
    """What two revisions hold beyond their common ancestor (``gs diff``)."""

    #: The merge base, or None when the two share no history.
    base: CommitInfo | None
    a: DiffSide
    b: DiffSide


def diff(store: SessionStore, a: Revision, b: Revision) -> Diff:
    """Compare two revisions: find their merge base and the events each added since.

    Args:
        store: the session store.
        a: one revision.
        b: the other.

    Returns:
        The :class:`Diff`; each side's items are of the events after the merge base's last
        event (all of them when there is no merge base).

    Raises:
        KeyError: a commit is missing.
        CorruptSession, UnsupportedVersion: a log cannot be read safely.
    """
    base = merge_base(store, a.commit, b.commit)
    snap_a = store.load(a.session_id, a.commit)
    snap_b = store.load(b.session_id, b.commit)
    n_base = len(store.load(a.session_id, base).events) if base else 0
    base_info = store.commit_info(base) if base else None

    def side(target: Revision, events: list[Event]) -> DiffSide:
        return DiffSide(target, [item for item in view_items(events) if item.seq >= n_base])

    return Diff(base_info, side(a, snap_a.events), side(b, snap_b.events))


# -- search ----------------------------------------------------------------------------------


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
            obj = json.loads(line)
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
