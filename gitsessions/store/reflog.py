"""HEAD and the reflogs of the session repo: which session is current, and every move of a name.

The current session is the repo's ``HEAD``, a symbolic ref to ``refs/heads/<id>`` (design.md,
"On disk": the git form of the tutorial's ``current`` field), pointed at a session when gs
saves or opens it. Writing it is cosmetic: a full or read-only disk, or a ``HEAD.lock``
another process holds, never fails the save that asked for it.

Each move of a session's ref (a save, a fork, a rename, an archive, a pull) is a line of its
reflog, ``logs/refs/heads/<id>`` (``logs/refs/archive/<name>`` once archived), as git writes
and reads them (``git reflog show``, ``git log -g``). Lines are read tolerantly: one without a
message (plain ``git update-ref`` without ``-m`` writes one) fails dulwich's parser.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from dulwich.file import FileLocked
from dulwich.refs import Ref
from dulwich.repo import Repo

from ..rules import SESSION_ID_RE, CommitId, SessionId, check_session_id
from .faults import optional_write
from .repo import point_head

_HEADS = b"refs/heads/"


def head_branch(controldir: Path) -> str | None:
    """Return the branch name ``HEAD`` points at (``work`` of ``ref: refs/heads/work``), else None.

    One small read, no repository opened; a detached or missing ``HEAD`` names none.
    """
    try:
        text = (controldir / "HEAD").read_bytes().strip()
    except OSError:
        return None
    prefix = b"ref: " + _HEADS
    return text[len(prefix):].decode("utf-8", "replace") if text.startswith(prefix) else None


class RefLogs:
    """The HEAD and reflog reads and writes of the git store (mixed into :class:`~.git.GitStore`).

    Needs the store's ``path`` and ``repo()``.
    """

    path: Path

    if TYPE_CHECKING:  # the store's own (GitStore.repo, GitStore.tip)
        def repo(self, create: bool = False) -> Repo | None: ...  # noqa: D102
        def tip(self, session_id: str) -> CommitId | None: ...  # noqa: D102

    def current(self) -> SessionId | None:
        """Return the session ``HEAD`` names when it exists, else None (detached, unborn, not a session)."""
        name = head_branch(self.path)
        if name is None or not SESSION_ID_RE.match(name) or name.upper() == "HEAD" or self.tip(name) is None:
            return None
        return SessionId(name)

    def set_current(self, session_id: str) -> None:
        """Point ``HEAD`` at ``refs/heads/<session_id>`` (one read when it already does; never fails).

        Raises:
            InvalidSessionId: no valid id.
        """
        ref = Ref(_HEADS + check_session_id(session_id).encode("ascii"))
        if head_branch(self.path) == session_id or (repo := self.repo()) is None:
            return
        try:
            optional_write(lambda: point_head(repo, ref, always=True))
        except (OSError, FileLocked):  # cosmetic: a save never fails over HEAD
            pass
