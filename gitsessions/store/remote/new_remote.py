"""A push to a local path where no repository is yet: gs makes the bare repo, its HEAD the session pushed.

git refuses to push to a path that holds no repository, and ``git init --bare`` leaves the new
repo's HEAD at an unborn ``master`` that gs never pushes: ``git clone`` of it then warns
"remote HEAD refers to nonexistent ref" and checks nothing out, and ``git log`` there shows
nothing. So a push (``gs push``, asked for by the user: never a sync, which ``gs watch`` runs
unattended against a disk that may not be mounted) to a path that does not exist yet, in a
folder that does, or to an empty folder (made for it: ``mkdir backup``), makes the bare repo
there first, with HEAD at the session the user is on. A repository already there keeps its
HEAD, as git's push leaves it: gs's own clone needs none (it makes the session saved last
current). A path whose folder is missing too (a typo, a disk not mounted), and a folder
holding files that are no repository, are refused as before.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from pathlib import Path

from dulwich.repo import Repo

from ..git import GitStore
from .urls import local_path


def create_bare(url: str, store: GitStore, only: Collection[str] | None = None) -> Path | None:
    """Make the bare repository ``url`` names: a local path not there yet (in a folder that is), or an empty folder.

    Its HEAD names the current session here when it is pushed, else the first session pushed.

    Args:
        url: the remote's URL or path, as configured.
        store: the session repo pushed from.
        only: the session ids pushed (None: every one).

    Returns:
        The path made, or None: a network URL, a path that exists and is no empty folder (a
        symbolic link too, even one to nothing: git's error says what it is), one whose folder
        does not, or nothing to push (no session repo here yet).

    Raises:
        OSError: the folder cannot be written (the push reports it as for any local write).
    """
    path = local_path(url)
    if path is None or not store.exists():
        return None
    empty = _empty_folder(path)
    if not empty and (os.path.lexists(path) or not path.parent.is_dir()):
        return None
    pushed = [sid for sid in store.session_ids() if only is None or sid in only]
    head = store.current() if store.current() in pushed else next(iter(pushed), None)
    Repo.init_bare(str(path), mkdir=not empty, default_branch=head.encode() if head else None).close()
    return path


def _empty_folder(path: Path) -> bool:
    """True when ``path`` is a folder (not a link to one) holding nothing."""
    if path.is_symlink() or not path.is_dir():
        return False
    try:
        with os.scandir(path) as entries:
            return next(entries, None) is None
    except OSError:
        return False
