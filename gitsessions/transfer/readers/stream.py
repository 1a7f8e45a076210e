"""Reading an import file a piece at a time: memory bounded by the largest element, not the file.

A data export (ChatGPT's or Claude.ai's ``conversations.json``, also inside its ``.zip``) is
one JSON array of conversations that can be hundreds of megabytes, read with memory
bounded. :class:`ArrayReader` decodes such an array one element at a time with
:meth:`json.JSONDecoder.raw_decode` over a buffered text read; an element cut by the end of
a read is decoded again once more is read (the read doubling, so a large element costs a
bounded number of decodes). :class:`~.source.Source` opens the file (or the zip's member)
again for each pass, and :class:`Conversations` holds what an export converts to: checked whole
before anything is written (the rule of every import), then read again as it is written
when it is too large to keep; that second read gives a conversation only when the bytes
read so far are the ones the check read (their digests), so a file rewritten meanwhile,
even in place, stops it before anything of the new version is written.

Text as every import reads it: a BOM dropped, invalid UTF-8 -> U+FFFD, a key twice in one
object and ``NaN``/``Infinity`` refused (what :func:`json.loads` in :mod:`.read` refuses).
"""

from __future__ import annotations

import codecs
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

from ...errors import TransferError
from .conversation import ImportedConversation
from .messages import _Bad
from .source import CHANGED, Source

#: Bytes asked of the file per read (the buffer holds about this plus the element being read).
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


class Text:
    """A binary stream ``raw`` as text the way imports read it, and the digest of the bytes read so far.

    A BOM dropped, invalid UTF-8 -> U+FFFD, line ends kept. Each :meth:`read` asks ``raw`` for the
    bytes it is asked for (a file, a zip's member and bytes in memory give them all but at the end),
    so two reads of the same bytes stop at the same places, with the same digests there.
    """

    def __init__(self, raw: IO[bytes]):
        self.raw = raw
        self._decoder = codecs.getincrementaldecoder("utf-8-sig")(errors="replace")
        self._hash = hashlib.blake2b(digest_size=20)

    def read(self, n: int) -> str:
        """Text of the next ``n`` bytes or more ('' only at the end: bytes that end inside a character read on)."""
        while True:
            data = self.raw.read(n)
            self._hash.update(data)
            text = self._decoder.decode(data, final=not data)
            if text or not data:
                return text

    def digest(self) -> bytes:
        """The digest of the bytes read so far."""
        return self._hash.copy().digest()


#: A binary stream as text the way imports read it (see :class:`Text`).
text_of = Text


class ArrayReader:
    """The elements of the JSON array a text stream holds, decoded one at a time.

    Args:
        text: the stream (from :func:`text_of`), read from its start.
        what: what an element is, for messages (``conversation``).
        chunk: bytes per read (tests make it tiny to cut every element, and every character).

    Iterating yields each element; the stream is read to its end, so that what follows the
    array is checked too. Errors (:class:`_Bad`) say the line and column (as
    :func:`json.loads` counts them, so the same file gives the same place) and the element.
    """

    def __init__(self, text: Text, what: str = "element", chunk: int = CHUNK):
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
        """Read ``n`` more bytes' text into the buffer, dropping what was decoded; False at the end."""
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


class Conversations:
    """Another tool's conversations in one data export: all checked before the first is written.

    The check converts every conversation (a malformed one refuses the file, nothing
    written). When the file's text is at most ``keep`` characters, what it converted is
    kept for the write; larger, only the count, the notes and the digests of the bytes read
    at each conversation are, and iterating converts the file again, one conversation at a
    time (memory bounded by the largest conversation), each given only when the bytes read
    so far are those the check read: a file rewritten meanwhile (also in place, of the same
    size and time) stops the iteration before anything of its new version is given.

    Args:
        src: the file (its array of conversations).
        convert: the tool's conversion of the array's elements, yielding each conversation.
        keep: the most characters of text whose conversations are kept (default :data:`KEEP_CHARS`).
        chunk: bytes per read (:class:`ArrayReader`).

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
        #: The digest of the bytes read when each conversation was made, then of the whole file.
        self._digests: list[bytes] = []
        kept: list[ImportedConversation] = []
        whole = True
        for conv, offset, digest in self._read():
            self._digests.append(digest)
            if conv is None or not conv.branches:
                if conv is not None and conv.notes:
                    self.skipped.append(f"{conv.tool} conversation {conv.source_id} ({'; '.join(conv.notes)})")
                continue
            self.count += 1
            whole = whole and offset <= keep
            if whole:
                kept.append(conv)
            else:
                kept.clear()
        self._kept = kept if whole else None
        self._digests = [] if whole else self._digests  # the file is not read again

    def _read(self) -> Iterator[tuple[ImportedConversation | None, int, bytes]]:
        """Each conversation, the characters read to make it, the digest of the bytes read; last the file's."""
        with self.src.open() as raw:
            text = text_of(raw)
            reader = ArrayReader(text, "conversation", self.chunk)
            for conv in self.convert(iter(reader)):
                yield conv, reader.offset, text.digest()
            yield None, reader.offset, text.digest()

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
        """The conversations with a turn to write, in file order, each made of the bytes the check read.

        Raises:
            TransferError: the file changed since the check (its reason says so), before the
                first conversation made of other bytes, or at the end (what follows the
                conversations changed); those given before are the ones the check read.
        """
        if self._kept is not None:
            yield from self._kept
            return
        try:
            for n, (conv, _, digest) in enumerate(self._read()):
                if n >= len(self._digests) or digest != self._digests[n]:
                    raise _Bad(CHANGED)
                if conv is not None and conv.branches:
                    yield conv
        except _Bad as exc:  # the check read it whole: a failure now is the file's change
            why = str(exc)
            raise TransferError(self.src.source, CHANGED if why.startswith(CHANGED) else f"{CHANGED} (it now "
                                f"reads: {why})", "") from None
