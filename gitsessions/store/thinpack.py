"""Packs of what is new: the pack a push sends, and the automatic repack of loose objects.

dulwich's own pack generation sends loose blobs whole (no deltas against what is there), and a
session's blob is the whole ``session.jsonl``: one new turn of a 5 MB session would send
5 MB. Here the pack is planned like a repack (:mod:`.pack`): a new blob whose first parent's
blob the other side has is written as "copy that blob, insert the new lines" -- a *thin*
pack, which the receiver completes from its own objects (git's ``index-pack --fix-thin``,
dulwich's ``add_pack_data``) -- so one new turn sends about that turn's compressed bytes.
Blobs further along a chain of new saves delta against earlier blobs in the same pack, with
the bounded depth of :func:`~.pack.base_position`. The automatic repack
(:func:`pack_loose`) packs the loose objects the same way, against the packed parents.

What the remote has is the commits its refs name (``have``) and their ancestors. Walking all
of that would cost O(remote history) on every push, so the walk first goes back from the new
commits only, until each path meets a ``have`` commit (the common case: new saves on top of
what the remote holds). Only a path that reaches a root (a new session, or a fork of an
older save) needs git's full walk: newest first by commit time, ``have`` commits marking
their ancestors as known, until nothing unknown is left queued. Either walk may send an
object the remote already has (clock skew, a commit it holds through another ref); it never
leaves out one it lacks.
"""

from __future__ import annotations

import heapq
import itertools
import os
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from dulwich.object_store import BaseObjectStore
from dulwich.objects import Commit, ObjectID, Tree
from dulwich.pack import UnpackedObject
from dulwich.repo import Repo

from .pack import RepackResult, add_tree, base_position, records
from .privacy import tighten_packs

#: The receive-pack capability by which a server refuses thin packs (gitprotocol-capabilities).
NO_THIN = b"no-thin"

_Plan = dict[ObjectID, tuple[int, ObjectID | None]]


class PushPack:
    """The ``generate_pack_data`` callback of dulwich's ``send_pack``, planned as the module says.

    dulwich calls it with the remote's ref values (``have``), the commits to send (``want``)
    and whether the server takes offset deltas (``ofs-delta``). Deltas inside the pack are
    offset deltas, so without ``ofs-delta`` only deltas against the remote's objects are used;
    a server advertising ``no-thin`` gets whole objects. Pushing to a local path writes with
    dulwich, which completes thin packs.

    Args:
        repo: the local repository.
        client: the dulwich client of this push, whose capability negotiation is watched for
            ``no-thin`` (dulwich itself ignores it); None for no watching.

    Attributes:
        figures: deltas and their deepest chain in the pack sent (``deltas``, ``max_depth``).
        objects: objects in the pack sent.
    """

    def __init__(self, repo: Repo, client: object | None = None):
        self.repo = repo
        self.thin = True
        self.figures = RepackResult()
        self.objects = 0
        negotiate = getattr(client, "_negotiate_receive_pack_capabilities", None)
        if negotiate is not None:
            def watching(server_capabilities: set[bytes]) -> Any:
                self.thin = NO_THIN not in server_capabilities
                return negotiate(server_capabilities)

            client._negotiate_receive_pack_capabilities = watching  # type: ignore[union-attr]

    def __call__(self, have: Iterable[ObjectID], want: Iterable[ObjectID], *, ofs_delta: bool = False,
                 progress: Callable[[bytes], None] | None = None) -> tuple[int, Iterator[UnpackedObject]]:
        """Return ``(object count, records)`` of the pack holding ``want`` minus what ``have`` reaches.

        ``progress`` is the sink of the server's messages: local packing says nothing into it.
        """
        store = self.repo.object_store
        planned = plan_push(store, set(have), set(want), thin=self.thin, ofs_delta=ofs_delta)
        if planned is None:  # something other than commits to send: dulwich's generic packer
            return self.repo.generate_pack_data(set(have), set(want), ofs_delta=ofs_delta)
        order, plan = planned
        self.objects = len(order)
        return len(order), records(store, order, plan, self.figures)


