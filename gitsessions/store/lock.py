"""Locks another process holds, and what each refusal means here: the one translation of a held lock.

Two kinds meet a writer. A session's writer lock, gs's own: ``<repo>/gs/locks/<id>.lock``
is held with ``flock`` (the kernel releases it when the holder dies, so a lock whose process
is gone is taken over without guessing) and holds JSON naming the holder's pid, host and
start time, for the message a second writer gets. A second writer is refused at once unless
it asks to wait (:class:`LockWait`): then it tries again, sleeping between tries, until the
lock is free or its time is up (:func:`acquire_within`: :class:`SessionLocked`).

And git's own ``<file>.lock`` of a ref, an object, a pack index, ``HEAD`` or the config,
which dulwich raises as ``FileLocked``: another gs (or git) holds it while it writes, or a
process that died left it, which is taken over (:func:`left_by_a_gone_writer` is where that
is decided, :func:`clear_left` the sweep of every such file). A write waits a live one out
(:func:`wait_out`: a ref that stays locked is a lost race, ``ConcurrentUpdate``); a write
another gs makes at the same moment is left to the next run (:func:`unless_held`: HEAD, a
sync base); a fetch or push whose pack another gs writes right now is one too
(:func:`unless_same_pack`). dulwich is imported only when such a write runs: a chat imports
this module before it opens the store.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

from ..errors import RepoBusy, SessionLocked
from .writers import Census, census

_T = TypeVar("_T")

#: The pauses between tries while waiting (seconds): short at first, since most writers
#: hold a lock for one save, then no more than a few tries a second.
_FIRST_PAUSE_S = 0.01
_LONGEST_PAUSE_S = 0.25
#: How long a refused writer rereads an empty lock file, whose holder is naming itself in it
#: (a write right after its flock), and the pause between reads, seconds.
_NAMING_S = 0.05
_NAMING_PAUSE_S = 0.001


@dataclass(frozen=True)
class LockWait:
    """How long a writer waits for a session's lock before it is refused.

    Attributes:
        seconds: the longest wait (0: refused at once).
        notify: called once, ``notify(session_id, holder)`` (see :meth:`SessionLock.holder`),
            when the wait begins, so that the user knows why nothing happens.
    """

    seconds: float
    notify: Callable[[str, str], None] | None = None


class _Lock(Protocol):
    session_id: str

    def try_acquire(self) -> bool: ...

    def holder(self) -> str: ...

    def writing(self) -> str | None: ...


def acquire_within(lock: _Lock, wait: LockWait | None) -> None:
    """Take ``lock``, trying again until ``wait`` runs out; the one wait loop of every lock kind.

    Args:
        lock: the lock (its own ``try_acquire`` is each try; nothing spins in between).
        wait: how long to wait (None: not at all).

    Raises:
        SessionLocked: still held when the time was up; names the holder and how to wait.
    """
    if lock.try_acquire():
        return
    seconds = wait.seconds if wait is not None else 0.0
    if seconds > 0:
        if wait is not None and wait.notify is not None:
            wait.notify(lock.session_id, lock.holder())
        deadline = time.monotonic() + seconds
        pause = _FIRST_PAUSE_S
        while (left := deadline - time.monotonic()) > 0:
            time.sleep(min(pause, left))
            if lock.try_acquire():
                return
            pause = min(pause * 2, _LONGEST_PAUSE_S)
    raise SessionLocked(lock.session_id, lock.holder(), waited=seconds, writing=lock.writing())


class SessionLock:
    """Exclusive write lock on one session.

    Args:
        path: the lock file.
        session_id: for messages.
    """

    def __init__(self, path: str | os.PathLike, session_id: str):
        self.path = Path(path)
        self.session_id = session_id
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        """True while this object holds the lock."""
        return self._fd is not None

    def holder(self) -> str:
        """Describe who holds the lock (``pid 123 on host, since 12:00:01``), best effort."""
        info = self._holder_info() or {}
        try:
            since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info["started"] / 1000))
        except (KeyError, TypeError, ValueError, OverflowError, OSError):  # no file, or not one gs wrote
            return "another process"
        return f"pid {info['pid']} on {info['host']} (since {since})"

    def writing(self) -> str | None:
        """The id the holder writes: this one, or it in another case (one lock per case-folded id); None: unknown."""
        info = self._holder_info()
        session = info.get("session") if info is not None else None
        return session if isinstance(session, str) else None

    def _holder_info(self) -> dict | None:
        """What the holder wrote in the lock file, or None.

        A writer names itself in the file right after it took the lock, so an empty file is
        read again for a moment (:data:`_NAMING_S`): a second writer started with the first
        names it, and the case variant it writes.
        """
        deadline = time.monotonic() + _NAMING_S
        try:
            while not (text := self.path.read_text("utf-8")) and time.monotonic() < deadline:
                time.sleep(_NAMING_PAUSE_S)
            info = json.loads(text)
        except (OSError, ValueError):
            return None
        return info if isinstance(info, dict) and {"pid", "host", "started"} <= info.keys() else None

    def try_acquire(self) -> bool:
        """Take the lock if free; return whether it is now held (never waits)."""
        if self._fd is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)  # the umask decides (store/privacy.py)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        info = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time_ns() // 1_000_000,
                "session": self.session_id}
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(info).encode("utf-8"), 0)
        except OSError:
            pass  # a full disk: the lock is held all the same, only its holder goes unnamed
        self._fd = fd
        return True

    def acquire(self, wait: LockWait | None = None) -> SessionLock:
        """Take the lock, waiting for it as long as ``wait`` says (None: refused at once).

        Raises:
            SessionLocked: a live process holds it (the message names it and how to go on).
        """
        acquire_within(self, wait)
        return self

    def release(self) -> None:
        """Release the lock (idempotent). The file stays; an unlocked file means free."""
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> SessionLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


# -- git's own .lock files -----------------------------------------------------------------

#: How long a write waits for a git ``.lock`` (a ref's, an object's) another process holds, seconds.
REF_LOCK_WAIT_S = 5.0
#: How long a program that names itself nowhere here (git, or a gs writing here from a repo of its
#: own) may hold a git ``.lock``: git holds its locks for a moment, seconds.
STALE_REF_LOCK_S = 2.0
#: How long such a program may still be writing a temporary pack or object file (``tmp*``): a
#: fetch writes one for as long as the network takes (git's ``gc`` likewise leaves recent
#: ``tmp_*`` files alone), seconds.
STALE_TMP_S = 15 * 60
#: What a ref that stayed locked past :data:`REF_LOCK_WAIT_S` is reported to hold (a lost race).
REF_HELD = "locked by another process"
#: What a fetch says when another gs brings the very same pack here right now.
SAME_SAVES = "another gs is bringing the same saves here right now: run gs sync again"
#: How long to sleep between tries of a git lock (git holds them for microseconds).
_GIT_LOCK_PAUSE_S = 0.005


def left_by_a_gone_writer(path: str | os.PathLike, grace: float = STALE_REF_LOCK_S,
                          writers: Census | None = None) -> bool:
    """Whether ``path``, a file a writer leaves only while it writes, was left by one that is gone.

    The one place this is decided, for every such file in a session repo: a git ``.lock``
    (a ref's, ``HEAD``'s, ``packed-refs``', the config's, a loose object's, a pack index's),
    a pack whose index was never written, a temporary pack or object file. dulwich's
    ``.lock`` files name no process, so what is known is who writes the repo: every gs holds
    a file in ``<repo>/gs/writers/`` for as long as it writes there (:mod:`.writers`; the
    kernel lets go of its ``flock`` when the process dies). The file was left by a writer
    that is gone when both hold:

    - it is older than every live writer's file: no gs writing now made it, however long its
      write lasts (a slow disk, a process stopped with Ctrl+Z);
    - a gs died while writing here since before it was made (a writer's file nobody holds,
      as old as it or older: its writer was killed), or it is older than ``grace``: no gs of
      this repo is writing, and another program (git, a gs pushing here from its own repo)
      holds such a file for a moment only.

    Times are the file system's own (one clock for both files, also on a network file
    system). A file made in the very tick a writer began is not judged gone (it may be that
    writer's): its next look, or the next command, takes it.

    Args:
        path: the file.
        grace: how long a program that is no gs of this repo may hold it, seconds
            (:data:`STALE_REF_LOCK_S` for a ``.lock``, :data:`STALE_TMP_S` for a temporary file).
        writers: the repo's writers, when the caller looked already (:func:`.writers.census`).

    Returns:
        True when its writer is gone; False while it may still be written, or when it is gone itself.
    """
    try:
        made = os.stat(path).st_mtime_ns
    except FileNotFoundError:
        return False
    if writers is None:
        repo = _repo_of(Path(path))
        writers = census(repo) if repo is not None else Census()
    if writers.live and made >= min(writers.live):
        return False
    died_since = any(began <= made for _, began in writers.dead)
    return died_since or time.time_ns() - made > grace * 1e9


def _repo_of(path: Path) -> Path | None:
    """The repo holding ``path`` (the nearest folder above it with ``HEAD``, ``objects`` and ``refs``), or None."""
    for folder in path.absolute().parents:
        if (folder / "HEAD").is_file() and (folder / "objects").is_dir() and (folder / "refs").is_dir():
            return folder
    return None


def clear_stale_lock(lockfile: str | bytes) -> bool:
    """Remove a git ``.lock`` its writer left when it died (:func:`left_by_a_gone_writer`).

    Returns:
        True when the lock is gone now (removed here, or by its writer meanwhile): worth a try again.
    """
    path = os.fsdecode(lockfile)
    if left_by_a_gone_writer(path):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
    return not os.path.lexists(path)


def clear_left(repo: str | os.PathLike) -> list[str]:
    """Remove every file writers that are gone left half done in ``repo``; return them, relative to it.

    What a sweep after a killed gs finds (:func:`left_by_a_gone_writer` judges each): git's
    ``.lock`` files (``HEAD``, ``packed-refs``, the config, refs, tracking refs, loose
    objects, pack indexes), a pack whose index was never written (its objects are nobody's:
    the refs move after the index), temporary packs and objects. Then the files of the
    writers that died go, and those of the ones that died making theirs. ``gs/`` (gs's own
    locks and journals) and ``hooks/`` are not looked at.

    Raises:
        OSError: the repo refuses the removal (read-only); what was removed before stays so.
    """
    root = Path(repo)
    writers = census(root)
    removed = []
    for path, grace in _leftovers(root):
        if left_by_a_gone_writer(path, grace, writers):
            try:
                path.unlink()
            except FileNotFoundError:
                continue
            removed.append(str(path.relative_to(root)))
    for dead, _ in writers.dead:
        dead.unlink(missing_ok=True)
    for half in writers.half:
        if left_by_a_gone_writer(half, STALE_REF_LOCK_S, writers):
            half.unlink(missing_ok=True)
    return sorted(removed)


def _leftovers(root: Path) -> Iterator[tuple[Path, float]]:
    """The files in ``root`` a killed writer may have left, each with its grace (see :func:`clear_left`)."""
    objects, packs = str(root / "objects"), str(root / "objects" / "pack")
    for top, folders, files in os.walk(root):
        if top == str(root):
            folders[:] = [f for f in folders if f not in ("gs", "hooks")]
        for name in files:
            if name.endswith(".lock"):
                yield Path(top, name), STALE_REF_LOCK_S
            elif name.startswith("tmp") and top in (objects, packs):
                yield Path(top, name), STALE_TMP_S
            elif top == packs and name.endswith(".pack") and name.removesuffix(".pack") + ".idx" not in files:
                yield Path(top, name), STALE_REF_LOCK_S


def wait_out(write: Callable[[], _T], refused: Callable[[], Exception] | None = None) -> _T:
    """Run ``write``; a git lock it meets is taken over when its writer is gone, else waited out.

    Args:
        write: the write (a ref's compare-and-swap, an object's file, a pack index, the config).
        refused: what to raise when the lock is still held after :data:`REF_LOCK_WAIT_S`
            (None: :class:`~gitsessions.errors.RepoBusy`, naming the file).

    Returns:
        What ``write`` returned.
    """
    from dulwich.file import FileLocked

    deadline = time.monotonic() + REF_LOCK_WAIT_S
    while True:
        try:
            return write()
        except FileLocked as exc:
            if clear_stale_lock(exc.lockfilename):
                continue
            if time.monotonic() > deadline:
                raise (refused() if refused is not None else RepoBusy(os.fsdecode(exc.filename))) from None
            time.sleep(_GIT_LOCK_PAUSE_S)


def unless_held(write: Callable[[], object]) -> bool:
    """Run a write another gs may be making at the same moment; False when its git lock was held.

    For what the next run makes as well (HEAD, a sync base, a marker of a ref kept there):
    the holder is moving it right now, so nothing is waited for. A lock whose writer is gone
    is taken over (:func:`clear_stale_lock`), and the write made.
    """
    from dulwich.file import FileLocked

    for _ in range(2):
        try:
            write()
        except FileLocked as exc:
            if not clear_stale_lock(exc.lockfilename):
                return False
            continue
        return True
    return False


def unless_same_pack(transfer: Callable[[], _T]) -> _T | None:
    """Run a fetch or push that writes a pack; None when another gs writes the very same one right now.

    Two processes syncing the same saves write the same pack (dulwich refuses the second one's
    lock, or finds the file changing under it), and a path remote's ref is locked by the other.
    A lock whose writer is gone (a killed sync's) is taken over, and the transfer made again.
    """
    from dulwich.errors import ChecksumMismatch
    from dulwich.file import FileLocked

    for _ in range(2):
        try:
            return transfer()
        except FileLocked as exc:
            if not clear_stale_lock(exc.lockfilename):
                return None
        except ChecksumMismatch:
            return None
    return None
