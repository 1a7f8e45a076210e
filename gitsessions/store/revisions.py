"""Revisions of a session, git's syntax on the store's primitives (what :meth:`SessionStore.resolve` does).

``SESSION``, ``SESSION~N``, ``SESSION^`` (N saves back along first parents; suffixes combine)
or ``SESSION@COMMIT`` (a prefix of >= 4 hex digits of a commit in its history).
"""

from __future__ import annotations

import itertools
import re
from typing import TYPE_CHECKING

from ..errors import BadRevision, SessionNotFound
from ..rules import REV_RE, CommitId, SessionId, check_session_id
from .values import Revision

if TYPE_CHECKING:
    from .base import SessionStore

#: What a revision may look like (the message of a malformed one).
FORMS = "SESSION, SESSION~N, SESSION^ or SESSION@COMMIT"


def resolve(store: SessionStore, rev: str) -> Revision:
    """Resolve ``rev`` (any of :data:`FORMS`) to a commit of its session.

    Raises:
        BadRevision: malformed, or names no commit (the message names what exists).
        SessionNotFound: no such session.
    """
    m = REV_RE.match(rev)
    if not m:
        raise BadRevision(rev, f"expected {FORMS}")
    sid, suffix = check_session_id(m.group("id")), m.group("suffix")
    tip = store.tip(sid)
    if tip is None:
        if store.archive_ref(sid):
            raise BadRevision(rev, f"session {sid!r} is archived; restore it with 'gs restore {sid}'")
        raise SessionNotFound(sid, store.session_ids())
    start: str = tip
    if not suffix:
        return Revision(SessionId(sid), CommitId(start), start == tip)
    if suffix.startswith("@"):
        prefix = suffix[1:].lower()
        if not re.fullmatch(r"[0-9a-f]{4,40}", prefix):
            raise BadRevision(rev, "a commit after @ is 4 to 40 hex digits")
        hits = [c.commit for c in store.log(sid) if c.commit.startswith(prefix)]
        if not hits:
            raise BadRevision(rev, f"no commit {prefix} in the history of {sid!r} (see 'gs log {sid}')")
        if len(hits) > 1:
            raise BadRevision(rev, f"{prefix} is ambiguous: " + ", ".join(h[:12] for h in hits))
        return Revision(sid, hits[0], hits[0] == tip)
    back = 0
    for step in re.findall(r"~\d*|\^+", suffix):
        back += (int(step[1:]) if step[1:] else 1) if step.startswith("~") else len(step)
    history = list(itertools.islice(store.first_parents(start), back + 1))
    if len(history) <= back:
        n = sum(1 for _ in store.first_parents(start))
        base = rev[: len(rev) - len(suffix)]
        raise BadRevision(rev, f"{base!r} has {n} save{'s' if n != 1 else ''}, so {base}~0 to {base}~{n - 1} exist")
    return Revision(sid, history[back].commit, history[back].commit == tip)