def plan_push(store: BaseObjectStore, have: set[ObjectID], want: set[ObjectID], *, thin: bool = True,
              ofs_delta: bool = True) -> tuple[list[ObjectID], _Plan] | None:
    """Plan the pack that brings a remote holding ``have`` (and its ancestors) to ``want``.

    Args:
        store: the local objects.
        have: commits the remote's refs name.
        want: commits to send.
        thin: deltas may use a base the remote has and the pack lacks.
        ofs_delta: deltas may use a base inside the pack (written as an offset delta).

    Returns:
        ``(objects in write order, blob -> (delta depth, base or None))`` for
        :func:`~.pack.records`, or None when a wanted object is not a local commit.
    """
    read = _reader(store)
    wants = [w for w in want if w not in have]
    if any(read(w) is None for w in wants):
        return None
    walked = _walk_to_have(wants, have, read)
    send, boundary = walked if walked is not None else _walk_by_date(wants, have, read)
    return _plan(store, send, boundary, read, thin=thin, ofs_delta=ofs_delta)


def pack_loose(repo: Repo) -> RepackResult:
    """Move the loose objects into one new pack: the incremental repack of the automatic schedule.

    The loose commits are the new saves; their blobs delta along their chains as a push's do,
    the first of each against its packed parent's blob, which dulwich's pack writer appends
    whole (a pack on disk holds its own bases). Loose objects no loose commit names (a save
    still being written, one that lost its compare-and-swap) are packed whole. Only loose
    objects the new pack holds are removed; nothing else is touched (:func:`~.pack.repack`
    merges the packs).

    Args:
        repo: an open repository (its pack cache is refreshed afterwards).

    Returns:
        Figures of what was done (``packs_removed`` is 0).
    """
    started = time.monotonic()
    store = repo.object_store
    result = RepackResult()
    loose = set(store._iter_loose_objects())
    read = _reader(store)
    send = {sha for sha in loose if read(sha) is not None}
    boundary = {p for sha in send for p in read(sha).parents if p not in send}  # type: ignore[union-attr]
    order, plan = _plan(store, send, boundary, read, thin=True, ofs_delta=True)
    planned = set(order)
    order += sorted(loose - planned)
    result.objects = len(order)
    pack = store.add_pack_data(len(order), records(store, order, plan, result)) if order else None
    if pack is not None:
        tighten_packs(repo)
        result.pack_bytes = os.path.getsize(pack._data_path)
        for sha in loose:
            if sha in pack:
                try:
                    os.unlink(os.path.join(store.path, sha[:2].decode(), sha[2:].decode()))
                    result.loose_removed += 1
                except FileNotFoundError:
                    pass
        store._update_pack_cache()
    result.seconds = time.monotonic() - started
    return result


def _reader(store: BaseObjectStore) -> Callable[[ObjectID], Commit | None]:
    """A cached reader of commits: the commit, or None for a missing object or one of another type."""
    commits: dict[ObjectID, Commit | None] = {}

    def read(sha: ObjectID) -> Commit | None:
        if sha not in commits:
            try:
                obj = store[sha]
            except KeyError:
                obj = None
            commits[sha] = obj if isinstance(obj, Commit) else None
        return commits[sha]

    return read


def _walk_to_have(wants: list[ObjectID], have: set[ObjectID],
                  read: Callable[[ObjectID], Commit | None]) -> tuple[set[ObjectID], set[ObjectID]] | None:
    """``(commits to send, known commits next to them)``, or None when a path reaches a root."""
    send: set[ObjectID] = set()
    boundary: set[ObjectID] = set()
    todo = list(wants)
    while todo:
        sha = todo.pop()
        if sha in send or sha in boundary:
            continue
        commit = read(sha) if sha not in have else None
        if commit is None:
            boundary.add(sha)  # the remote has it (or this repo lacks it: it cannot be sent)
            continue
        if not commit.parents:
            return None
        send.add(sha)
        todo.extend(commit.parents)
    return send, boundary


