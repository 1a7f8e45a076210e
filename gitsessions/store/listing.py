"""The rows of ``gs list``: each session's tip time and message, from a row cache, its trailers or its log.

The rule is :meth:`SessionStore.list_sessions`'s (its docstring says it); this module carries
it out, and keeps what it read in a :class:`RowCache` so the next list reads no commit of a
tip it has seen. A row belongs to a commit, not to a session: renames and archives keep it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from ..errors import CorruptSession, UnsupportedVersion
from ..ids import CommitId, SessionId
from ..log.commits import CommitMessage
from .values import CommitInfo, SessionInfo, Snapshot

#: A row: the tip's commit time (epoch seconds) and its message as ``gs list`` shows it.
Row = tuple[int, CommitMessage]
#: What :func:`saved_last` reads of a row: its commit time and whether an import wrote the commit.
Stamp = tuple[int, bool]


class Tips(Protocol):
    """What the rows read of a store: its tips, their commits and logs (a :class:`~.base.SessionStore` is one)."""

    #: The errors of a commit that cannot be read.
    unreadable: tuple[type[Exception], ...]

    def tips(self) -> dict[SessionId, CommitId]:
        """Return every live session's tip by id."""
        ...

    def commit_info(self, commit: str) -> CommitInfo:
        """Return one commit's :class:`CommitInfo`."""
        ...

    def known_logs(self) -> set[str]:
        """Return the commits known to hold a session log."""
        ...

    def load(self, session_id: str, commit: str | None = None) -> Snapshot:
        """Read and validate a session's log at ``commit``."""
        ...

    def archived_ids(self) -> list[str]:
        """Return the names of archived sessions."""
        ...

    def archive_ref(self, name: str) -> CommitId | None:
        """Return the commit of an archived session."""
        ...


class RowCache:
    """Rows of ``gs list`` by tip commit, kept between lists. This one keeps none.

    A backend's cache (the git store's ``<repo>/gs/rows``) refines both methods. A row is
    only ever what :func:`live_rows` gave for its commit, so a cache is never stale, only
    incomplete; keeping rows is optional (a read-only repo lists at the speed of git).
    """

    def read(self) -> dict[str, Row]:
        """Return the rows kept, by commit."""
        return {}

    def stamps(self) -> dict[str, Stamp]:
        """Return the :data:`Stamp` of each row kept (commit time, epoch s; imported), by commit: :meth:`read`'s."""
        return {commit: (row[0], imported(row[1])) for commit, row in self.read().items()}

    def update(self, rows: Mapping[str, Row], known: Mapping[str, Row], live: Iterable[str]) -> None:
        """Keep ``rows`` just read from git (``known``: what :meth:`read` gave; ``live``: every tip)."""


def imported(message: CommitMessage) -> bool:
    """True when an import wrote the commit of ``message`` (its ``Imported-From`` trailer)."""
    return message.fields.imported_from is not None


def trusted(message: CommitMessage) -> bool:
    """True when ``message`` carries the counts ``gs list`` shows (gs wrote its ``Turn`` and ``Messages``)."""
    fields = message.fields
    return fields.turn is not None and fields.messages is not None


def live_rows(store: Tips, cache: RowCache) -> list[SessionInfo]:
    """Return :meth:`SessionStore.list_sessions` of ``store``, reading from git only the tips ``cache`` lacks.

    Each tip's message is parsed at most once; the rows read (not those in error: a damaged
    tip is checked again next time) go to ``cache``.
    """
    out = []
    known = cache.read()
    read: dict[str, Row] = {}
    verified: set[str] | None = None  # read at the first tip without a row
    tips = store.tips()
    for sid, tip in tips.items():
        row = known.get(tip)
        if row is not None:
            out.append(SessionInfo(sid, tip, row[0], row[1]))
            continue
        try:
            info = store.commit_info(tip)
        except store.unreadable as exc:
            out.append(SessionInfo(sid, tip, 0, CommitMessage(""), error=f"unreadable tip: {exc}"))
            continue
        if verified is None:
            verified = store.known_logs()
        error, message = None, info.message
        if tip not in verified or not trusted(message):
            try:
                message = message.counted(sid, store.load(sid, tip).events)
            except (CorruptSession, UnsupportedVersion) as exc:
                error = str(exc)
        if error is None:
            read[tip] = (info.time, message)
        out.append(SessionInfo(sid, tip, info.time, message, error))
    cache.update(read, known, tips.values())
    return out


def saved_last(store: Tips, cache: RowCache) -> SessionId | None:
    """Return :meth:`SessionStore.saved_last` of ``store``, from the stamps in ``cache`` when it has every tip's.

    The rule: of :func:`live_rows`'s rows without an error, the one whose tip gs saved
    newest, by its commit (committer) time: when it was saved. A tip an import wrote (its
    ``Imported-From`` trailer) comes after all of them, and the newest of those only when
    no other is left: an import dates its commits, the commit time too, when the
    conversation was said, so that the same import makes the same commits on every machine
    (a sync finds them equal); that says nothing of when it was saved here, and a skewed
    clock in an export dates it in the future. Nor is an import the user's chat (it leaves
    ``HEAD`` as it was). A session continued in gs since has a tip of gs's, dated by it.
    Not the reflog: it is this machine's alone (a clone has none), and an import run after
    a chat would move a ref last. Ties go to the smaller id (a commit time is in seconds).

    When every tip has a cached stamp only the winner's commit is read, to check its stamp
    (a stamp the cache got wrong falls back to the rule); else the rows are read as ``gs
    list`` reads them, and kept, so the next call reads none.
    """
    tips = store.tips()
    stamps = cache.stamps()
    if tips and all(tip in stamps for tip in tips.values()):
        sid = max(tips, key=lambda sid: _rank(stamps[tips[sid]]))  # the first of the newest, by id
        try:
            info = store.commit_info(tips[sid])
            if (info.time, imported(info.message)) == stamps[tips[sid]]:
                return sid
        except store.unreadable:
            pass  # flagged by the rule below
    rows = [row for row in live_rows(store, cache) if row.error is None]
    return max(rows, key=lambda row: _rank((row.time, imported(row.message)))).session_id if rows else None


def _rank(stamp: Stamp) -> tuple[bool, int]:
    """The order of :func:`saved_last`: gs's saves before imports' commits, each by commit time."""
    time, by_import = stamp
    return (not by_import, time)


def archived_rows(store: Tips) -> list[SessionInfo]:
    """Return :meth:`SessionStore.archived_sessions` of ``store``: each archived tip's commit, as it is."""
    out = []
    for name in store.archived_ids():
        sha = store.archive_ref(name)
        if not sha:
            continue
        try:
            info = store.commit_info(sha)
            out.append(SessionInfo(SessionId(name), sha, info.time, info.message))
        except store.unreadable as exc:
            out.append(SessionInfo(SessionId(name), sha, 0, CommitMessage(""), error=f"unreadable tip: {exc}"))
    return out
