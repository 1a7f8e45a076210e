"""Reading an import file a piece at a time: memory bounded by the largest element, not the file.

A data export (ChatGPT's or Claude.ai's ``conversations.json``, also inside its ``.zip``) is
one JSON array of conversations that can be hundreds of megabytes (issue 14, item 7: memory
stays bounded). :class:`ArrayReader` decodes such an array one element at a time with
:meth:`json.JSONDecoder.raw_decode` over a buffered text read; an element cut by the end of
a read is decoded again once more is read (the read doubling, so a large element costs a
bounded number of decodes). :class:`Source` opens the file (or the zip's member) again for
each pass, and :class:`Conversations` holds what an export converts to: checked whole
before anything is written (the rule of every import), then read again as it is written
when it is too large to keep.

Text as every import reads it: a BOM dropped, invalid UTF-8 -> U+FFFD, a key twice in one
object and ``NaN``/``Infinity`` refused (what :func:`json.loads` in :mod:`.read` refuses).
"""

from __future__ import annotations

import io
import json
import os
import re
import zipfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from ..errors import TransferError
from .conversation import ImportedConversation
from .messages import _Bad

#: Characters asked of the file per read (the buffer holds about this plus the element being read).
CHUNK = 1 << 16
#: A decode error this close to the end of what was read may be the element cut short: read more first.
#: (The farthest a cut leaves the error is ``-Infinit``, 8; an unterminated string says so.)
_CUT_MARGIN = 16
#: The export's conversations are kept from the check to the write when its text is at most this
#: many characters (a second read costs a second conversion); larger, they are read again.
KEEP_CHARS = 8 << 20
_WS = re.compile(r"[ \t\n\r]*")
_NUMBER_TAIL = re.compile(r"[0-9.eE+-]*")


def reject_constant(name: str) -> Any:
    """``parse_constant`` for :mod:`json`: ``NaN`` and ``Infinity`` are not JSON.

    Raises:
        _Bad: always.
    """
    raise _Bad(f"not JSON: {name} is not a JSON value")


def no_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    """``object_pairs_hook`` for :mod:`json`: an object naming a key twice is refused (which one counts is unsaid).

    Raises:
        _Bad: a key appears twice.
    """
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise _Bad(f"key {key!r} appears twice in one object")
        out[key] = value
    return out


_DECODER = json.JSONDecoder(object_pairs_hook=no_duplicates, parse_constant=reject_constant)


def loads(text: str) -> Any:
    """Decode a whole JSON text the way every import reads one (see the module's docstring).

    Raises:
        json.JSONDecodeError: not JSON.
        _Bad: a key twice in one object, or ``NaN``/``Infinity``.
    """
    return _DECODER.decode(text)


