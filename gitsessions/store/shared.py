"""What gs writes in a repo shared with git's ``core.sharedRepository`` gets the mode git gives it.

dulwich widens what its object store, index and reflogs write (``adjust_shared_perm``), but
not a ref, ``HEAD``, ``packed-refs`` or the config: those it makes ``0644`` less the umask.
Under the umask of a group-shared repo (``007``, :mod:`.privacy`) that is ``0640``, where git
gives ``0660``: the group could read a session but not move it. :class:`SessionRepo` is the
repo every open in the store goes through, so each of those writes follows the setting (named
or octal) as git's ``adjust_shared_perm`` does.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from typing import Any

from dulwich.config import ConfigFile
from dulwich.file import GitFile, SharedPerm, adjust_shared_perm
from dulwich.objects import ObjectID
from dulwich.refs import DiskRefsContainer, Ref
from dulwich.repo import Repo

from .lock import wait_out
from .packed import SessionRefs

_PACKED_REFS = b"packed-refs"


class SharedRefs(SessionRefs):
    """The refs on disk (:class:`.packed.SessionRefs`), each file written (and the folders above it) widened.

    As the repo's sharing says.
    """

    def __init__(self, perm: SharedPerm, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.shared_perm = perm

    def _widen(self, *names: bytes) -> None:
        """Give the files of ``names`` and ``packed-refs`` (and the folders between) what git's sharing gives them.

        A path gone meanwhile (a ref deleted, packed) needs nothing; one another account owns
        stays as it is (``gs doctor`` names it), as a save must not fail over it.
        """
        files = [self.refpath(name) for name in names] + [os.path.join(self.path, _PACKED_REFS)]
        paths = list(files)
        for path in files:
            folder = os.path.dirname(path)
            while folder.startswith((self.path + b"/", self.worktree_path + b"/")):
                paths.append(folder)  # made by dulwich's makedirs, without g+s where the parent lacks it
                folder = os.path.dirname(folder)
        for path in dict.fromkeys(paths):
            with contextlib.suppress(OSError):
                adjust_shared_perm(path, self.shared_perm)

    def set_symbolic_ref(self, name: Ref, other: Ref, *args: Any, **kwargs: Any) -> None:
        """Point ``name`` at ``other`` (dulwich's), the file widened."""
        super().set_symbolic_ref(name, other, *args, **kwargs)
        self._widen(name)

    def set_if_equals(self, name: Ref, *args: Any, **kwargs: Any) -> bool:
        """Set ``name`` if it is at the old value (dulwich's), the file widened; returns whether it was set."""
        ok = super().set_if_equals(name, *args, **kwargs)
        self._widen(name)
        return ok

    def add_if_new(self, name: Ref, *args: Any, **kwargs: Any) -> bool:
        """Create ``name`` if absent (dulwich's), the file widened; returns whether it was created."""
        ok = super().add_if_new(name, *args, **kwargs)
        self._widen(name)
        return ok

    def remove_if_equals(self, name: Ref, *args: Any, **kwargs: Any) -> bool:
        """Remove ``name`` if it is at the old value (dulwich's), a rewritten ``packed-refs`` widened."""
        ok = super().remove_if_equals(name, *args, **kwargs)
        self._widen()
        return ok

    def add_packed_refs(self, new_refs: Mapping[Ref, ObjectID | None]) -> None:
        """Add ``new_refs`` to ``packed-refs`` (dulwich's), the file widened."""
        super().add_packed_refs(new_refs)
        self._widen()

    def pack_refs(self, all: bool = False) -> None:  # noqa: A002 - dulwich's name
        """Pack the refs (dulwich's), ``packed-refs`` widened."""
        super().pack_refs(all)
        self._widen()


class SessionRepo(Repo):
    """A dulwich ``Repo`` whose ref writes follow its ``core.sharedRepository`` (:class:`SharedRefs`).

    Its refs read a ``packed-refs`` with a damaged line (:class:`.packed.SessionRefs`).
    """

    def __init__(self, root: str):
        super().__init__(root)
        perm = self.object_store.shared_perm
        if type(self.refs) is DiskRefsContainer:  # not reftable: git's own files
            args = (self.commondir(), self.controldir())
            self.refs = (SharedRefs(perm, *args, logger=self._write_reflog) if perm is not None
                         else SessionRefs(*args, logger=self._write_reflog))


def write_config(repo: Repo, config: ConfigFile) -> None:
    """Write ``config`` (from ``repo.get_config()``) back, with the mode the repo's sharing gives it.

    dulwich's ``ConfigFile.write_to_path`` makes it ``0644`` less the umask, whatever the sharing.
    A ``config.lock`` a killed writer left is taken over (:func:`.lock.wait_out`).

    Raises:
        RepoBusy: another live process holds ``config.lock`` past the wait.
    """
    path = config.path
    assert path is not None

    def write() -> None:
        with GitFile(path, "wb", shared_perm=repo.object_store.shared_perm) as f:
            config.write_to_file(f)

    wait_out(write)
