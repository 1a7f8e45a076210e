r"""A growing blob's loose object, compressed once per byte however often it is saved.

A loose object is the zlib stream of ``b"blob <size>\0" + content``. Compressing the whole
``session.jsonl`` on every save costs O(session size) — ~8 ms per MB at level 1, most of a
turn's time in a 10,000-message session — though only the appended lines are new. A
session's content only grows, so its compressed form is kept in pieces that depend on
nothing before them: raw deflate segments, each from a fresh compressor and ended by a full
flush (byte-aligned, no back-reference across it; RFC 1951 lets blocks end anywhere).
Segments of :data:`SEGMENT` bytes of content are frozen and reused; a save compresses only
the unfrozen tail (< :data:`SEGMENT` bytes) plus what it appended. The object's file is
then: the zlib header, the header line as its own small segment (it changes with every
size), the segments, an empty final block and the Adler-32 of header + content, combined
arithmetically from the parts' (:func:`adler32_combine`). git, dulwich and zlib read it as
any loose object; only its bytes differ from a one-stream write, never what it holds.

The SHA-1 names ``header + content`` and the header comes first, so it cannot be carried
from one save to the next: it stays O(size) (~0.7 ms per MB), as does writing the file; a
large blob's save runs the two side by side (:func:`.repo.add_blob`). Nor can a save be a
small pack holding a delta on the previous blob: git reads a pack whose delta base lies
outside it as corrupt ("packed object ... is corrupt"; on-disk packs are never thin).
Nothing here is kept on disk: a store keeps the :class:`Deflated` of the logs it holds in
memory, and a log it never compressed is compressed whole by its first save.
"""

from __future__ import annotations

import hashlib
import struct
import zlib
from dataclasses import dataclass

from dulwich.objects import ObjectID

#: Bytes of content per frozen segment. Larger compresses a little better (each segment
#: starts with an empty window: 64 KB costs ~5 % in size over one stream, 16 KB ~16 %);
#: smaller makes the tail a save recompresses shorter (64 KB at level 1: ~0.3 ms on average).
SEGMENT = 64 * 1024
#: The zlib stream header (RFC 1950): deflate, 32 KB window, no preset dictionary.
ZLIB_HEADER = b"\x78\x01"
#: An empty final deflate block (fixed Huffman), ending the stream after the segments.
FINAL_BLOCK = b"\x03\x00"
_ADLER_BASE = 65521


def adler32_combine(adler1: int, adler2: int, len2: int) -> int:
    """Return the Adler-32 of ``a + b`` from ``adler32(a)``, ``adler32(b)`` and ``len(b)``.

    zlib's ``adler32_combine``, which Python's :mod:`zlib` does not expose. Adler-32 is
    ``B << 16 | A`` with ``A = 1 + sum of bytes`` and ``B = sum of the A after each byte``,
    both mod 65521 (RFC 1950, 8.2); appending ``b`` adds its byte sum to ``A`` and, to ``B``,
    its own ``B`` plus ``len(b)`` times the ``A`` it started from, less the 1 each side counts.

    Args:
        adler1: Adler-32 of the first part.
        adler2: Adler-32 of the second part.
        len2: length of the second part, bytes.

    Returns:
        The Adler-32 of both parts one after the other.
    """
    a1, b1 = adler1 & 0xFFFF, adler1 >> 16
    a2, b2 = adler2 & 0xFFFF, adler2 >> 16
    a = (a1 + a2 - 1) % _ADLER_BASE
    b = (b1 + b2 + len2 * (a1 - 1)) % _ADLER_BASE
    return b << 16 | a


def deflate_segment(data: bytes | memoryview, level: int) -> bytes:
    """Compress ``data`` as a raw deflate segment that depends on nothing before it.

    A fresh compressor (empty window) and a full flush at the end: the bytes end on a byte
    boundary with no final block, so segments can be laid one after another in one stream.

    Args:
        data: the bytes to compress.
        level: zlib level (-1 for zlib's default).

    Returns:
        The compressed segment.
    """
    compressor = zlib.compressobj(level, zlib.DEFLATED, -zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush(zlib.Z_FULL_FLUSH)


@dataclass(frozen=True)
class Deflated:
    """A content compressed in independent segments: frozen ones, and a tail redone each save.

    Immutable, so a state stays valid for every save made on it (a lost race, a save onto
    an older commit): growing it shares the frozen segments, it never changes them.

    Attributes:
        level: the zlib level of every segment.
        frozen: segments of exactly :data:`SEGMENT` bytes of content each, in order.
        tail: the segment of the content after the frozen ones (``b""`` when none).
        size: bytes of content covered (frozen and tail).
        frozen_adler: Adler-32 of the content the frozen segments cover.
        adler: Adler-32 of the whole content covered.
    """

    level: int
    frozen: tuple[bytes, ...] = ()
    tail: bytes = b""
    size: int = 0
    frozen_adler: int = 1
    adler: int = 1

    @property
    def frozen_size(self) -> int:
        """Bytes of content the frozen segments cover."""
        return len(self.frozen) * SEGMENT

    def grown(self, content: bytes | memoryview) -> Deflated:
        """Return the state of ``content``, which begins with the content this state covers.

        Compresses only ``content`` after the frozen segments: the old tail and what was
        appended. The caller guarantees the prefix (the store builds each new log from the
        bytes this state was made of); nothing here reads it again.

        Args:
            content: the whole new content, at least :attr:`size` bytes.

        Returns:
            The new state (this one when ``content`` is exactly what it covers).

        Raises:
            ValueError: ``content`` is shorter than what this state covers.
        """
        if len(content) < self.size:
            raise ValueError(f"content of {len(content)} bytes cannot extend {self.size} bytes")
        if len(content) == self.size:
            return self
        view = memoryview(content)
        frozen, start, adler = list(self.frozen), self.frozen_size, self.frozen_adler
        while len(content) - start >= SEGMENT:
            piece = view[start:start + SEGMENT]
            frozen.append(deflate_segment(piece, self.level))
            adler = zlib.adler32(piece, adler)
            start += SEGMENT
        rest = view[start:]
        tail = deflate_segment(rest, self.level) if len(rest) else b""
        return Deflated(self.level, tuple(frozen), tail, len(content), adler, zlib.adler32(rest, adler))

    def loose_object(self) -> list[bytes]:
        r"""Return the loose object's file (of a blob of the content covered) as pieces to write in order.

        The zlib header, ``blob <size>\0`` as its own segment, the content's segments, the
        final block and the Adler-32 of the uncompressed stream (big-endian, RFC 1950). The
        object's id is :func:`blob_id` of the content.
        """
        header = blob_header(self.size)
        adler = adler32_combine(zlib.adler32(header), self.adler, self.size)
        pieces = [ZLIB_HEADER, deflate_segment(header, self.level), *self.frozen]
        if self.tail:
            pieces.append(self.tail)
        pieces += [FINAL_BLOCK, struct.pack(">I", adler)]
        return pieces


def blob_header(size: int) -> bytes:
    r"""Return a blob's object header, ``b"blob <size>\0"`` (what git hashes and compresses first)."""
    return b"blob %d\x00" % size


def blob_id(content: bytes | memoryview) -> ObjectID:
    """Return the git object id (SHA-1, hex) of a blob holding ``content``: O(size), ~0.7 ms per MB."""
    sha = hashlib.sha1(blob_header(len(content)))
    sha.update(content)
    return ObjectID(sha.hexdigest().encode("ascii"))