def decode(data: bytes) -> str:
    """Bytes to text the way imports read them: a BOM dropped, invalid UTF-8 -> U+FFFD (as :func:`text_of`)."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    return data.decode("utf-8", errors="replace")


def lines(raw: Iterable[bytes]) -> Iterator[tuple[int, str, bool]]:
    r"""A JSON-lines file's lines one at a time, as every import reads text (the file is never held whole).

    Lines end at ``\n`` alone (a JSON string may hold U+2028 or U+0085 as they are); a BOM is
    dropped from the first, a CR before the line end dropped (CRLF), invalid UTF-8 -> U+FFFD
    (as :func:`decode`: no UTF-8 sequence holds the byte ``\n``, so it is the same text).

    Args:
        raw: the bytes line by line, each with its ``\n`` (a binary file: iterating one does that).

    Yields:
        ``(number, text, ended)``: the line's number from 1, its text without the line end, and
        whether it had one (a last line without is one its writer may still be writing).
    """
    for n, data in enumerate(raw, 1):
        ended = data.endswith(b"\n")
        text = data[:-1 if ended else None].rstrip(b"\r").decode("utf-8", errors="replace")
        yield n, text.lstrip("\ufeff") if n == 1 else text, ended


def text_of(raw: IO[bytes]) -> IO[str]:
    """A binary stream as text the way imports read it: a BOM dropped, invalid UTF-8 -> U+FFFD, line ends kept."""
    return io.TextIOWrapper(raw, encoding="utf-8-sig", errors="replace", newline="")


class ArrayReader:
    """The elements of the JSON array a text stream holds, decoded one at a time.

    Args:
        text: the stream (from :func:`text_of`), read from its start.
        what: what an element is, for messages (``conversation``).
        chunk: characters per read (tests make it tiny to cut every element).

    Iterating yields each element; the stream is read to its end, so that what follows the
    array is checked too. Errors (:class:`_Bad`) say the line and column (as
    :func:`json.loads` counts them, so the same file gives the same place) and the element.
    """

    def __init__(self, text: IO[str], what: str = "element", chunk: int = CHUNK):
        self.text, self.what, self.chunk = text, what, max(1, chunk)
        self.buf, self.pos, self.eof = "", 0, False
        self.base = 0  # the offset in the text of buf[0]
        self.lines = 0  # the newlines before buf[0]
        self.column = 0  # the characters since the last of them, before buf[0]
        self.index = 0  # the element being read
        self.started = False

    @property
    def offset(self) -> int:
        """Characters of the text read up to the end of the last element decoded."""
        return self.base + self.pos

    def where(self, at: int) -> str:
        """``line L, column C`` of buffer position ``at``, counted as :func:`json.loads` counts."""
        line = self.lines + self.buf.count("\n", 0, at) + 1
        last = self.buf.rfind("\n", 0, at)
        column = at - last if last >= 0 else self.column + at + 1
        return f"line {line}, column {column}"

    def _fail(self, at: int, why: str) -> _Bad:
        return _Bad(f"not JSON ({self.where(at)}, {self.what} {self.index}: {why})")

    def _more(self, n: int) -> bool:
        """Read ``n`` more characters into the buffer, dropping what was decoded; False at the end."""
        data = "" if self.eof else self.text.read(n)
        if not data:  # the buffer as it was: what was found in it is said at its place
            self.eof = True
            return False
        done = self.buf[:self.pos]
        last = done.rfind("\n")
        self.lines += done.count("\n")
        self.column = len(done) - last - 1 if last >= 0 else self.column + len(done)
        self.base += self.pos
        self.buf, self.pos = self.buf[self.pos:] + data, 0
        return True

    def _next_char(self) -> str:
        """The next character that is not white space ('' at the end of the text)."""
        while True:
            self.pos = _WS.match(self.buf, self.pos).end()  # type: ignore[union-attr]  # always matches
            if self.pos < len(self.buf):
                return self.buf[self.pos]
            if not self._more(self.chunk):
                return ""

    def _value(self) -> Any:
        want = self.chunk
        while True:
            try:
                value, end = _DECODER.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError as exc:
                cut = exc.msg.startswith("Unterminated string") or len(self.buf) - exc.pos <= _CUT_MARGIN
                if cut and self._more(want):
                    want *= 2
                    continue
                raise self._fail(exc.pos, exc.msg) from None
            except _Bad as exc:
                raise _Bad(f"{self.where(self.pos)}, {self.what} {self.index}: {exc}") from None
            if (isinstance(value, (int, float)) and _NUMBER_TAIL.match(self.buf, end).end() == len(self.buf)  # type: ignore[union-attr]
                    and self._more(want)):
                continue  # a number the read may have cut ("1.5" of "1.5e3"): read on to see it whole
            self.pos = end
            return value

    def __iter__(self) -> Iterator[Any]:
        if self.started:
            raise RuntimeError("an ArrayReader reads its stream once")
        self.started = True
        first = self._next_char()
        if first != "[":
            begins = f"it begins with {first!r}" if first else "it is empty"
            raise _Bad(f"not a JSON array of {self.what}s ({self.where(self.pos)}: {begins})")
        self.pos += 1
        if self._next_char() == "]":
            self.pos += 1
        else:
            while True:
                yield self._value()
                c = self._next_char()
                self.pos += 1
                if c == "]":
                    break
                if c != ",":
                    raise self._fail(self.pos - 1, "the array ends before its ']'" if not c
                                     else "Expecting ',' delimiter")
                self.index += 1
                self._next_char()
        if self._next_char():
            raise self._fail(self.pos, "Extra data after the array")


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
            raise _Bad("it changed while it was being imported; import it again")
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


class Conversations:
    """Another tool's conversations in one data export: all checked before the first is written.

    The check converts every conversation (a malformed one refuses the file, nothing
    written). When the file's text is at most ``keep`` characters, what it converted is
    kept for the write; larger, only the count and the notes are, and iterating converts the
    file again, one conversation at a time (memory bounded by the largest conversation).

    Args:
        src: the file (its array of conversations).
        convert: the tool's conversion of the array's elements, yielding each conversation.
        keep: the most characters of text whose conversations are kept (default :data:`KEEP_CHARS`).
        chunk: characters per read (:class:`ArrayReader`).

    Raises:
        _Bad: (making it) the file is not a JSON array, or a conversation cannot be read.
        TransferError: (making it) the file cannot be opened.
    """

    def __init__(self, src: Source, convert: Callable[[Iterator[Any]], Iterator[ImportedConversation]],
                 keep: int = KEEP_CHARS, chunk: int = CHUNK):
        self.src, self.convert, self.chunk = src, convert, chunk
        self.count = 0
        #: Those without a turn to write that said why (a prompt still unanswered).
        self.skipped: list[str] = []
        kept: list[ImportedConversation] = []
        whole = True
        for conv, offset in self._read():
            if not conv.branches:
                if conv.notes:
                    self.skipped.append(f"{conv.tool} conversation {conv.source_id} ({'; '.join(conv.notes)})")
                continue
            self.count += 1
            whole = whole and offset <= keep
            if whole:
                kept.append(conv)
            else:
                kept.clear()
        self._kept = kept if whole else None

    def _read(self) -> Iterator[tuple[ImportedConversation, int]]:
        """Each conversation and how many characters of the file were read to make it."""
        with self.src.open() as raw:
            reader = ArrayReader(text_of(raw), "conversation", self.chunk)
            for conv in self.convert(iter(reader)):
                yield conv, reader.offset

    @property
    def kept(self) -> bool:
        """Whether the conversations were kept from the check (the file is not read again)."""
        return self._kept is not None

    def __len__(self) -> int:
        return self.count

    def __bool__(self) -> bool:
        return self.count > 0

    def __contains__(self, conv: object) -> bool:
        return any(c == conv for c in self)

    def __iter__(self) -> Iterator[ImportedConversation]:
        """The conversations with a turn to write, in file order.

        Raises:
            TransferError: the file changed since the check, so that it no longer reads.
        """
        if self._kept is not None:
            yield from self._kept
            return
        try:
            for conv, _ in self._read():
                if conv.branches:
                    yield conv
        except _Bad as exc:
            raise TransferError(self.src.source, str(exc)) from None
