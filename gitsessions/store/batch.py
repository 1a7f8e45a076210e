"""Many commits on one session in one write: what an import of another tool's conversation makes.

A save made in a chat writes its blob, tree and commit as loose objects and fsyncs each (the
turn is durable when the prompt returns). An import writes thousands of commits at once, and
the fsyncs were most of its time (1,000 transcripts took minutes). Here the
commits of one line (the turns added to one session) go into one pack, each blob a delta
on an earlier one of the line (the log only grows: "copy the base, insert the new lines",
with the bounded depth of :func:`~.pack.base_position`), written and fsynced once with its
index; the ref is moved once, after the pack is durable, by compare-and-swap. A crash
before the move leaves an unreferenced pack (harmless; ``gs gc`` drops it) and the session
as it was, and the next import writes the same commits again.

Memory stays at one copy of the log: every blob of the line is a prefix of the one buffer
the saves grew in place (:class:`~.kept.KeptLogs`), so the pending objects are sizes into it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator

from dulwich.file import GitFile
from dulwich.object_store import PACK_MODE
from dulwich.objects import Blob, Commit, ObjectID, RawObjectID, Tree
from dulwich.pack import (
    OFS_DELTA,
    Pack,
    UnpackedObject,
    _decode_delta_base_offset,
    _decode_object_header,
    pack_object_header,
    take_msb_bytes_at,
    write_pack_data,
    write_pack_index,
)
from dulwich.repo import Repo

from ..log.commits import CommitMessage
from ..log.events import Event
from .lock import wait_out
from .loose import blob_id
from .pack import append_delta, base_position
from .privacy import tighten_packs
from .repo import make_commit, session_tree

#: One commit of a line: its events, its message and its author date (epoch s, None: now).
Planned = tuple[list[Event], CommitMessage, "int | None"]

_BLOB = Blob.type_num


class Line:
    """The commits of one line, built in memory one on another and written as one pack.

    What :meth:`~.git.GitStore.append_many` builds its commits with: the store checks each
    one's events and runs its hooks, this holds the objects until :meth:`write`.

    Args:
        identity: author and committer, ``b"Name <email>"``.
        parent: the commit the first one builds on (None: the line starts a session).
    """

    def __init__(self, identity: bytes, parent: str | None):
        self.identity = identity
        #: The commit the next one builds on: the line's last, once it has one.
        self.tip = parent
        self._buf: bytearray | None = None
        self._pending: list[_Pending] = []

    def add(self, buf: bytearray, size: int, message: bytes, author_time: int | None) -> Commit:
        """Build the next commit: the log ``buf[:size]``, a prefix of the one buffer the line grows in.

        Raises:
            ValueError: ``author_time`` is outside what a commit can hold (see :func:`~.repo.make_commit`).
        """
        with memoryview(buf)[:size] as view:
            blob = blob_id(view)
        tree = session_tree(blob)
        commit = make_commit(self.identity, tree.id, [self.tip] if self.tip else [], message, author_time)
        self._pending.append((size, blob, tree, commit))
        self._buf = buf
        self.tip = commit.id.decode("ascii")
        return commit

    def write(self, repo: Repo) -> list[Commit]:
        """Write the line's objects as one pack, fsynced once, and return its commits, oldest first.

        A pack of the lines this process wrote to ``repo`` is merged with them once
        :data:`MERGE_PACKS` piled up (:func:`_merge_when_many`).
        """
        buf, pending = self._buf, self._pending
        assert buf is not None, "a line of no commit"
        objects = len({sha for _, blob, tree, commit in pending for sha in (blob, tree.id, commit.id)})
        pack = _write_pack(repo, objects, _records(buf, pending))
        _merge_when_many(repo, pack)
        tighten_packs(repo)
        return [commit for *_, commit in pending]


#: Packs of lines one store wrote that are merged into one (an import writes a pack per line,
#: and every object lookup, and dulwich's cache of delta bases, grows with the packs).
MERGE_PACKS = 16

#: A commit of a line being written: its blob's size and id, its tree and the commit.
_Pending = tuple[int, ObjectID, Tree, Commit]
#: The packs of lines each repo's stores wrote in this process and not merged yet (their
#: names), by repo path: the command line opens a store per file.
_UNMERGED: dict[str, list[str]] = {}


def _merge_when_many(repo: Repo, pack: Pack) -> None:
    """Remember the line's pack; once :data:`MERGE_PACKS` piled up, write them as one and remove them.

    The merged pack holds the same objects with the same deltas, copied from those packs
    (:func:`_copied`); the old packs go only once it is durable and holds every object.
    A process that ends before merging leaves its last packs (the background repack merges them).
    """
    lines = _UNMERGED.setdefault(os.path.realpath(repo.path), [])
    lines.append(os.path.basename(pack._basename))
    if len(lines) < MERGE_PACKS:
        return
    objects = repo.object_store
    objects._update_pack_cache()  # the packs other stores of this process wrote
    packs = [objects._pack_cache[name] for name in lines if name in objects._pack_cache]
    lines.clear()
    if len(packs) < 2:  # removed meanwhile (a repack): nothing to merge
        return
    shas, copied = _copied(packs)
    merged = _write_pack(repo, len(shas), copied)
    if all(merged.index.object_offset(sha) is not None for sha in shas):  # never drop an object it lacks
        for old in packs:
            if old is not merged:
                objects._remove_pack(old)


def _copied(packs: list[Pack]) -> tuple[list[RawObjectID], Iterator[UnpackedObject]]:
    """The objects of ``packs`` as the records of one pack: each entry's bytes copied, none inflated or deflated.

    An entry is its header and its compressed data; a delta's header names its base by
    distance back (``OFS_DELTA``), written anew for the base's place in the new pack. An
    object in several packs is copied once (a delta on a repeated one uses the first copy).
    Copying, not re-encoding, is what makes merging cost a fraction of writing the lines.

    Returns:
        The objects' binary ids, in the new pack's order, and its records.
    """
    layout: list[tuple[Pack, list[tuple[int, RawObjectID]]]] = []
    order: dict[RawObjectID, None] = {}
    for pack in packs:
        entries = sorted((offset, sha) for sha, offset, _crc in pack.index.iterentries())
        layout.append((pack, entries))
        order.update((sha, None) for _, sha in entries)

    def records() -> Iterator[UnpackedObject]:
        pos = len(b"PACK") + 8  # after the pack's header
        placed: dict[RawObjectID, int] = {}  # binary id -> its offset in the new pack
        for pack, entries in layout:
            with open(pack._data_path, "rb") as f:
                data = f.read()
            ends = [offset for offset, _ in entries[1:]] + [len(data) - pack.data.object_format.oid_length]
            at = {offset: sha for offset, sha in entries}
            for (offset, sha), end in zip(entries, ends, strict=True):
                if sha in placed:
                    continue
                raw, body, _ = take_msb_bytes_at(data, offset)
                type_num, size = _decode_object_header(raw)
                header = bytes(data[offset:body])
                if type_num == OFS_DELTA:
                    raw, body, _ = take_msb_bytes_at(data, body)
                    base = at[offset - _decode_delta_base_offset(raw)]
                    header = bytes(pack_object_header(OFS_DELTA, pos - placed[base], size,
                                                      object_format=pack.data.object_format))
                record = UnpackedObject(type_num, sha=sha, decomp_len=size)
                record.comp_chunks = [header, data[body:end]]
                placed[sha] = pos
                pos += len(header) + end - body
                yield record

    return list(order), records()


def _write_pack(repo: Repo, count: int, records: Iterator[UnpackedObject]) -> Pack:
    """Write ``records`` as a pack and its index, each fsynced, and make them the store's.

    What dulwich's ``add_pack_data`` does, without its reading the whole pack back (to index
    it and to parse every object: half an import's time): the records are the objects this
    store just built and checked, and the writer returns each one's offset and checksum.
    As dulwich does, the pack is renamed into place before its index is written: a pack is
    used only once its index is there. Compressed as a save's loose objects are (the repo's
    ``core.looseCompression``, 1: ~3x faster than dulwich's pack default; a repack redoes it).

    Raises:
        RepoBusy: another live process writes the very same index (:func:`.lock.wait_out`).
    """
    store = repo.object_store
    fd, temp = tempfile.mkstemp(dir=store.pack_dir, prefix="tmp_pack_")
    try:
        with os.fdopen(fd, "wb") as f:
            entries, checksum = write_pack_data(f.write, records, num_records=count,
                                                compression_level=store.loose_compression_level,
                                                object_format=store.object_format)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temp, PACK_MODE)
        base = os.path.join(store.pack_dir, f"pack-{checksum.hex()}")
        os.rename(temp, base + ".pack")
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise

    def write_index() -> None:
        with GitFile(base + ".idx", "wb", mask=PACK_MODE, fsync=True, shared_perm=store.shared_perm) as index:
            write_pack_index(index, sorted((sha, offset, crc) for sha, (offset, crc) in entries.items()), checksum,
                             version=store.pack_index_version)

    wait_out(write_index)  # the same pack's index a killed import left half written is taken over
    pack = Pack(base, object_format=store.object_format)
    store._add_cached_pack(base, pack)
    return pack


def _records(buf: bytearray, pending: list[_Pending]) -> Iterator[UnpackedObject]:
    """The pack's records: each blob after the first a delta on an earlier one of the line, then its tree and commit."""
    seen: set[ObjectID] = set()  # a pack holds each object once (two commits may share a tree)
    for k, (size, blob, tree, commit) in enumerate(pending):
        if blob not in seen:
            seen.add(blob)
            digest = bytes.fromhex(blob.decode("ascii"))
            base_pos = base_position(k)
            with memoryview(buf)[:size] as content:
                if base_pos is None:
                    yield UnpackedObject(_BLOB, sha=digest, decomp_chunks=[bytes(content)])
                else:
                    base_size, base, *_ = pending[base_pos]
                    yield UnpackedObject(_BLOB, sha=digest, delta_base=bytes.fromhex(base.decode("ascii")),
                                         decomp_chunks=append_delta(base_size, content))
        for obj in (tree, commit):
            if obj.id not in seen:
                seen.add(obj.id)
                yield UnpackedObject(obj.type_num, sha=bytes.fromhex(obj.id.decode("ascii")),
                                     decomp_chunks=obj.as_raw_chunks())
