"""The commits of a session besides its events' bookkeeping: one being made, and a fork.

A session (:mod:`gitsessions.session`) starts a :class:`CommitJob` per save, in a thread of
its own when the commit is made behind the prompt, and takes its result or its failure when
it next needs the tip (the journal holds the events meanwhile). :func:`fork` makes a new
session on a past commit.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from .errors import BadRevision
from .rules import CommitId, Lineage, SessionId, check_session_id, commit_message
from .store import Revision, SessionStore
from .transcript import open_turn


class CommitJob:
    """One commit: ``make`` run at once, or in a thread of its own when ``behind``.

    Not a daemon thread: an interpreter that ends while a commit is being made waits for it.

    Args:
        make: makes the commit; returns its id.
        count: how many of the session's events the commit holds.
        behind: run ``make`` in a thread (else here, before this returns).

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
        self._thread = threading.Thread(target=self._run, name="gs-save") if behind else None
        if self._thread is not None:
            self._thread.start()
        else:
            self._run()

    def _run(self) -> None:
        try:
            self.commit = self._make()
        except BaseException as exc:  # raised again by whoever waits, in its own thread
            self.error = exc

    def done(self) -> bool:
        """True once the commit is made or failed."""
        return self._thread is None or not self._thread.is_alive()

    def join(self) -> None:
        """Wait until :meth:`done`."""
        if self._thread is not None:
            self._thread.join()


def fork(store: SessionStore, rev: Revision, new_id: str, reason: str | None = None) -> str:
    """Create session ``new_id`` starting at ``rev`` in O(1) (one commit, no content copied).

    The fork's commits carry ``Forked-From: <session>@<commit>``, and its first commit's
    parent is the fork point, so ``git merge-base`` finds it after push and clone. ``reason``:
    the new name's first reflog line (default ``branch: <subject>``; a restore says so).

    Returns:
        The fork's first commit id.

    Raises:
        BadRevision: the fork point is inside an unfinished turn.
        SessionExists, InvalidSessionId: ``new_id`` is taken or malformed.
    """
    check_session_id(new_id)
    snap = store.load(rev.session_id, rev.commit)
    if open_turn(snap.events) is not None:
        raise BadRevision(f"{rev.session_id}@{rev.commit[:7]}", "the fork point is inside an unfinished turn")
    lineage = Lineage(SessionId(rev.session_id), CommitId(rev.commit))
    return store.branch_from(new_id, rev.commit, commit_message(new_id, snap.events, kind="fork", lineage=lineage),
                             reason=reason)
