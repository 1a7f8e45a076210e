"""Packing the session repo: one delta pack, bounded delta depth, fsck-clean.

Every save writes a new loose blob holding the whole ``session.jsonl``, so loose objects
grow with (saves x file size). A repack writes everything reachable from refs *and reflogs*
(so ``git fsck --strict`` stays clean) into one pack in which each session blob is a git
delta against an earlier blob of the same first-parent chain. Because the log is append
only, that delta is "copy the base, insert the new lines": computing it costs nothing and
it is as small as what was added — so storage grows with what was added, not with saves.

dulwich's own gc/repack computes no deltas and ignores reflogs (a prune can then break fsck);
this module picks the bases itself and hands dulwich's pack writer finished deltas.

Delta bases along a chain (position ``k`` = first-parent distance from the root commit):
``k % BLOCK != 0`` deltas against ``k - 1``; block starts ``k = m * BLOCK`` delta against
``(m - lowbit(m)) * BLOCK`` (a Fenwick tree over blocks). Depth is at most
``BLOCK - 1 + log2(saves / BLOCK)`` (< 50, git's default ``pack.depth``, below 10^8 saves).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from dulwich.object_store import BaseObjectStore
from dulwich.objects import Blob, Commit, ObjectID, ShaFile, Tree
from dulwich.pack import UnpackedObject
from dulwich.repo import Repo

from .privacy import tighten_packs

#: Chain positions per block (see module doc).
BLOCK = 16
#: git's delta copy op moves at most this many bytes (3 size bytes).
_MAX_COPY = 0xFFFFFF
#: git's delta insert op carries at most this many bytes.
_MAX_INSERT = 0x7F
#: Bytes of a delta per piece (:func:`append_delta`).
_PIECE = 1 << 20
#: Saves after which an automatic repack is due.
AUTO_SAVES = 64
#: Loose bytes (uncompressed blob sizes) after which an automatic repack is due.
AUTO_BYTES = 32 * 1024 * 1024
#: Packs after which an automatic repack is due: every fetch that brings objects adds one,
#: and each object lookup searches the packs one by one.
AUTO_PACKS = 16
_ZERO = b"0" * 40
_HEX = frozenset(b"0123456789abcdef")

def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte = n & 0x7F
        n >>= 7
        if n:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def append_delta(base_len: int, target: bytes | memoryview) -> list[bytes]:
    """Return a git delta turning a base of ``base_len`` bytes into ``target``, in pieces.

    Only valid when ``target`` starts with the base (the append-only case): the delta
    copies the base whole and inserts ``target[base_len:]`` (git pack format, "deltified
    representation").

    Args:
        base_len: length of the base object, bytes.
        target: the new object's content.

    Returns:
        The delta's bytes, in pieces of about :data:`_PIECE` (a delta on an early base holds
        nearly the whole log: made and compressed a piece at a time, it is never copied
        whole, and what the pack writer compresses of it comes out a piece at a time).
    """
    pieces: list[bytes] = []
    out = bytearray(_varint(base_len) + _varint(len(target)))
    offset = 0
    while offset < base_len:
        size = min(base_len - offset, _MAX_COPY)
        op, args = 0x80, bytearray()
        for i in range(4):
            byte = (offset >> (8 * i)) & 0xFF
            if byte:
                op |= 1 << i
                args.append(byte)
        for i in range(3):
            byte = (size >> (8 * i)) & 0xFF
            if byte:
                op |= 0x10 << i
                args.append(byte)
        out.append(op)
        out += args
        offset += size
    tail = memoryview(target)[base_len:]
    for i in range(0, len(tail), _MAX_INSERT):
        chunk = tail[i:i + _MAX_INSERT]
        out.append(len(chunk))
        out += chunk
        if len(out) >= _PIECE:
            pieces.append(bytes(out))
            out.clear()
    return [*pieces, bytes(out)]


def base_position(k: int) -> int | None:
    """Return the chain position whose blob the blob at position ``k`` deltas against."""
    if k == 0:
        return None
    if k % BLOCK:
        return k - 1
    m = k // BLOCK
    return (m - (m & -m)) * BLOCK


@dataclass
class RepackResult:
    """What a repack did.

    Attributes:
        objects: objects in the new pack.
        deltas: how many of them are deltas.
        max_depth: the longest delta chain, objects.
        pack_bytes: size of the new ``.pack`` file, bytes.
        loose_removed: loose objects deleted (now packed).
        packs_removed: old packs deleted.
        seconds: wall time.
    """

    objects: int = 0
    deltas: int = 0
    max_depth: int = 0
    pack_bytes: int = 0
    loose_removed: int = 0
    packs_removed: int = 0
    seconds: float = 0.0


def reflog_ids(data: bytes) -> Iterator[ObjectID]:
    r"""Yield the old and new object ids of every line of a reflog file, read tolerantly.

    A line is ``<old> <new> <committer> <time> <tz>[\t<message>]``: plain ``git update-ref``
    without ``-m`` writes no tab and no message, which dulwich's ``read_reflog`` cannot parse
    (it expects the tab). Only the two ids matter here; a line that does not start
    with them (damage) is skipped, zero ids (creation, deletion) are left out.

    Args:
        data: the reflog file's bytes.
    """
    for line in data.splitlines():
        old, new = line[:40], line[41:81]
        if line[40:41] != b" " or not (_HEX.issuperset(old) and _HEX.issuperset(new) and len(new) == 40):
            continue
        for sha in (old, new):
            if sha != _ZERO:
                yield ObjectID(sha)


def _roots(repo: Repo) -> set[ObjectID]:
    """Every commit a ref or a reflog entry names (git keeps reflog targets reachable)."""
    roots: set[ObjectID] = set()
    for name, sha in repo.refs.as_dict().items():
        if sha and name != b"HEAD":
            roots.add(sha)
    logs = Path(repo.controldir()) / "logs"
    if logs.is_dir():
        for path in logs.rglob("*"):
            if path.is_file():
                roots.update(reflog_ids(path.read_bytes()))
    return {r for r in roots if r in repo.object_store}


def add_tree(store: BaseObjectStore, tree_id: ObjectID, seen: set[ObjectID], order: list[ObjectID]) -> None:
    """Append ``tree_id`` and every tree and blob under it not in ``seen`` to ``order`` (marking them seen).

    Submodule entries (mode 160000) name no object here and are skipped.
    """
    if tree_id in seen:
        return
    seen.add(tree_id)
    order.append(tree_id)
    tree = store[tree_id]
    assert isinstance(tree, Tree)
    for entry in tree.iteritems():
        if entry.mode == 0o160000:
            continue
        if entry.mode & 0o040000:
            add_tree(store, entry.sha, seen, order)
        elif entry.sha not in seen:
            seen.add(entry.sha)
            order.append(entry.sha)


def _plan(repo: Repo) -> tuple[list[ObjectID], dict[ObjectID, tuple[int, ObjectID | None]]]:
    """Return (objects in write order, blob sha -> (depth, base sha or None))."""
    store = repo.object_store
    commits: dict[ObjectID, Commit] = {}
    todo = list(_roots(repo))
    while todo:
        sha = todo.pop()
        if sha in commits:
            continue
        obj = store[sha]
        if not isinstance(obj, Commit):
            continue  # refs/tags to trees or blobs are left out of chains; still packed below
        commits[sha] = obj
        todo.extend(p for p in obj.parents if p not in commits)

    # Position along first parents, computed iteratively (chains can be long).
    position: dict[ObjectID, int] = {}
    for sha in commits:
        path = []
        cur: ObjectID | None = sha
        while cur is not None and cur not in position:
            path.append(cur)
            parents = commits[cur].parents if cur in commits else []
            cur = parents[0] if parents and parents[0] in commits else None
        start = position[cur] + 1 if cur is not None else 0
        for i, c in enumerate(reversed(path)):
            position[c] = start + i

    def ancestor_at(sha: ObjectID, pos: int) -> ObjectID:
        while position[sha] > pos:
            sha = commits[sha].parents[0]
        return sha

    order: list[ObjectID] = []
    seen: set[ObjectID] = set()
    plan: dict[ObjectID, tuple[int, ObjectID | None]] = {}
    session_blob: dict[ObjectID, ObjectID] = {}  # commit -> its single top-level blob, if any

    for sha in sorted(commits, key=position.__getitem__):
        commit = commits[sha]
        order.append(sha)
        seen.add(sha)
        add_tree(store, commit.tree, seen, order)
        tree = store[commit.tree]
        entries = list(tree.iteritems()) if isinstance(tree, Tree) else []
        if len(entries) == 1 and not entries[0].mode & 0o040000:
            session_blob[sha] = entries[0].sha

    for sha in sorted(session_blob, key=position.__getitem__):
        blob = session_blob[sha]
        if blob in plan:
            continue
        base_pos = base_position(position[sha])
        base = session_blob.get(ancestor_at(sha, base_pos)) if base_pos is not None else None
        if base is None or base == blob or base not in plan:
            plan[blob] = (0, None)
        else:
            plan[blob] = (plan[base][0] + 1, base)
    return order, plan


def records(store: BaseObjectStore, order: list[ObjectID], plan: dict[ObjectID, tuple[int, ObjectID | None]],
            result: RepackResult) -> Iterator[UnpackedObject]:
    """Yield the pack records of ``order``: a planned blob as an append delta against its base, the rest whole.

    A base is kept in memory only while a later delta still needs it. A base that is not in
    ``order`` (a thin pack's: the receiver has it) is read from ``store``. A blob that turns
    out not to start with its base (a log rewritten by another tool) is stored whole.

    Args:
        store: where the objects are read.
        order: the objects to write, bases before the deltas on them.
        plan: blob -> (delta depth, base or None); objects not in it are written whole.
        result: ``deltas`` and ``max_depth`` are counted into it.
    """
    contents: dict[ObjectID, bytes] = {}  # blob sha -> bytes, while a later delta needs it
    uses: dict[ObjectID, int] = {}
    for _depth, base in plan.values():
        if base is not None:
            uses[base] = uses.get(base, 0) + 1
    for sha in order:
        obj: ShaFile = store[sha]
        digest = bytes.fromhex(sha.decode("ascii"))
        depth, base = plan.get(sha, (0, None))
        raw = obj.as_raw_string()
        if sha in uses:
            contents[sha] = raw
        base_raw = None
        if base is not None:
            base_raw = contents.get(base)
            if base_raw is None and isinstance(obj, Blob):
                base_raw = store[base].as_raw_string()  # outside the pack: the receiver has it
                contents[base] = base_raw
            uses[base] -= 1
            if not uses[base]:
                contents.pop(base, None)  # keep memory to the bases still ahead
        if base is not None and base_raw is not None and isinstance(obj, Blob) and raw.startswith(base_raw):
            delta = append_delta(len(base_raw), raw)
            result.deltas += 1
            result.max_depth = max(result.max_depth, depth)
            yield UnpackedObject(obj.type_num, sha=digest, delta_base=bytes.fromhex(base.decode("ascii")),
                                 decomp_chunks=delta)
        else:
            if base is not None:
                plan[sha] = (0, None)  # not an append of its base: stored whole
            yield UnpackedObject(obj.type_num, sha=digest, decomp_chunks=obj.as_raw_chunks())


def repack(repo: Repo) -> RepackResult:
    """Write every reachable object into one delta pack; remove old packs and packed loose objects.

    Loose objects nothing reaches (a save that lost its compare-and-swap) are kept loose
    (what a killed writer left half done is ``GitStore.heal``'s).
    Safe against concurrent saves: objects written meanwhile stay loose, and only loose
    objects that the new pack holds are removed.

    Args:
        repo: an open repository (its pack cache is refreshed afterwards).

    Returns:
        Figures of what was done.
    """
    started = time.monotonic()
    store = repo.object_store
    old_packs = list(store.packs)
    loose_before = set(store._iter_loose_objects())
    order, plan = _plan(repo)
    result = RepackResult(objects=len(order))

    pack = store.add_pack_data(len(order), records(store, order, plan, result))
    if pack is None:
        result.seconds = time.monotonic() - started
        return result
    tighten_packs(repo)
    new_name = os.path.basename(pack._basename)
    result.pack_bytes = os.path.getsize(pack._data_path)
    for old in old_packs:
        if os.path.basename(old._basename) == new_name or os.path.exists(old._basename + ".keep"):
            continue
        store._remove_pack(old)
        result.packs_removed += 1
    for sha in loose_before:
        if sha in pack:
            path = os.path.join(store.path, sha[:2].decode(), sha[2:].decode())
            try:
                os.unlink(path)
                result.loose_removed += 1
            except FileNotFoundError:
                pass
    store._update_pack_cache()
    result.seconds = time.monotonic() - started
    return result

