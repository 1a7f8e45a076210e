"""A commit made now or behind the prompt, and the one thread that makes those made behind.

A :class:`~gitsessions.writer.session.Session` starts a :class:`CommitJob` per save: run at
once, or handed to the commit thread when the commit is made behind the prompt. The session
takes its result or its failure when it next needs the tip (the journal holds the events
meanwhile); nothing here knows what a session is.
"""

from __future__ import annotations

import atexit
import queue
import threading
from collections.abc import Callable


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
