"""An import file, opened again for each pass: bytes in memory (stdin), a file, or a zip's member.

A data export is read twice (:mod:`.stream`: checked whole, then read again as it is
written); a file that another program replaced between the two (its inode, size or time
changed) is refused when it is opened again, and one rewritten in place is caught by the
digest of what is read (:class:`~.stream.Conversations`).

Every pass hashes the bytes it reads (:attr:`Source.digest`): the import's cache of files
taken whole (:mod:`.seen`) keys a file by the bytes its plan was made of, not by another
read of a file that a tool may be appending to meanwhile.
"""

from __future__ import annotations

import hashlib
import io
import os
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from ..errors import TransferError
from .messages import _Bad

#: What is said of a file that changed between the check and the write.
CHANGED = "it changed while it was being imported"
#: Bytes hashed at a time when a zip is hashed whole.
_BUFFER = 1 << 16


def new_hash() -> hashlib.blake2b:
    """The hash a file's bytes are keyed by (:func:`~.seen.content_digest`, :attr:`Source.digest`)."""
    return hashlib.blake2b(digest_size=20)


class _Hashing(io.RawIOBase):
    """A file's bytes, hashed as they are read; :attr:`ended` once a read met the end."""

    def __init__(self, f: io.FileIO):
        self.f, self.hash, self.ended = f, new_hash(), False

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        n = self.f.readinto(b) or 0
        if n:
            self.hash.update(memoryview(b)[:n])
        else:
            self.ended = True
        return n

    def close(self) -> None:
        self.f.close()
        super().close()


def hashed(f: io.FileIO) -> tuple[io.BufferedReader, _Hashing]:
    """``f`` (opened unbuffered) read through a buffer, and what hashes what the buffer reads."""
    raw = _Hashing(f)
    size = os.fstat(f.fileno()).st_blksize  # what open() buffers: a pass reads the file as it did
    return io.BufferedReader(raw, size if size > 1 else io.DEFAULT_BUFFER_SIZE), raw


class Source:
    """An import file, opened again for each pass: bytes in memory (stdin) or a file, or a zip's member.

    Args:
        data: the bytes (None: read ``path``).
        path: the file.
        source: its name, for messages.
    """

    def __init__(self, data: bytes | None, path: Path | None, source: str):
        if data is None and path is None:
            raise ValueError("a Source needs data or a path")
        self.data, self.path, self.source = data, path, source
        self.member: str | None = None  # the zip's member read (None: the file itself)
        self._stat: tuple[int, int, int] | None = None
        self._digest: str | None = None  # of the last pass that read the file to its end
        self._zip_digest: str | None = None  # of the zip's bytes, read when its member was chosen

    def _opened(self) -> IO[bytes]:
        if self.data is not None:
            return io.BytesIO(self.data)
        assert self.path is not None
        try:
            f = open(self.path, "rb", buffering=0)  # noqa: SIM115  # closed by open()'s caller
        except FileNotFoundError:
            raise TransferError(str(self.path), "file not found") from None
        except IsADirectoryError:
            raise TransferError(str(self.path), "it is a directory, not a file") from None
        except OSError as exc:
            raise TransferError(str(self.path), exc.strerror or str(exc)) from None
        st = os.fstat(f.fileno())
        stat = (st.st_ino, st.st_size, st.st_mtime_ns)
        if self._stat is not None and stat != self._stat:
            f.close()
            raise _Bad(f"{CHANGED}; import it again")
        self._stat = stat
        return f

    @contextmanager
    def open(self) -> Iterator[IO[bytes]]:
        """The file's bytes (the zip member's when :meth:`in_zip` chose one), from the start.

        Raises:
            TransferError: the file cannot be opened.
            _Bad: it changed since it was first opened, or the zip cannot be read.
        """
        self._digest = None
        with self._opened() as f:
            if self.member is None:
                if self.data is not None:
                    yield f
                    return
                reader, raw = hashed(f)  # type: ignore[arg-type]  # a FileIO: opened unbuffered
                yield reader
                self._digest = raw.hash.hexdigest() if raw.ended else None
                return
            try:
                with zipfile.ZipFile(f) as archive, archive.open(self.member) as member:
                    yield member
                    ended = not member.read(1)
            except (zipfile.BadZipFile, EOFError) as exc:
                raise _Bad(f"not a readable zip ({exc})") from None
            self._digest = self._zip_digest if ended else None

    @property
    def digest(self) -> str | None:
        """The hex digest of the bytes the last pass read, when it read them all (else None).

        That of ``data``; of a file, the bytes that pass read from the file itself, as it read
        them (the same digest as :func:`~.seen.content_digest` of those bytes); of a zip's
        member, the zip's bytes read when the member was chosen (every later pass is of the
        same file, its inode, size and time, or refused).
        """
        if self.data is not None:
            h = new_hash()
            h.update(self.data)
            return h.hexdigest()
        return self._digest

    def head(self, n: int) -> bytes:
        """The first ``n`` bytes (fewer in a shorter file)."""
        with self.open() as f:
            return f.read(n)

    def read(self) -> bytes:
        """The whole file (for the formats read whole: each of them one conversation or session)."""
        if self.data is not None and self.member is None:
            return self.data
        with self.open() as f:
            return f.read()

    def in_zip(self, choose: Callable[[list[str]], str]) -> None:
        """Read the member ``choose`` picks from the zip's names from now on.

        Raises:
            _Bad: not a readable zip (or ``choose``'s own refusal).
        """
        try:
            with self._opened() as f:
                if self.data is None:
                    h = new_hash()
                    while piece := f.read(_BUFFER):
                        h.update(piece)
                    self._zip_digest = h.hexdigest()
                    f.seek(0)
                with zipfile.ZipFile(f) as archive:
                    self.member = choose(archive.namelist())
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            raise _Bad(f"not a readable zip ({exc})") from None
