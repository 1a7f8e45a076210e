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

import os
from pathlib import Path
from typing import TYPE_CHECKING

from dulwich.file import FileLocked
from dulwich.refs import Ref
from dulwich.repo import Repo

from ..ids import SESSION_ID_RE, CommitId, SessionId, check_session_id
from .faults import optional_write
from .repo import point_head, read_refs
from .values import ReflogEntry

_ZERO = "0" * 40
_HEADS = b"refs/heads/"
_REMOTES = b"refs/remotes/"


def parse_reflog(data: bytes) -> list[ReflogEntry]:
    """Return the entries of a reflog file's bytes, oldest first; a damaged line is skipped.

    Args:
        data: the file (``<old> <new> <who> <time> <tz>[TAB<message>]`` lines, git's format).
    """
    out = []
    for line in data.splitlines():
        head, _tab, message = line.partition(b"\t")
        parts = head.split(b" ")
        if len(parts) < 5 or len(parts[0]) != 40 or len(parts[1]) != 40:
            continue
        old, new = parts[0].decode("ascii", "replace"), parts[1].decode("ascii", "replace")
        try:
            when, tz = int(parts[-2]), parts[-1].decode("ascii")
            sign = -1 if tz.startswith("-") else 1
            offset = sign * (int(tz[1:3]) * 3600 + int(tz[3:5]) * 60)
        except (ValueError, UnicodeDecodeError):
            continue
        out.append(ReflogEntry(CommitId(old) if old != _ZERO else None, CommitId(new) if new != _ZERO else None,
                               b" ".join(parts[2:-2]).decode("utf-8", "replace"), when, offset,
                               message.decode("utf-8", "replace").strip()))
    return out


def subject_of(message: bytes) -> str:
    """Return the first line of a commit message as text."""
    return message.split(b"\n", 1)[0].decode("utf-8", "replace")


def save_line(message: bytes, *, created: bool, commits: int = 1) -> bytes:
    """Return the reflog line of a save, in ``git commit``'s words: ``commit: <subject>``.

    A save that created the session says ``commit (initial): <subject>``; commits written
    at once (an import's) say how many: ``import: 3 commits, the last commit: <subject>``.

    Args:
        message: the (last) commit's message.
        created: the save made the session.
        commits: how many commits the ref moved over.
    """
    line = ("commit (initial): " if created else "commit: ") + subject_of(message)
    if commits > 1:
        line = f"import: {commits} commits, the last {line}"
    return line.encode("utf-8")


def branch_line(message: bytes) -> bytes:
    """Return the reflog line of a fork's new ref: ``branch: <subject of its first commit>``."""
    return f"branch: {subject_of(message)}".encode()


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
    """The HEAD, reflog and tracking-ref reads of the git store (mixed into :class:`~.git.GitStore`).

    Needs the store's ``path`` and ``repo()``.
    """

    path: Path

    if TYPE_CHECKING:  # the store's own (GitStore.repo, GitStore.tip)
        def repo(self, create: bool = False) -> Repo | None: ...  # noqa: D102
        def tip(self, session_id: str) -> CommitId | None: ...  # noqa: D102

    def session_ids(self) -> list[SessionId]:
        """Return the ids of all sessions, sorted: branches named by a valid id (``feature/x`` is none).

        Their names only, from one listing of ``refs/heads`` and ``packed-refs``: no ref file is
        read (what :meth:`~.git.GitStore.tips` reads, ~10 us each: an import of 1,000 sessions
        asks before each new one whether its id is taken, twice). A ref being created (its
        ``.lock``) is none yet; one whose file holds no commit id names a session that fails to load.
        """
        repo = self.repo()
        if repo is None:
            return []
        names = {ref[len(_HEADS):].decode("utf-8", "replace") for ref in repo.refs.get_packed_refs()
                 if ref.startswith(_HEADS)}
        try:
            with os.scandir(os.path.join(repo.controldir(), "refs", "heads")) as entries:
                names.update(e.name for e in entries if e.is_file(follow_symlinks=False))
        except (FileNotFoundError, NotADirectoryError):
            pass
        return [SessionId(n) for n in sorted(names) if SESSION_ID_RE.match(n) and n.upper() != "HEAD"]

    def current(self) -> SessionId | None:
        """Return the session ``HEAD`` names when it exists, else None (detached, unborn, not a session)."""
        name = head_branch(self.path)
        if name is None or not SESSION_ID_RE.match(name) or name.upper() == "HEAD" or self.tip(name) is None:
            return None
        return SessionId(name)

    def head_ref(self) -> str | None:
        """Return the ref ``HEAD`` names (``refs/heads/work``), existing or not; None when detached or missing."""
        try:
            text = (self.path / "HEAD").read_bytes().strip()
        except OSError:
            return None
        return text[5:].decode("utf-8", "replace") if text.startswith(b"ref: ") else None

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

    def reflog(self, name: str, archived: bool = False) -> list[ReflogEntry]:
        """Return the reflog of session ``name`` (or of archived session ``name``), oldest first.

        Empty when there is none (a ref made by a tool that writes no reflog).
        """
        if not SESSION_ID_RE.match(name):
            return []
        folder = "archive" if archived else "heads"
        try:
            return parse_reflog((self.path / "logs" / "refs" / folder / name).read_bytes())
        except OSError:
            return []

    def tracking(self, session_id: str) -> dict[str, CommitId]:
        """Return remote name -> the commit its tracking ref ``refs/remotes/<remote>/heads/<id>`` holds."""
        repo = self.repo()
        if repo is None:
            return {}
        tail = b"/heads/" + check_session_id(session_id).encode("ascii")
        out = {}
        for ref, sha in read_refs(repo, Ref(_REMOTES)).items():
            if ref.endswith(tail) and b"/" not in ref[len(_REMOTES):-len(tail)]:
                out[ref[len(_REMOTES):-len(tail)].decode("utf-8", "replace")] = CommitId(sha.decode("ascii"))
        return dict(sorted(out.items()))

