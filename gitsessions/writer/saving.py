"""The commits of a session: its pending events saved (now or behind the prompt).

A session (:mod:`gitsessions.writer.session`, whose :class:`Saving` part lives here) starts a
:class:`CommitJob` per save, made by a thread of its own when the commit is made behind the
prompt, and takes its result or its failure when it next needs the tip (the journal holds
the events meanwhile).
"""

from __future__ import annotations

import atexit
import queue
import threading
from collections.abc import Callable

from ..errors import DiskFull
from ..log.commits import Lineage, commit_message
from ..log.events import Event
from ..store import SessionStore, TurnJournal


class CommitJob:
    """One commit: ``make`` run at once, or by the commit thread when ``behind``.

    The commit thread is started with the first commit made behind and then waits for the
    next (starting a thread per turn made the turn wait for the thread to be scheduled:
    milliseconds on a busy machine). Commits are made one at a time, in the order given; an
    interpreter that ends while one is being made waits for it (see :func:`_drain`).

    Args:
        make: makes the commit; returns its id.
        count: how many of the session's events the commit holds.
        behind: hand ``make`` to the commit thread (else run it here, before this returns).

    Attributes:
        count: as given.
        commit: the commit made (None until it is, or when it failed).
        error: what ``make`` raised (None when nothing did), for whoever waits to raise.
    """

    def __init__(self, make: Callable[[], str], count: int, behind: bool):
        self.count = count
        self.commit: str | None = None
        self.error: BaseException | None = None
        self._make = make
        self._done = threading.Event()
        if behind:
            _submit(self)
        else:
            self.run()

    def run(self) -> None:
        """Make the commit, keeping its result or failure."""
        try:
            self.commit = self._make()
        except BaseException as exc:  # raised again by whoever waits, in its own thread
            self.error = exc
        finally:
            self._done.set()

    def done(self) -> bool:
        """True once the commit is made or failed."""
        return self._done.is_set()

    def join(self) -> None:
        """Wait until :meth:`done`."""
        self._done.wait()


_jobs: queue.SimpleQueue[CommitJob] = queue.SimpleQueue()
_pending: list[CommitJob] = []  # handed over and not done: what an ending interpreter waits for
_worker: threading.Thread | None = None
_worker_lock = threading.Lock()


def _serve() -> None:
    while True:
        job = _jobs.get()
        job.run()
        with _worker_lock:
            _pending.remove(job)


def _submit(job: CommitJob) -> None:
    global _worker
    with _worker_lock:
        _pending.append(job)
        if _worker is None:
            # A daemon that waits for work; an ending interpreter waits for its commits (_drain).
            _worker = threading.Thread(target=_serve, name="gs-commit", daemon=True)
            _worker.start()
            atexit.register(_drain)
    _jobs.put(job)


def _drain() -> None:
    """Wait for the commits handed over and not yet made (run when the interpreter ends)."""
    with _worker_lock:
        left = list(_pending)
    for job in left:
        job.join()


class Saving:
    """How a :class:`~gitsessions.writer.session.Session`'s pending events become a commit, now or behind the prompt.

    A part of the session (its one base), kept here beside :class:`CommitJob`: it reads and
    moves the session's bookkeeping (events, what the tip and the journal hold).
    """

    store: SessionStore
    id: str
    header: dict
    events: list[Event]
    forked_from: Lineage | None
    _tip: str | None
    _saving: CommitJob | None
    _committed: int
    _journaled: int
    _journal_open: bool
    _journal: TurnJournal

    @property
    def tip(self) -> str | None:
        """The commit the next save builds on (None before the first save); waits for one in flight."""
        self._settle()
        return self._tip

    @tip.setter
    def tip(self, commit: str | None) -> None:
        self._tip = commit

    def save(self, behind: bool = False) -> str | None:
        """Commit the pending events (if any) and clear the journal; return the commit id.

        A commit still being made behind the prompt is waited for first (and its failure raised).

        Args:
            behind: commit in a thread and return None; whatever waits for it raises the failures below.

        Raises:
            ConcurrentUpdate: the branch moved (the journal is kept; nothing is lost).
            DiskFull: no space for the commit (``kept="journal"``: the pending events stay in
                the journal and in memory, and the next save commits them; ``"partial"``: the
                journal holds them up to where the disk filled).
            RepoReadOnly: the repo cannot be written.
        """
        self._settle()
        pending = self.events[self._committed:]
        if not pending:
            return None
        message = commit_message(self.id, self.events, self._committed, lineage=self.forked_from)
        tip, header = self._tip, self.header if self._tip is None else None
        journal = self._journal

        def make() -> str:
            if behind:
                journal.sync()  # the turn's end, journaled without it: durable before the commit
            return self.store.append(self.id, pending, message, expected_tip=tip, header=header)

        self._saving = CommitJob(make, len(self.events), behind)
        return None if behind else self._settle()

    def wait_saved(self) -> str | None:
        """Wait for the commit made behind the prompt, if any; return the tip.

        Raises:
            ConcurrentUpdate, DiskFull, RepoReadOnly, HookRefused: it failed (raised once; its
                events stay pending, in memory and in the journal, for the next save).
        """
        self._settle()
        return self._tip

    def _settle(self, block: bool = True, raising: bool = True) -> str | None:
        """Take the result of the commit in flight (see :meth:`wait_saved`); return it, or None."""
        saving = self._saving
        if saving is None or not (block or saving.done()) or (saving.error is not None and not raising):
            return None
        saving.join()
        self._saving = None
        if isinstance(saving.error, DiskFull):
            kept = "partial" if self._journaled < len(self.events) else "journal"
            raise DiskFull(saving.error.path, kept=kept) from None
        if saving.error is not None:
            raise saving.error
        self._tip, self._committed = saving.commit, saving.count
        if self._committed == len(self.events):  # nothing pending after it: the journal is done with
            self._journal.clear()
            self._journal_open = False
            self._journaled = len(self.events)
        return self._tip
