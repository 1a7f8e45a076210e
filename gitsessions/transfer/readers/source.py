"""An import file, opened again for each pass: bytes in memory (stdin), a file, or a zip's member.

A data export is read twice (:mod:`.stream`: checked whole, then read again as it is
written); a file that another program replaced between the two (its inode, size or time
changed) is refused when it is opened again, and one rewritten in place is caught by the
digest of what is read (:class:`~.stream.Conversations`).
"""

from __future__ import annotations

import io
import os
import zipfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from ...errors import TransferError
from .messages import _Bad

#: What is said of a file that changed between the check and the write.
CHANGED = "it changed while it was being imported"


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

    def _opened(self) -> IO[bytes]:
        if self.data is not None:
            return io.BytesIO(self.data)
        assert self.path is not None
        try:
            f = open(self.path, "rb")  # noqa: SIM115  # closed by open()'s caller
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
        with self._opened() as f:
            if self.member is None:
                yield f
                return
            try:
                with zipfile.ZipFile(f) as archive, archive.open(self.member) as member:
                    yield member
            except (zipfile.BadZipFile, EOFError) as exc:
                raise _Bad(f"not a readable zip ({exc})") from None

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
            with self._opened() as f, zipfile.ZipFile(f) as archive:
                self.member = choose(archive.namelist())
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            raise _Bad(f"not a readable zip ({exc})") from None
