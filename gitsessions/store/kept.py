"""The logs a store keeps in memory: what the next save appends to, and its compressed state.

A writer (``gs chat``) loads its session once and then saves turn after turn; each save
builds the new ``session.jsonl`` from the bytes the last one left, and its loose object from
the segments the last one compressed (:mod:`.loose`). A cache lost with the process: a log
not kept is read from git again, and a state not kept is compressed again by the next save.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import NamedTuple

from ..log.events import missing_line_end
from .loose import Deflated

#: At most this many logs are kept (the newest first to stay).
MAX_LOGS = 4
#: Bytes of logs kept besides the newest: a long session's previous tips are not held for
#: nothing (a 100 MB session would otherwise keep 4 copies of itself after 4 saves).
BUDGET_BYTES = 64 * 1024 * 1024


class Kept(NamedTuple):
    """One log: its bytes, its number of events, and its compressed state once a save made it.

    ``data`` is the ``bytes`` read from git, or a ``bytearray`` that the saves made one on
    another share: each appends to it in place (no save copies the whole log to add a turn)
    and keeps its own ``size``; nothing before a kept size is ever changed.
    """

    data: bytes | bytearray
    size: int
    events: int
    deflated: Deflated | None

    @property
    def raw(self) -> bytes:
        """The log's bytes (a copy when they sit in a shared buffer)."""
        data = self.data
        return data if type(data) is bytes else bytes(memoryview(data)[:self.size])


class KeptLogs:
    """Logs by commit id, the most recently used last; bounded by :data:`MAX_LOGS` and :data:`BUDGET_BYTES`."""

    def __init__(self) -> None:
        self._logs: OrderedDict[str, Kept] = OrderedDict()

    def get(self, commit: str) -> Kept | None:
        """Return the log kept for ``commit``, or None."""
        return self._logs.get(commit)

    def __contains__(self, commit: object) -> bool:
        return commit in self._logs

    def put(self, commit: str, data: bytes | bytearray, events: int, deflated: Deflated | None = None,
            size: int | None = None) -> None:
        """Keep the log of ``commit`` (the newest now); drop the oldest beyond the bounds.

        Args:
            commit: the commit id.
            data: the ``session.jsonl`` bytes at that commit, or the buffer holding them first.
            events: how many events they hold.
            deflated: their compressed state; None keeps the one already kept for the very
                same bytes (a log read again), if any.
            size: how many bytes of ``data`` are the log (all when None).
        """
        size = len(data) if size is None else size
        old = self._logs.get(commit)
        if deflated is None and old is not None and old.data is data and old.size == size:
            deflated = old.deflated
        self._logs[commit] = Kept(data, size, events, deflated)
        self._logs.move_to_end(commit)
        buffers = {id(k.data): k for k in self._logs.values()}  # a shared buffer counts once
        others = sum(len(k.data) for k in buffers.values()) - len(data)
        while len(self._logs) > 1 and (len(self._logs) > MAX_LOGS or others > BUDGET_BYTES):
            _, dropped = self._logs.popitem(last=False)
            if all(k.data is not dropped.data for k in self._logs.values()):
                others -= len(dropped.data)

    def loaded(self, commit: str, raw: bytes, events: int) -> bool:
        """Keep the log of ``commit`` just read and checked; return True when it was not kept yet.

        A log kept already is the same log (a commit names it): its buffer, which a save may
        grow, and its compressed state stay.
        """
        kept = self._logs.get(commit)
        if kept is None:
            self.put(commit, raw, events)
            return True
        self.put(commit, kept.data, kept.events, kept.deflated, kept.size)
        return False

    def grown(self, parent: str | None, start: bytes, lines: bytes) -> tuple[bytearray, int]:
        """Return the log at ``parent`` with ``lines`` appended, as a buffer and the new log's size.

        In place when ``parent``'s log is the end of its buffer (the last save's): O(appended).
        Otherwise (the log as read, or a save onto an older commit) the log is copied once
        into a new buffer, with room to grow.

        Args:
            parent: the commit saved on, whose log must be kept (None: a new session).
            start: a new session's header line (ignored when ``parent`` is given).
            lines: the lines to append.
        """
        kept = self._logs.get(parent) if parent is not None else None
        if kept is None:
            buf = bytearray(start)
        elif type(kept.data) is bytearray and len(kept.data) == kept.size:
            buf = kept.data
        else:
            buf = bytearray(memoryview(kept.data)[:kept.size])
            if type(kept.data) is bytes:  # the log as read: the buffer holds it now (one copy, not two)
                assert parent is not None
                self._logs[parent] = kept._replace(data=buf)
        try:
            buf += missing_line_end(buf)
            buf += lines
        except BufferError:  # a view of it is still alive somewhere: never wait on that
            buf = bytearray(memoryview(buf)[:kept.size if kept is not None else len(buf)])
            buf += missing_line_end(buf)
            buf += lines
        return buf, len(buf)

    def deflated(self, commit: str | None, level: int) -> Deflated:
        """Return the compressed state of the log at ``commit`` at zlib ``level`` (empty for None).

        A log not compressed yet (only read) is compressed whole here, once: the state is
        kept with it, so that every save on it, the first after the session was opened and
        any later one on the same commit, compresses only the tail and what it appended.
        """
        kept = self._logs.get(commit) if commit is not None else None
        if kept is None:
            return Deflated(level)
        if kept.deflated is None or kept.deflated.level != level:
            with memoryview(kept.data)[:kept.size] as view:
                state = Deflated(level).grown(view)
            assert commit is not None
            self._logs[commit] = kept._replace(deflated=state)
            return state
        return kept.deflated
