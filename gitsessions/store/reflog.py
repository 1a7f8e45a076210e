"""HEAD and the reflogs of the session repo as git keeps them: which session is current, and every move of a name.

The current session is the repo's ``HEAD``, a symbolic ref to ``refs/heads/<id>``, read here
in one small file read (the store points it: :meth:`~.git.GitStore.set_current`). Each move
of a session's ref (a save, a fork, a rename, an archive, a pull) is a line of its reflog,
``logs/refs/heads/<id>`` (``logs/refs/archive/<name>`` once archived), as git writes and reads
them (``git reflog show``, ``git log -g``); the lines of a save and of a fork are worded here.
Lines are read tolerantly: one without a message (plain ``git update-ref`` without ``-m``
writes one) fails dulwich's parser.
"""

from __future__ import annotations

from pathlib import Path

from ..ids import CommitId, is_session_id
from .values import ReflogEntry

_ZERO = "0" * 40
_HEADS = b"refs/heads/"


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


def head_ref(controldir: Path) -> str | None:
    """Return the ref ``HEAD`` names (``refs/heads/work``), existing or not; None when detached or missing."""
    try:
        text = (controldir / "HEAD").read_bytes().strip()
    except OSError:
        return None
    return text[5:].decode("utf-8", "replace") if text.startswith(b"ref: ") else None


def read_reflog(controldir: Path, name: str, archived: bool = False) -> list[ReflogEntry]:
    """Return the reflog of session ``name`` (or of archived session ``name``), oldest first.

    Empty when there is none (a ref made by a tool that writes no reflog) or ``name`` is no session id.
    """
    if not is_session_id(name):
        return []
    folder = "archive" if archived else "heads"
    try:
        return parse_reflog((controldir / "logs" / "refs" / folder / name).read_bytes())
    except OSError:
        return []
