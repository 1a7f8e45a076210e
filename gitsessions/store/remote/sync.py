"""The sync rule, written once (the README's "Sync" says it in user words).

Per remote, the repo keeps the *sync base*: for each session ref, what the remote held when
both sides last agreed on it, as tracking refs ``refs/remotes/<remote>/heads/<id>`` and
``refs/remotes/<remote>/archive/<id>``. Every session ref X is decided by :func:`decide` from
its local tip L, its base O and the remote's tip R:

- L == R: nothing. Only one side has X and no base: new there, it is copied over.
- A fast-forward either way: the side behind moves (a pull here, a push there).
- Diverged: the remote's side keeps the name (it reached the remote first); the local side
  becomes the fork ``<id>-<short L>`` (:func:`~gitsessions.ids.pull_fork_name`) and X here
  moves to R; the push then sends the fork.
- Gone on one side (a rename, an archive, a restore): the other side drops X too when it
  still has X at the base and X's commit is kept by another synced ref; a side that gained
  turns since the base keeps X live and sends it again. Nothing unreachable is deleted.
  When one side then used the name X again, the side still at the base follows it.

A pull carries out the steps that move refs here (:mod:`.pull`); a push the ones that move
the remote's (:mod:`.remotes`). A ref of a session a live writer holds, or whose journal
holds a turn a crashed ``gs`` left, is not moved: it waits for the next sync.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dulwich.config import ConfigFile
from dulwich.graph import can_fast_forward
from dulwich.objects import ZERO_SHA, Commit, ObjectID, Tree
from dulwich.refs import Ref
from dulwich.repo import Repo

from ...ids import is_session_id
from ..lock import unless_held
from ..repo import SESSION_FILE, read_refs
from ..shared import write_config
from .reports import PushReport

HEADS = b"refs/heads/"
ARCHIVE = b"refs/archive/"
#: The namespaces sync exchanges: live and archived sessions.
SYNCED = (HEADS, ARCHIVE)


class Step(enum.Enum):
    """What sync does with one session ref."""

    SAME = "same"  #: both sides hold the same commit
    TAKE = "take"  #: a pull creates or fast-forwards it here
    SEND = "send"  #: a push creates or fast-forwards it there
    DROP_HERE = "drop-here"  #: gone there and kept in another ref: a pull removes it here
    DROP_THERE = "drop-there"  #: gone here and kept in another ref: a push removes it there
    DIVERGED = "diverged"  #: both gained saves: the local side becomes a fork


def decide(local: bytes | None, base: bytes | None, remote: bytes | None, *, contains, kept_here,
           kept_there) -> Step:
    """Decide the step for one session ref (the rule in the module doc).

    Args:
        local: the ref's commit here (None: absent).
        base: its commit at the sync base (None: none).
        remote: its commit there (None: absent).
        contains: ``contains(a, b)``: True when commit ``a`` is ``b`` or one of its ancestors.
        kept_here: ``kept_here(commit)``: True when another session ref here holds ``commit``.
        kept_there: ``kept_there(commit)``: True when another session ref there holds it.

    Returns:
        The step.
    """
    if local == remote:
        return Step.SAME
    if local is None:
        return Step.DROP_THERE if remote == base and kept_here(remote) else Step.TAKE
    if remote is None:
        return Step.DROP_HERE if local == base and kept_there(local) else Step.SEND
    if contains(local, remote):
        return Step.TAKE
    if contains(remote, local):
        return Step.SEND
    # Renamed away and the name used again for something new: the old saves are kept under
    # the new name, so the side that did not change follows (not a fork of nothing new).
    if local == base and kept_there(local):
        return Step.TAKE
    if remote == base and kept_here(remote):
        return Step.SEND
    return Step.DIVERGED


def named_like_a_session(ref: bytes) -> bool:
    """True for ``refs/heads/<id>`` and ``refs/archive/<id>`` named by a session id (whatever the tree)."""
    name = ref.split(b"/", 2)[2].decode("utf-8", "replace") if ref.startswith(SYNCED) else ""
    return is_session_id(name)


def not_a_session(repo: Repo, ref: bytes, sha: bytes, checked: dict[bytes, str | None] | None = None) -> str | None:
    """Why ``ref`` (at ``sha``) is no session ref to sync, or None when it is one.

    Args:
        repo: the repository holding the commit.
        ref: the ref's name.
        sha: its commit.
        checked: commit -> verdict of the trees already looked at (a commit never changes).
    """
    if not named_like_a_session(ref):
        return "not a session id"
    if checked is not None and sha in checked:
        return checked[sha]
    try:
        commit = repo[ObjectID(sha)]
        tree = repo[commit.tree] if isinstance(commit, Commit) else None
        why = None if isinstance(tree, Tree) and SESSION_FILE in tree else f"no {SESSION_FILE.decode()} in its tree"
    except KeyError:
        why = "its commit is missing"
    if checked is not None:
        checked[sha] = why
    return why


def session_refs(repo: Repo, refs: Mapping[Any, bytes], checked: dict[bytes, str | None] | None = None
                 ) -> tuple[dict[bytes, bytes], list[tuple[str, str]]]:
    """Split ``refs`` into the session refs under ``refs/heads/`` and ``refs/archive/`` and the rest.

    Args:
        repo: the repository holding their commits.
        refs: ref -> commit.
        checked: verdicts by commit already reached (see :func:`not_a_session`); filled here.

    Returns:
        ``(session refs, [(ref name, why it is none)])``; refs outside both namespaces are left out.
    """
    kept: dict[bytes, bytes] = {}
    skipped: list[tuple[str, str]] = []
    for ref, sha in sorted(refs.items()):
        if not ref.startswith(SYNCED):
            continue
        why = not_a_session(repo, ref, sha, checked)
        if why is None:
            kept[ref] = sha
        else:
            skipped.append((ref.decode("utf-8", "replace"), why))
    return kept, skipped


def synced_refs(repo: Repo) -> dict[Ref, ObjectID]:
    """Return the refs here under ``refs/heads/`` and ``refs/archive/`` (ref -> commit), one read of each.

    Not the remote-tracking refs, which a sync keeps one of per session and remote.
    """
    refs = read_refs(repo, HEADS)
    refs.update(read_refs(repo, ARCHIVE))
    return refs


def label(ref: bytes) -> str:
    """How messages name a session ref: ``<id>``, or ``archive/<name>``."""
    return ref.decode("utf-8", "replace").removeprefix("refs/heads/").removeprefix("refs/")


def holder(repo: Repo, sha: bytes, tips: Mapping[bytes, bytes], but: bytes) -> bytes | None:
    """Return a ref of ``tips`` other than ``but`` whose history holds commit ``sha``, else None.

    A rename, an archive and a restore keep the very commit, so exact tips are tried first.
    Of several, the one a message names best: ``but``'s own name in the other namespace
    (archived or restored), then a live session (renamed), then another archive.
    """
    name = but.split(b"/", 2)[2] if but.startswith(SYNCED) else b""

    def rank(ref: bytes) -> tuple[int, bytes]:
        return (0 if ref.split(b"/", 2)[2:] == [name] else 1 if ref.startswith(HEADS) else 2), ref

    others = sorted(((ref, tip) for ref, tip in tips.items() if ref != but), key=lambda item: rank(item[0]))
    for ref, tip in others:
        if tip == sha:
            return ref
    for ref, tip in others:
        if ObjectID(tip) in repo.object_store and can_fast_forward(repo, ObjectID(sha), ObjectID(tip)):
            return ref
    return None


@dataclass
class Sides:
    """The session refs of both sides and their sync base, ref -> commit (hex bytes)."""

    local: dict[bytes, bytes]
    base: dict[bytes, bytes]
    remote: dict[bytes, bytes]

    def refs(self) -> list[bytes]:
        """Every session ref either side or the base knows, sorted."""
        return sorted(set(self.local) | set(self.base) | set(self.remote))

    def step(self, repo: Repo, ref: bytes) -> Step:
        """The step for ``ref`` (see :func:`decide`).

        A remote commit not fetched yet is taken when the ref is new here; else it cannot be
        a fast-forward from here (the local history would hold it), so it counts as diverged.
        """
        local, remote = self.local.get(ref), self.remote.get(ref)
        if local == remote:  # most refs of a sync: decided without a look at the objects
            return Step.SAME
        if remote is not None and ObjectID(remote) not in repo.object_store:
            return Step.TAKE if local is None else Step.DIVERGED

        def contains(a: bytes, b: bytes) -> bool:
            return can_fast_forward(repo, ObjectID(a), ObjectID(b))

        return decide(local, self.base.get(ref), remote, contains=contains,
                      kept_here=lambda sha: holder(repo, sha, self.local, ref) is not None,
                      kept_there=lambda sha: holder(repo, sha, self.remote, ref) is not None)


# -- the sync base -----------------------------------------------------------------------------


def write_refspecs(repo: Repo, config: ConfigFile, remote: str) -> None:
    """Write the fetch refspecs of ``remote`` that put its refs where the sync base lives.

    So a plain ``git fetch`` keeps the same layout: ``refs/remotes/<remote>/heads/*`` and
    ``refs/remotes/<remote>/archive/*``.
    """
    section = (b"remote", remote.encode())
    config.set(section, b"fetch", f"+refs/heads/*:refs/remotes/{remote}/heads/*".encode())
    config.add(section, b"fetch", f"+refs/archive/*:refs/remotes/{remote}/archive/*".encode())
    write_config(repo, config)


def upgrade_refspecs(repo: Repo, remote: str) -> None:
    """Rewrite the one fetch refspec a remote added before the sync base has (``refs/remotes/<remote>/*``)."""
    config = repo.get_config()
    if list(config.get_multivar((b"remote", remote.encode()), b"fetch")) == [
            f"+refs/heads/*:refs/remotes/{remote}/*".encode()]:
        write_refspecs(repo, config, remote)


def _tracking(remote: str, ref: bytes) -> Ref:
    return Ref(b"refs/remotes/" + remote.encode() + b"/" + ref[len(b"refs/"):])


def load_base(repo: Repo, remote: str) -> dict[bytes, bytes]:
    """Return the sync base of ``remote`` (ref -> commit), in one read; old-style ``refs/remotes/<remote>/<id>`` go.

    Those were written by every fetch before the base existed (``<id>`` may also be
    ``heads`` or ``archive``, a name the new layout needs as a folder), so they are removed.
    """
    prefix = b"refs/remotes/" + remote.encode() + b"/"
    base: dict[bytes, bytes] = {}
    for ref, sha in read_refs(repo, prefix).items():
        rest = ref[len(prefix):]
        if rest.startswith((b"heads/", b"archive/")):
            base[b"refs/" + rest] = sha
        elif is_session_id(rest.decode("utf-8", "replace")):
            unless_held(functools.partial(repo.refs.remove_if_equals, Ref(ref), None))  # another gs removes it now
    return base


def _kept_marker(remote: str, ref: bytes) -> Ref:
    return Ref(b"refs/remotes/" + remote.encode() + b"/kept/" + ref[len(b"refs/"):])


def load_kept(repo: Repo, remote: str, there: Mapping[bytes, bytes]) -> dict[bytes, bytes]:
    """Return the refs ``remote`` refused to delete (it refuses deletions): ref -> its commit there then.

    A rename or archive here left that old name there; while it still points at that
    commit, a sync neither asks again (each sync would be refused) nor takes it back
    here as a live session (its saves are kept under the new name). One that moved or
    went there since (``there``: the remote's session refs now) is forgotten: the rule
    decides it again.
    """
    prefix = b"refs/remotes/" + remote.encode() + b"/kept/"
    kept: dict[bytes, bytes] = {b"refs/" + ref[len(prefix):]: sha for ref, sha in read_refs(repo, prefix).items()}
    for ref in [r for r, sha in kept.items() if there.get(r) != sha]:
        keep_there(repo, remote, ref, None)
        del kept[ref]
    return kept


def keep_there(repo: Repo, remote: str, ref: bytes, sha: bytes | None) -> None:
    """Remember that ``remote`` keeps ``ref`` at ``sha`` as it refused to delete it (None: forget it)."""
    marker = _kept_marker(remote, ref)
    unless_held(functools.partial(repo.refs.remove_if_equals, marker, None) if sha is None  # another gs writes it
                else functools.partial(repo.refs.set_if_equals, marker, None, ObjectID(sha)))


def settle(repo: Repo, remote: str, sides: Sides, into: PushReport | None = None) -> None:
    """Move the sync base of every ref both sides now agree on to that commit.

    A ref on neither side leaves the base; a ref the sides still differ on keeps its base,
    so a step that had to wait (a live writer, a refusal) is decided the same way next time.
    A base another process holds locked (another ``gs`` syncing with the same remote is
    moving it) stays as it was, to be settled next time: such refs go in ``into.moved``
    (a push: the sync runs another round).
    """
    locked: list[bytes] = []
    for ref in sides.refs():
        local, remote_sha, base = sides.local.get(ref), sides.remote.get(ref), sides.base.get(ref)
        if local != remote_sha or local == base:
            continue
        tracking = _tracking(remote, ref)
        if not unless_held(functools.partial(repo.refs.remove_if_equals, tracking, None) if local is None
                           else functools.partial(repo.refs.set_if_equals, tracking, None, ObjectID(local))):
            locked.append(ref)
        elif local is None:
            sides.base.pop(ref, None)
        else:
            sides.base[ref] = local
    if into is not None:
        into.moved += [label(ref) for ref in locked if label(ref) not in into.moved]


def plan_push(repo: Repo, sides: Sides, into: PushReport, kept: Mapping[bytes, bytes] | None = None
              ) -> tuple[dict[bytes, bytes], dict[bytes, tuple[bytes, bytes]], Sides]:
    """Plan a push: what to send, what to drop or replace there; count the rest into ``into``.

    Args:
        repo: the local repository.
        sides: the local session refs, the base and the remote's (as advertised or fetched).
        kept: refs the remote refused to delete (:func:`load_kept`): not dropped while they
            are still at that commit there.
        into: gets ``unchanged``, ``diverged``, ``behind`` (newer or gone there: the pull's to do)
            and ``failed`` (an id that differs only by case from one there).

    Returns:
        ``(ref -> local commit to send, ref -> (its commit there, what it becomes: ZERO_SHA
        to drop it), sides)``: the second map goes in a request of its own once the refs that
        keep its commits there are accepted.
    """
    sends: dict[bytes, bytes] = {}
    later: dict[bytes, tuple[bytes, bytes]] = {}
    steps = {ref: sides.step(repo, ref) for ref in sides.refs()}
    # ids may not differ only by case; one that goes there (renamed by case here) may
    folded = {ref.lower(): ref for ref in sides.remote if steps[ref] is not Step.DROP_THERE}
    for ref, step in steps.items():
        local, remote = sides.local.get(ref), sides.remote.get(ref)
        if step is Step.SAME:
            into.unchanged += local is not None
        elif step is Step.SEND and remote is None and ref.lower() in folded:
            into.failed.append((ref.decode("utf-8", "replace"), f"the remote has {label(folded[ref.lower()])}, "
                                "which differs only by case; rename one of them"))
        elif step is Step.SEND and remote is not None and not can_fast_forward(repo, ObjectID(remote),
                                                                               ObjectID(local or b"")):
            later[ref] = (remote, sides.local[ref])  # the name used again here: replaced there
        elif step is Step.SEND:
            sends[ref] = sides.local[ref]
        elif step is Step.DROP_THERE and kept is not None and kept.get(ref) == remote:
            into.unchanged += 1  # the remote refuses deletions: it keeps the old name
        elif step is Step.DROP_THERE:
            later[ref] = (sides.remote[ref], ZERO_SHA)
        elif step is Step.DIVERGED:
            into.diverged.append(label(ref))
        elif local is not None:
            into.behind.append(label(ref))
    return sends, later, sides
