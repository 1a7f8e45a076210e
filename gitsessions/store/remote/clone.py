"""Cloning a session repo from a remote: all or nothing (see :mod:`.remotes` for sync itself)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from dulwich.objects import Commit, ObjectID, Tree

from ...errors import RemoteError
from ..faults import writes_to
from ..git import GitStore
from ..repo import SESSION_FILE
from .remotes import Remotes
from .reports import PullReport


@writes_to(lambda url, path, *args, **kwargs: path)
def clone(url: str, path: str | os.PathLike, identity: str, remote: str = "origin",
          *, username: str | None = None, password: str | None = None,
          ssh_command: str | None = None, timeout: float | None = None) -> PullReport:
    """Set up a session repo at ``path`` from ``url``: add it as ``remote`` and pull every session.

    Branches become local sessions (not only remote-tracking refs), archives stay archived.
    All or nothing: a clone that fails leaves ``path`` as it was (it is built in a temporary
    folder beside it and moved into place at the end).

    ``username``, ``password``, ``ssh_command`` and ``timeout`` are :class:`.Remotes`'.

    Raises:
        RemoteError: ``path`` already holds sessions or other things, or the remote cannot be read.
        RepoError: ``path`` is a file.
    """
    target = Path(path)
    in_place = GitStore(target)
    in_place.check_path()
    if in_place.exists():
        if in_place.session_ids() or in_place.archived_ids():
            raise RemoteError(f"{target} already holds sessions; clone into a new path")
        if in_place.repo() and any(n == remote for n, _ in Remotes(in_place).list()):
            raise RemoteError(f"{target} already has a remote {remote!r}; use gs --repo {target} pull {remote}")
    in_place.close()
    building = target if in_place.exists() else target.parent / f".{target.name}.clone-{os.getpid()}"
    building.parent.mkdir(parents=True, exist_ok=True)
    try:
        with GitStore(building, identity=identity) as store:
            remotes = Remotes(store, username=username, password=password, ssh_command=ssh_command,
                              timeout=timeout)
            remotes.add(remote, url)
            report = remotes.pull(remote)  # it leaves the session saved last current
            # gs wrote these on another machine: the first gs list takes their trailers
            # instead of parsing every log (each is checked when opened)
            store.state.mark_received(_session_tips(store))
        if building != target:
            if target.exists():
                shutil.rmtree(target)  # empty, or only gs's lock folder (check_path allowed no more)
            os.rename(building, target)
        return report
    except BaseException:
        if building != target:
            shutil.rmtree(building, ignore_errors=True)
        else:
            with GitStore(target) as store:
                if any(n == remote for n, _ in Remotes(store).list()):
                    Remotes(store).remove(remote)
        raise


def _session_tips(store: GitStore) -> list[str]:
    """The tips of live and archived sessions whose tree holds a session log (two small reads each)."""
    repo = store.repo()
    assert repo is not None
    tips = [*map(store.tip, store.session_ids()), *map(store.archive_ref, store.archived_ids())]
    out: list[str] = []
    for tip in tips:
        try:
            commit = repo[ObjectID(tip.encode("ascii"))] if tip else None
            tree = repo[commit.tree] if isinstance(commit, Commit) else None
        except KeyError:
            continue
        if tip and isinstance(tree, Tree) and SESSION_FILE in tree:
            out.append(tip)
    return out
