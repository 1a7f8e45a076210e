"""What a session repo's folder is: whether a path holds one, and whether one may be made there.

Standard library only (no dulwich): the command line asks it before it opens the store,
and what it says decides whether gs touches a folder at all (writes into it, or makes it
private), so that a mistyped ``--repo`` never turns a folder of other things into a repo.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import RepoError

#: What a bare repo's folder holds, as git and gs make it (another process may be making it now).
_BARE_REPO_ENTRIES = frozenset({"gs", "HEAD", "config", "description", "branches", "hooks", "info", "objects",
                                "refs", "logs", "packed-refs"})


def is_repo(path: Path) -> bool:
    """Return True when ``path`` holds a git repository (bare layout)."""
    return (path / "HEAD").exists() and (path / "objects").is_dir()


def check_repo_path(path: Path) -> None:
    """Refuse to turn an existing file or non-empty folder that is not a session repo into one.

    Raises:
        RepoError: the path is a file, or a folder holding something else.
    """
    if is_repo(path) or not path.exists():
        return
    if not path.is_dir():
        raise RepoError(str(path), "it is a file, not a session repo")
    # What a bare repo holds (another process may be creating it right now) is fine.
    others = sorted(p.name for p in path.iterdir() if p.name.removesuffix(".lock") not in _BARE_REPO_ENTRIES)
    if others:
        shown = ", ".join(others[:4]) + (", ..." if len(others) > 4 else "")
        raise RepoError(str(path), f"the folder holds other things ({shown}), not a session repo")
