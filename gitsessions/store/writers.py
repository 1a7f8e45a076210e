"""Who is writing a session repo right now: a file per writing gs in ``<repo>/gs/writers/``.

A gs process holds a file there for as long as it writes into the repo (:func:`writing`):
it names the process (pid, host, start) and is held with ``flock``, which the kernel lets
go of when the process ends, however it ends. So a file whose lock can be taken is a
writer that died while writing (``kill -9``, a power cut): what it was writing may have been
left half done, and :func:`.lock.left_by_a_gone_writer` judges what was. A file's time is
the file system's, the clock the files it writes get too (also on a network file system).

A held file appears under its name already held (:func:`hold_new`: made under a dot name,
locked, then renamed), so whoever sees it never takes a writer being born for a dead one.
Standard library only: the chat imports the store's lock module before dulwich.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .layout import is_repo

#: The folder of the writers' files, under the repo.
FOLDER = Path("gs") / "writers"
#: What a file being made starts its name with (:func:`hold_new`); nobody judges such a file.
NEW = ".new-"

_guard = threading.Lock()
#: repo path -> (descriptor, file, how many writes of this process are under way there).
_held: dict[str, tuple[int, Path, int]] = {}


def hold_new(folder: Path, name: str, data: bytes, durable: bool = False) -> int:
    """Make ``folder/name`` holding ``data``, held with ``flock`` by this process before anyone sees it.

    Args:
        folder: where (made when missing).
        name: the file's name (unique: it is never reused).
        data: its content.
        durable: fsync the file and its folder (a record that must outlive a power cut).

    Returns:
        The open descriptor that holds it (close it to let go; remove the file first).

    Raises:
        OSError: the folder cannot be written.
    """
    folder.mkdir(parents=True, exist_ok=True)
    while True:
        new = folder / f"{NEW}{name}"
        fd = os.open(new, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o666)  # the umask decides (store/privacy.py)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, data)
            if durable:
                os.fsync(fd)
            os.rename(new, folder / name)
            if durable:
                _fsync_folder(folder)
            return fd
        except FileNotFoundError:  # a sweeper took the dot file for a dead one's: make it again
            os.close(fd)
        except BaseException:
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(new)
            raise


def _fsync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def held(path: str | os.PathLike) -> bool:
    """True while a live process holds ``path`` with ``flock`` (a file :func:`hold_new` made); False when gone too."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)
    return False


@dataclass
class Census:
    """The writers of a repo as one look at ``gs/writers/`` found them.

    Attributes:
        live: when each live writer began writing (the file's time, ns).
        dead: each writer that died while writing: its file and when it began (ns).
        half: the files of writers that died while making theirs (:func:`hold_new`'s dot files nobody holds).
    """

    live: list[int] = field(default_factory=list)
    dead: list[tuple[Path, int]] = field(default_factory=list)
    half: list[Path] = field(default_factory=list)


def census(repo: str | os.PathLike) -> Census:
    """Look at who writes ``repo`` now (see :class:`Census`); a repo without the folder has no writers."""
    found = Census()
    try:
        entries = list(os.scandir(Path(repo) / FOLDER))
    except (FileNotFoundError, NotADirectoryError):
        return found
    for entry in entries:
        if entry.name.startswith(NEW):
            if not held(entry.path):
                found.half.append(Path(entry.path))
            continue
        try:
            when = entry.stat(follow_symlinks=False).st_mtime_ns
        except FileNotFoundError:
            continue  # its writer is done
        if held(entry.path):
            found.live.append(when)
        elif os.path.exists(entry.path):
            found.dead.append((Path(entry.path), when))
    return found


@contextlib.contextmanager
def writing(repo: str | os.PathLike) -> Iterator[None]:
    """Say that this process writes into ``repo`` for as long as the block runs (see the module's docstring).

    Once per process and repo however deep the writes nest (the first one's time is the one
    shown). A repo not made yet gets no file, nor one that cannot be written (read-only,
    full): nothing of it can be left half done, or the write itself says why not.
    """
    key = os.path.abspath(repo)
    with _guard:
        mine = key in _held
        if mine:
            fd, path, depth = _held[key]
            _held[key] = (fd, path, depth + 1)
        elif is_repo(Path(key)):
            name = f"{os.getpid()}-{os.urandom(4).hex()}"
            info = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time_ns() // 1_000_000}
            try:
                fd = hold_new(Path(key) / FOLDER, name, json.dumps(info).encode("utf-8"))
            except OSError:
                pass  # a repo that cannot be written: nothing of it can be left half done
            else:
                _held[key] = (fd, Path(key) / FOLDER / name, 1)
                mine = True
    try:
        yield
    finally:
        if mine:
            _let_go(key)


def _let_go(key: str) -> None:
    """End one write of this process into the repo ``key``; the last one removes its file."""
    with _guard:
        fd, path, depth = _held[key]
        if depth > 1:
            _held[key] = (fd, path, depth - 1)
            return
        del _held[key]
        with contextlib.suppress(OSError):
            path.unlink()
        os.close(fd)
