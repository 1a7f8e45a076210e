""".gitignore rules, as git reads them, for the file tools' walk (``list_files``, ``search_files``).

The rules are dulwich's (:class:`dulwich.ignore.IgnoreFilterManager`, gitignore(5)): each
folder's ``.gitignore`` applies to the paths below it, read when the walk first needs it. The
``.git`` folder is never walked. A folder that is ignored is not entered (git does the same:
a file in it cannot be taken back by ``!``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path


def walk(root: Path, start: Path, depth: int | None = None) -> Iterator[tuple[Path, bool]]:
    """Yield ``(path, is_dir)`` under ``start`` (inside ``root``), sorted, skipping what .gitignore ignores.

    The ``.gitignore`` files of ``root`` down to ``start`` and of every folder walked apply.
    Symbolic links are listed, never followed. A folder is listed before what it holds; the
    walk keeps one open listing per level, however deep it goes.

    Args:
        root: the working directory the paths are relative to.
        start: the folder walked.
        depth: the deepest level listed (1: what ``start`` holds; a folder at this level is
            yielded, not entered); None: all.
    """
    from dulwich.ignore import IgnoreFilterManager  # imported when a tool walks, not by the chat's start

    rules = IgnoreFilterManager(str(root), [], False)
    levels = [_listing(start)]
    while levels:
        entry = next(levels[-1], None)
        if entry is None:
            levels.pop()
            continue
        if entry.name == ".git":
            continue
        is_dir = entry.is_dir(follow_symlinks=False)
        path = Path(entry.path)
        rel = path.relative_to(root).as_posix()
        if rules.is_ignored(rel + "/" if is_dir else rel):
            continue
        yield path, is_dir
        if is_dir and (depth is None or len(levels) < depth):
            levels.append(_listing(path))


def _listing(folder: Path) -> Iterator[os.DirEntry[str]]:
    """What ``folder`` holds, sorted by name (nothing when it cannot be read)."""
    try:
        with os.scandir(folder) as entries:
            return iter(sorted(entries, key=lambda e: e.name))
    except OSError:
        return iter(())
