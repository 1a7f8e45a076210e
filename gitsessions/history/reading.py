"""Reading sessions' history for the read-only commands (``list``, ``log``, ``diff``).

The service layer under ``gitsessions/cli/history.py``: which revision a name means (after
recovering a journal a crashed ``gs`` left), which events each commit added (``log -p``),
where other sessions branch off a history (``log --graph``) and what two revisions hold beyond
their merge base (``diff``). Finding a text in the stored messages (``search``) is
:mod:`gitsessions.history.search`.

Everything here works on a :class:`~gitsessions.store.SessionStore` and returns values; nothing
prints, reads the environment or imports the terminal libraries. Turning the values into
text and JSON is the CLI's job (with :mod:`gitsessions.cli.display.render`).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..errors import CorruptSession, InvalidSessionId
from ..ids import rev_session_id
from ..log.events import Event
from ..log.view import Item
from ..log.view import items as view_items
from ..secrets.redact import NO_REDACTION, Redactor
from ..store import CommitInfo, Revision, SessionInfo, SessionStore
from ..writer.opening import try_recover

# -- revisions and listings ------------------------------------------------------------------


def read_revision(store: SessionStore, rev: str, redactor: Redactor = NO_REDACTION,
                  warnings: list[str] | None = None) -> Revision:
    """Recover an orphaned journal of the session ``rev`` names, then resolve ``rev``.

    Args:
        store: the session store.
        rev: ``SESSION``, ``SESSION~N``, ``SESSION^`` or ``SESSION@COMMIT``.
        redactor: replaces secrets in a recovered turn (see :func:`~gitsessions.writer.recovery.recover_journal`).
        warnings: gets a line per recovery a hook refused (see :func:`~gitsessions.writer.opening.try_recover`),
            and the revision's note (a date before its reflog began).

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
    revision = store.resolve(rev)
    if revision.note and warnings is not None:
        warnings.append(revision.note)
    return revision


def list_sessions(store: SessionStore, *, archived: bool = False, redactor: Redactor = NO_REDACTION,
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
    listed = store.list_sessions()
    by_case: defaultdict[str, list[str]] = defaultdict(list)
    for info in listed:
        by_case[info.session_id.casefold()].append(info.session_id)
    for clash in (ids for ids in by_case.values() if len(ids) > 1):
        if warnings is not None:  # made behind gs's back (plain git, another machine's old gs)
            warnings.append(f"sessions {' and '.join(clash)} differ only by case, which a case-insensitive "
                            f"file system cannot hold apart; rename all but one (gs rename {clash[0]} NEW)")
    return listed


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
        items: :func:`gitsessions.log.view.items` of the session's events at the newest of ``commits`` (or later).

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
        turns = (info.message.fields.turn or 0) - (main[base].message.fields.turn or 0)
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
