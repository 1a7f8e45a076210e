"""One writer per session: an advisory lock file naming its holder.

``<repo>/gs/locks/<id>.lock`` is held with ``flock`` (the kernel releases it when the holder
dies, so a lock whose process is gone is taken over without guessing) and holds JSON naming
the holder's pid, host and start time, for the message a second writer gets.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path

from ..errors import SessionLocked


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
        try:
            info = json.loads(self.path.read_text("utf-8"))
            since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info["started"] / 1000))
            return f"pid {info['pid']} on {info['host']} (since {since})"
        except (OSError, ValueError, KeyError, TypeError):
            return "another process"

    def try_acquire(self) -> bool:
        """Take the lock if free; return whether it is now held (never waits)."""
        if self._fd is not None:
            return True
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        info = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time_ns() // 1_000_000}
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(info).encode("utf-8"), 0)
        except OSError:
            pass  # a full disk: the lock is held all the same, only its holder goes unnamed
        self._fd = fd
        return True

    def acquire(self) -> SessionLock:
        """Take the lock or raise.

        Raises:
            SessionLocked: a live process holds it (the message names it and how to go on).
        """
        if not self.try_acquire():
            raise SessionLocked(self.session_id, self.holder())
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
