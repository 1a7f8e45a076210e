"""The logs a store keeps in memory: what the next save appends to, and its compressed state.

A writer (``gs chat``) loads its session once and then saves turn after turn; each save
builds the new ``session.jsonl`` from the bytes the last one left, and its loose object from
the segments the last one compressed (:mod:`.loose`). A cache lost with the process: a log
not kept is read from git again, and a state not kept is compressed again by the next save.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import NamedTuple

from .loose import Deflated

#: At most this many logs are kept (the newest first to stay).
MAX_LOGS = 4
#: Bytes of logs kept besides the newest: a long session's previous tips are not held for
#: nothing (a 100 MB session would otherwise keep 4 copies of itself after 4 saves).
BUDGET_BYTES = 64 * 1024 * 1024


class Kept(NamedTuple):
    """One log: its bytes, its number of events, and its compressed state once a save made it."""

    raw: bytes
    events: int
    deflated: Deflated | None


class KeptLogs:
    """Logs by commit id, the most recently used last; bounded by :data:`MAX_LOGS` and :data:`BUDGET_BYTES`."""

    def __init__(self) -> None:
        self._logs: OrderedDict[str, Kept] = OrderedDict()

    def get(self, commit: str) -> Kept | None:
        """Return the log kept for ``commit``, or None."""
        return self._logs.get(commit)

    def __contains__(self, commit: object) -> bool:
        return commit in self._logs

    def put(self, commit: str, raw: bytes, events: int, deflated: Deflated | None = None) -> None:
        """Keep the log of ``commit`` (the newest now); drop the oldest beyond the bounds.

        Args:
            commit: the commit id.
            raw: the ``session.jsonl`` bytes at that commit.
            events: how many events they hold.
            deflated: their compressed state; None keeps the one already kept for the very
                same bytes (a log read again), if any.
        """
        old = self._logs.get(commit)
        if deflated is None and old is not None and old.raw is raw:
            deflated = old.deflated
        self._logs[commit] = Kept(raw, events, deflated)
        self._logs.move_to_end(commit)
        others = sum(len(k.raw) for k in self._logs.values()) - len(raw)
        while len(self._logs) > 1 and (len(self._logs) > MAX_LOGS or others > BUDGET_BYTES):
            _, dropped = self._logs.popitem(last=False)
            others -= len(dropped.raw)

    def deflated(self, commit: str | None, level: int) -> Deflated:
        """Return the compressed state of the log at ``commit`` at zlib ``level``; an empty one when none is kept.

        A log not compressed yet (only read) starts from nothing: its first save compresses
        it whole, every later one only the tail and what it appended.
        """
        kept = self._logs.get(commit) if commit is not None else None
        if kept is not None and kept.deflated is not None and kept.deflated.level == level:
            return kept.deflated
        return Deflated(level)
