"""A fork: a new session that starts at a past commit of another, made in O(1) (nothing is copied).

Forks are made here alone: by ``gs fork`` and ``gs restore``, by ``/fork``, and by the first
write to a past revision opened for writing (:func:`~gitsessions.writer.opening.open_revision`):
sending from the past never moves the original branch.
"""

from __future__ import annotations

from ..errors import BadRevision
from ..ids import CommitId, SessionId, check_session_id
from ..log.commits import Lineage, commit_message
from ..log.transcript import open_turn
from ..store import Revision, SessionStore


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
