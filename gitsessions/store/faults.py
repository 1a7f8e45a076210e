"""The one place where the file system's refusals become gitsessions errors.

A write into the session repo can fail because the repo is mounted read-only (``EROFS``),
belongs to someone else (``EACCES``), or the disk or quota is full (``ENOSPC``,
``EDQUOT``). Every writing primitive of the store runs under :func:`os_faults`, so callers
see :class:`~gitsessions.errors.RepoReadOnly` or :class:`~gitsessions.errors.DiskFull`
(exit status 1, a message saying what to do) and never an ``OSError``. Caches are optional
(rebuilt from git when missing): :func:`optional_write` drops a cache write the repo refuses.
"""

from __future__ import annotations

import errno
import functools
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from dulwich.file import _GitFile

from ..errors import DiskFull, GitSessionsError, RepoReadOnly
from .writers import writing

#: errno values meaning "no space left" (a full disk, or the user's quota).
FULL = frozenset({errno.ENOSPC, errno.EDQUOT})
#: errno values meaning "this repo cannot be written", with the reason shown.
READ_ONLY = {errno.EROFS: "read-only file system", errno.EACCES: "permission denied"}

F = TypeVar("F", bound=Callable[..., Any])


def translate(exc: OSError, repo: str | os.PathLike) -> GitSessionsError | None:
    """Return the gitsessions error an ``OSError`` of a write into ``repo`` means, or None.

    Args:
        exc: what the write raised.
        repo: the session repo (named in the message).
    """
    if exc.errno in FULL:
        return DiskFull(os.fspath(repo))
    if exc.errno in READ_ONLY:
        return RepoReadOnly(os.fspath(repo), READ_ONLY[exc.errno])
    return None


def local_fault(exc: OSError, repo: str | os.PathLike) -> GitSessionsError | None:
    """Return the gitsessions error of ``exc`` when it is a refused write into ``repo``, else None.

    For code that also talks to a network (a fetch): a full disk or a read-only file system
    is always local; "permission denied" only for a file under ``repo`` (a socket may be
    refused too, and that is the remote's fault).

    Args:
        exc: what the operation raised.
        repo: the session repo.
    """
    if exc.errno in FULL or exc.errno == errno.EROFS:
        return translate(exc, repo)
    name = exc.filename if isinstance(exc.filename, (str, bytes, os.PathLike)) else None
    if name is None:
        return None
    root = os.path.realpath(os.fspath(repo))
    path = os.path.realpath(os.fsdecode(name))
    return translate(exc, repo) if os.path.commonpath([root, path]) == root else None


def unwritable(repo: str | os.PathLike) -> str | None:
    """Return why ``repo`` cannot be written (as :data:`READ_ONLY` says it), or None when it can.

    For advice that would need a write here (a suggested ``gs sync``), before giving it.
    """
    path = os.fspath(repo)
    if not os.path.isdir(path) or os.access(path, os.W_OK):
        return None
    try:
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            return READ_ONLY[errno.EROFS]
    except OSError:
        pass
    return READ_ONLY[errno.EACCES]


@contextmanager
def os_faults(repo: str | os.PathLike) -> Iterator[None]:
    """Run a write into ``repo``, turning a full or read-only file system into our errors.

    Raises:
        DiskFull: no space or quota left.
        RepoReadOnly: the repo is read-only or not writable by this user.
    """
    try:
        yield
    except OSError as exc:
        error = translate(exc, repo)
        if error is None:
            raise
        _drop_locks_of(exc)
        raise error from exc


def _drop_locks_of(exc: BaseException) -> None:
    """Remove the ``.lock`` files of the dulwich writes ``exc`` interrupted.

    When the disk fills, dulwich's ``GitFile`` fails in ``close`` (the flush) and again in
    ``abort``, so its ``<object>.lock`` or ``refs/heads/<id>.lock`` stays behind: the next
    save then waits for it to go stale, and plain git refuses to move that ref. The files
    are found in the frames the error passed through, so only this process's own locks go.
    """
    tb = exc.__traceback__
    while tb is not None:
        for value in list(tb.tb_frame.f_locals.values()):
            if isinstance(value, _GitFile) and not getattr(value, "_closed", True):
                try:
                    value._file.close()  # closes the descriptor even when the flush fails
                except OSError:
                    pass
                try:
                    os.remove(value._lockfilename)
                except FileNotFoundError:
                    pass
                value._closed = True
        tb = tb.tb_next


def writes(method: F) -> F:
    """Decorate a store method that writes into ``self.path`` with :func:`os_faults`, as a writer there.

    The process is one of the repo's writers while it runs (:func:`.writers.writing`), so
    what it leaves half done if it is killed is known for its own.
    """
    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        with os_faults(self.path), writing(self.path):
            return method(self, *args, **kwargs)
    return wrapper  # type: ignore[return-value]


def writes_to(where: Callable[..., str | os.PathLike]) -> Callable[[F], F]:
    """Decorate a function that writes into a repo with :func:`os_faults`, as a writer there (see :func:`writes`).

    Args:
        where: given the function's arguments, returns the repo (or folder) it writes into.
    """
    def decorate(function: F) -> F:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            repo = where(*args, **kwargs)
            with os_faults(repo), writing(repo):
                return function(*args, **kwargs)
        return wrapper  # type: ignore[return-value]
    return decorate


def writer_of(where: Callable[..., str | os.PathLike]) -> Callable[[F], F]:
    """Decorate a function that writes into a repo among other things (a fetch, a push) as a writer there.

    Only :func:`.writers.writing`: the function's errors are its own to translate (a
    network's refusals are no local fault).

    Args:
        where: given the function's arguments, returns the repo it writes into.
    """
    def decorate(function: F) -> F:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with writing(where(*args, **kwargs)):
                return function(*args, **kwargs)
        return wrapper  # type: ignore[return-value]
    return decorate


def optional_write(write: Callable[[], None]) -> bool:
    """Run a cache write; return False when the repo refused it (full or read-only).

    A cache is rebuilt from git when missing, so losing one write costs a re-check later.
    """
    try:
        write()
        return True
    except OSError as exc:
        if exc.errno in FULL or exc.errno in READ_ONLY:
            return False
        raise
