"""A blob read out of the repository with as few copies of it alive at once as can be.

dulwich's reader holds, at its peak, the compressed object, the inflated chunks and their
join, and for a packed blob stored as a chain of deltas every base on the way: a loose
session log peaked at 3x its size, a packed tip 13 deltas deep at 8x (a 100 MB session should
open below 3x). Here:

- a loose object whose header line is its own deflate segment (what :mod:`.loose` writes)
  is inflated straight into the content, at its exact size: 1x;
- any other loose object into one buffer of its exact size, the header then cut: 2x;
- a packed blob: its chain of deltas is followed down to the whole base (OFS_DELTA, or a
  REF_DELTA whose base is in the same pack, git's rule), the base inflated at its exact
  size, and each delta applied in turn into a new buffer of the target's size: 2x.

Anything else (an object of another type, a base outside the pack, damage) gives None and
the caller asks dulwich, whose errors say what is wrong.
"""

from __future__ import annotations

import mmap
import os
import struct
import zlib

from dulwich.errors import ApplyDeltaError
from dulwich.objects import ObjectID
from dulwich.pack import PackFileDisappeared
from dulwich.repo import Repo

from .loose import ZLIB_HEADER, adler32_combine, blob_header, deflate_segment

try:  # dulwich's compiled delta applier: the same bytes and checks, ~10x faster than apply_delta below
    from dulwich._pack import apply_delta as _compiled_apply_delta  # type: ignore[import-not-found]
except ImportError:  # a dulwich built without its extensions
    _compiled_apply_delta = None

_BLOB, _OFS_DELTA, _REF_DELTA = 3, 6, 7
#: A chain longer than this is no chain gs or git writes (git's default depth is 50).
_MAX_DEPTH = 4096


def read_blob(repo: Repo, sha: ObjectID) -> bytes | None:
    """Return the content of blob ``sha``, or None when it is not read here (then ask dulwich).

    Args:
        repo: the open repository.
        sha: the blob's id (hex).

    Returns:
        The blob's bytes; None when the object is not a loose or packed blob this reader
        follows, is damaged, or its pack was deleted by a repack since it was listed.
    """
    store = repo.object_store
    try:
        path = os.path.join(store.path, sha[:2].decode("ascii"), sha[2:].decode("ascii"))
        try:
            with open(path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            pass
        else:
            return _loose_blob(data, store.loose_compression_level)
        for pack in store.packs:
            try:
                offset = pack.index.object_offset(sha)
            except KeyError:
                continue
            with open(pack.data.path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                view = memoryview(mm)
                try:
                    return _packed_blob(view, offset, pack.index)
                finally:
                    view.release()
    except (zlib.error, ValueError, IndexError, KeyError, OSError):
        return None
    except PackFileDisappeared:  # a repack (a background gs gc) took it away: dulwich looks again
        return None
    return None


def _loose_blob(data: bytes, level: int) -> bytes | None:
    head = zlib.decompressobj().decompress(data, 64)
    end = head.find(b"\x00")
    if not head.startswith(b"blob ") or end < 0:
        return None
    size = int(head[5:end])
    header = blob_header(size)
    segment = ZLIB_HEADER + deflate_segment(header, level)
    if data.startswith(segment):  # the content's segments begin on a byte boundary after it
        content = zlib.decompress(memoryview(data)[len(segment):], -zlib.MAX_WBITS, size or 1)
        expected = adler32_combine(zlib.adler32(header), zlib.adler32(content), size)
        if len(content) != size or data[-4:] != struct.pack(">I", expected):
            return None
        return content
    whole = zlib.decompress(data, zlib.MAX_WBITS, len(header) + size)
    return whole[len(header):] if len(whole) == len(header) + size else None


def _entry(view: memoryview, offset: int) -> tuple[int, int, int]:
    """The pack entry at ``offset``: its type, its size (inflated), and where its data begins."""
    byte = view[offset]
    kind, size, shift = (byte >> 4) & 7, byte & 15, 4
    offset += 1
    while byte & 0x80:
        byte = view[offset]
        size |= (byte & 0x7F) << shift
        shift += 7
        offset += 1
    return kind, size, offset


def _packed_blob(view: memoryview, offset: int, index) -> bytes | None:  # noqa: ANN001 - dulwich's PackIndex
    deltas: list[bytes] = []
    while True:
        if len(deltas) > _MAX_DEPTH:
            return None
        kind, size, at = _entry(view, offset)
        if kind == _BLOB:
            content = zlib.decompress(view[at:], zlib.MAX_WBITS, size or 1)
            break
        if kind == _OFS_DELTA:
            byte = view[at]
            back = byte & 0x7F
            at += 1
            while byte & 0x80:
                byte = view[at]
                back = ((back + 1) << 7) | (byte & 0x7F)
                at += 1
            base = offset - back
        elif kind == _REF_DELTA:
            base = index.object_offset(bytes(view[at:at + 20]))  # KeyError: a base in another pack
            at += 20
        else:
            return None
        deltas.append(zlib.decompress(view[at:], zlib.MAX_WBITS, size or 1))
        offset = base
    if len(content) != size:
        return None
    while deltas:
        content = _apply(content, deltas.pop())  # the one below is freed as the next is made
    return content


#: Bases up to this size go through dulwich's compiled applier (most logs: fast); larger ones
#: through :func:`apply_delta`, whose copies a 100 MB session's peak memory cannot afford.
_COMPILED_UP_TO = 4 << 20


def _apply(base: bytes, delta: bytes) -> bytes:
    """:func:`apply_delta`, by dulwich's compiled one when there is one and ``base`` is small."""
    if _compiled_apply_delta is None or len(base) > _COMPILED_UP_TO:
        return apply_delta(base, delta)
    try:
        return b"".join(_compiled_apply_delta(base, delta))
    except ApplyDeltaError as exc:
        raise ValueError(str(exc)) from None


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def apply_delta(base: bytes, delta: bytes) -> bytes:
    """Return the target a git delta makes of ``base`` (the pack format's copy and insert ops).

    Built as one join of views into ``base`` and the inserted bytes: the target is made
    once, at its size, and nothing of ``base`` is copied beside it.

    Raises:
        ValueError: the delta does not fit ``base`` or does not make its stated size.
    """
    source_size, at = _varint(delta, 0)
    target_size, at = _varint(delta, at)
    if source_size != len(base):
        raise ValueError(f"delta for a base of {source_size} bytes, given {len(base)}")
    src = memoryview(base)
    pieces: list[memoryview | bytes] = []
    end = len(delta)
    while at < end:
        op = delta[at]
        at += 1
        if op & 0x80:  # copy from the base: offset and size in the bytes the low bits name
            offset = size = 0
            for i in range(4):
                if op & (1 << i):
                    offset |= delta[at] << (8 * i)
                    at += 1
            for i in range(3):
                if op & (0x10 << i):
                    size |= delta[at] << (8 * i)
                    at += 1
            size = size or 0x10000
            if offset + size > source_size:
                raise ValueError("delta copies past the end of its base")
            pieces.append(src[offset:offset + size])
        elif op:  # insert the next ``op`` bytes
            pieces.append(delta[at:at + op])
            at += op
        else:
            raise ValueError("delta op 0 is reserved")
    target = b"".join(pieces)
    if len(target) != target_size:
        raise ValueError(f"delta made {len(target)} bytes, not {target_size}")
    return target
