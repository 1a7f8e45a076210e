"""Reading ahead: the next files of an import read, converted and redacted in a worker process.

Of a Claude Code transcript's import, reading and redacting took about as long as writing
its commits; on a machine of two cores or more a worker process does the
first for the files coming while this one writes (one writer: the store's writes stay in
order, under one import lock). What the worker gives is only ever used for the bytes it
read: the writer reads each file itself, as before (its digest says whether the file is
one imported whole before, :mod:`.seen`), and takes the worker's plan only when it was made
from the same bytes. Anything the worker could not do (a file that fails, a format that is
not another tool's, a worker that died) is done here as before, so what an import says of
a file, and its failures, are the same with or without it.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import threading
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING

from ..secrets.redact import NO_REDACTION, Redactor
from .read import TOOLS, ImportPlan, read_import
from .readers.stream import KEEP_CHARS
from .seen import Key, SeenFiles, content_digest
from .write import redact_plan

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

#: Files read ahead of the one being written, at most (each a plan held in memory).
WINDOW = 3
#: The largest file read ahead, in bytes: a larger one (a data export) is read by the writer a
#: conversation at a time, as a plan read here would hold it whole, twice (here and there).
LARGEST = KEEP_CHARS
#: The fewest files an import reads for a worker to be worth its start (~0.5 s).
FEWEST = 8

_REDACTOR: Redactor = NO_REDACTION  # the worker's, from the import's


def _start(redactor: Redactor) -> None:
    global _REDACTOR
    _REDACTOR = redactor
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C is the writer's to handle: it stops the worker


@contextmanager
def _ignoring_sigint() -> Iterator[None]:
    """Ctrl+C ignored in this process meanwhile, so that a process started now starts ignoring it.

    An ignored signal stays ignored across ``exec`` (a handler does not), and Python keeps it
    so: the worker never sees a Ctrl+C, even while it imports. One pressed in these few
    milliseconds is lost. Only in the main thread (signals are set there alone); elsewhere a no-op.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def _prepare(file: str, fmt: str, keep_paths: bool, folders: dict[str, Path]) -> tuple[str, ImportPlan] | None:
    """In the worker: the digest of the file's bytes and its redacted plan (None: left to the writer)."""
    try:
        data = Path(file).read_bytes()  # at most LARGEST bytes (see ReadAhead._send)
        plan = read_import(data, Path(file).name or file, fmt=fmt, path=Path(file), keep_paths=keep_paths,
                           folders=folders)
    except Exception:  # met again, and said, when the writer reads it (an error may not cross back whole)
        return None
    if plan.kind not in TOOLS or not plan.conversations:
        return None
    return content_digest(data), redact_plan(plan, _REDACTOR)


class ReadAhead:
    """The files of one import run, read ahead in a worker process when that may help.

    Use as a context manager (the worker is stopped at its end, also on an error).

    Args:
        files: the files, in the order they are imported (passed to :meth:`take` in turn).
        fmt: the format asked for.
        keep_paths: keep the local paths a tool wrote into a conversation (``--keep-paths``).
        redactor: the import's redactor (the worker gets a copy).
        seen: the files imported whole before (not read ahead when they look unchanged).
        workers: worker processes (None: one, when there are two cores or more and at
            least :data:`FEWEST` files; 0: none).
        folders: where each tool keeps its files (``read_import``'s ``folders``).
    """

    def __init__(self, files: list[str], fmt: str, keep_paths: bool, redactor: Redactor, seen: SeenFiles,
                 workers: int | None = None, folders: dict[str, Path] | None = None):
        self.files, self.fmt, self.keep_paths, self.redactor, self.seen = files, fmt, keep_paths, redactor, seen
        self.folders = dict(folders or {})
        if workers is None:
            workers = 1 if len(files) >= FEWEST and (os.cpu_count() or 1) > 1 else 0
        self.workers = workers
        self._pool: ProcessPoolExecutor | None = None  # started with the first file sent to it
        self._futures: dict[int, Future] = {}
        self._at = -1  # the file being imported
        self._sent = 0  # the files before this one were thought of

    def __enter__(self) -> ReadAhead:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.workers = 0  # every file is read here from now on
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None

    def take(self, file: str, data: bytes | None, source_file: str | None) -> tuple[Key | None, ImportPlan | None]:
        """The next file's key, and its redacted plan if it was read ahead from the same bytes.

        Also sends the files after it to the worker (those that do not look unchanged).

        Args:
            file: the file, as named (the next of :attr:`files`, or one after it).
            data: its bytes when the writer read them (stdin), else None (the file is read
                a piece at a time for its digest).
            source_file: its path when kept in headers (``--keep-paths``), else None.

        Returns:
            Its :meth:`.SeenFiles.key` (None: the file cannot be read; the import says so),
            and its plan (None: read it here).
        """
        try:
            key = self.seen.key(Path(file) if data is None else data, self.fmt, source_file, self.redactor)
        except OSError:
            return None, None
        return key, self._take(file, key)

    def _take(self, file: str, key: Key) -> ImportPlan | None:
        try:
            self._at = self.files.index(file, self._at + 1)  # in order; one that failed to be read was not taken
        except ValueError:
            return None
        future = self._futures.pop(self._at, None)
        self._send()
        if future is None:
            return None
        try:
            done = future.result()
        except Exception:  # the file's failure (or the worker's) is met again when it is read here
            return None
        return done[1] if done is not None and done[0] == key[0] else None

    def _send(self) -> None:
        if not self.workers:
            return
        while self._sent <= self._at + WINDOW and self._sent < len(self.files):
            k, name = self._sent, self.files[self._sent]
            self._sent += 1
            if k <= self._at or name == "-":
                continue  # the first is read here while the worker starts
            try:
                if Path(name).stat().st_size > LARGEST:
                    continue  # read by the writer, a conversation at a time
                key = SeenFiles.key(Path(name), self.fmt, None, self.redactor)
            except OSError:
                continue  # said when it is read in its turn
            if self.seen.recorded(key):
                continue  # most likely passed over (if not, the writer reads it)
            try:
                if self._pool is None:
                    from concurrent.futures import ProcessPoolExecutor
                    self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"),
                                                     initializer=_start, initargs=(self.redactor,))
                    # The worker starts with Ctrl+C ignored, not only once _start runs: a
                    # Ctrl+C while it imported printed its traceback.
                    with _ignoring_sigint():
                        self._futures[k] = self._pool.submit(_prepare, name, self.fmt, self.keep_paths, self.folders)
                    continue
                self._futures[k] = self._pool.submit(_prepare, name, self.fmt, self.keep_paths, self.folders)
            except Exception:  # no worker can start here (a broken pool, an embedding without a main guard)
                self.__exit__(None, None, None)
                return