def _walk_by_date(wants: list[ObjectID], have: set[ObjectID],
                  read: Callable[[ObjectID], Commit | None]) -> tuple[set[ObjectID], set[ObjectID]]:
    """The walk git does: newest first, ``have`` marking ancestors known, until nothing unknown is queued."""
    known: set[ObjectID] = set()
    queued: set[ObjectID] = set()
    unknown: set[ObjectID] = set()  # queued, not yet popped, not known to the remote
    heap: list[tuple[int, int, ObjectID]] = []
    tie = itertools.count()

    def queue(sha: ObjectID, is_known: bool) -> None:
        if is_known:
            if sha in known:
                return
            known.add(sha)
            unknown.discard(sha)
        if sha in queued:
            return
        commit = read(sha)
        if commit is None:
            return  # this repo lacks it (a have it never fetched): nothing to walk
        queued.add(sha)
        if not is_known:
            unknown.add(sha)
        heapq.heappush(heap, (-commit.commit_time, next(tie), sha))

    for sha in have:
        queue(sha, True)
    for sha in wants:
        queue(sha, False)
    popped: set[ObjectID] = set()
    while heap and unknown:
        _, _, sha = heapq.heappop(heap)
        unknown.discard(sha)
        is_known = sha in known
        if not is_known:
            popped.add(sha)
        commit = read(sha)
        assert commit is not None
        for parent in commit.parents:
            queue(parent, is_known)
    send = popped - known
    boundary = {p for sha in send for p in read(sha).parents if p not in send}  # type: ignore[union-attr]
    return send, boundary


def _plan(store: BaseObjectStore, send: set[ObjectID], boundary: set[ObjectID],
          read: Callable[[ObjectID], Commit | None], *, thin: bool,
          ofs_delta: bool) -> tuple[list[ObjectID], _Plan]:
    """Order the objects of ``send`` and pick each session blob's delta base (see the module doc)."""
    remote_has: set[ObjectID] = set()
    session_blob: dict[ObjectID, ObjectID] = {}  # commit -> its single top-level blob, if any

    def tree_entries(commit: ObjectID) -> list:
        c = read(commit)
        tree = store[c.tree] if c is not None and c.tree in store else None
        entries = list(tree.iteritems()) if isinstance(tree, Tree) else []
        if len(entries) == 1 and not entries[0].mode & 0o040000:
            session_blob[commit] = entries[0].sha
        return entries

    for sha in boundary:
        known = read(sha)
        if known is not None:
            remote_has.add(known.tree)
            remote_has.update(e.sha for e in tree_entries(sha))

    # Chain position k along first parents from the boundary (k = 1: its parent is known or
    # absent), and the first commit of that chain; computed iteratively (chains are long).
    position: dict[ObjectID, int] = {}
    start: dict[ObjectID, ObjectID] = {}
    for sha in send:
        path = []
        cur: ObjectID | None = sha
        while cur is not None and cur in send and cur not in position:
            path.append(cur)
            parents = read(cur).parents  # type: ignore[union-attr]
            cur = parents[0] if parents else None
        k, first = (position[cur], start[cur]) if cur is not None and cur in position else (0, path[-1])
        for on_path in reversed(path):
            k += 1
            position[on_path], start[on_path] = k, first

    def first_parent(sha: ObjectID) -> ObjectID | None:
        parents = read(sha).parents  # type: ignore[union-attr]
        return parents[0] if parents else None

    def ancestor_at(sha: ObjectID, pos: int) -> ObjectID | None:
        cur: ObjectID | None = sha
        while cur is not None and position[cur] > max(pos, 1):
            cur = first_parent(cur)
        return first_parent(cur) if pos == 0 and cur is not None else cur

    chains = {first: i for i, first in enumerate(sorted(set(start.values())))}
    order: list[ObjectID] = []
    seen: set[ObjectID] = set(remote_has)
    plan: _Plan = {}

    in_pack: set[ObjectID] = set()
    for sha in sorted(send, key=lambda c: (chains[start[c]], position[c])):
        order.append(sha)
        commit = read(sha)
        assert commit is not None
        before = len(order)
        add_tree(store, commit.tree, seen, order)
        in_pack.update(order[before:])
        tree_entries(sha)
        blob = session_blob.get(sha)
        if blob is None or blob not in in_pack or blob in plan:
            continue
        base_pos = base_position(position[sha])
        anc = ancestor_at(sha, base_pos) if base_pos is not None else None
        base = session_blob.get(anc) if anc is not None else None
        if base is not None and base != blob and base in in_pack and base in plan and ofs_delta:
            plan[blob] = (plan[base][0] + 1, base)
        elif base is not None and base != blob and base in remote_has and thin:
            plan[blob] = (1, base)  # the receiver appends the base whole: depth 1 there
        else:
            plan[blob] = (0, None)
    return order, plan
