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
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dulwich.ignore import IgnoreFilterManager


def walk(root: Path, start: Path) -> Iterator[tuple[Path, bool]]:
    """Yield ``(path, is_dir)`` under ``start`` (inside ``root``), sorted, skipping what .gitignore ignores.

    The ``.gitignore`` files of ``root`` down to ``start`` and of every folder walked apply.
    Symbolic links are listed, never followed.

    Args:
        root: the working directory the paths are relative to.
        start: the folder walked.
    """
    from dulwich.ignore import IgnoreFilterManager  # imported when a tool walks, not by the chat's start

    yield from _walk(root, start, IgnoreFilterManager(str(root), [], False))


def _walk(root: Path, folder: Path, rules: IgnoreFilterManager) -> Iterator[tuple[Path, bool]]:
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if entry.name == ".git":
            continue
        is_dir = entry.is_dir(follow_symlinks=False)
        path = Path(entry.path)
        rel = path.relative_to(root).as_posix()
        if rules.is_ignored(rel + "/" if is_dir else rel):
            continue
        yield path, is_dir
        if is_dir:
            yield from _walk(root, path, rules)
