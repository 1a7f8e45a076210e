"""The sync rule, written once (design.md "Sync"; the README's "Sync" says it in user words).

Per remote, the repo keeps the *sync base*: for each session ref, what the remote held when
both sides last agreed on it, as tracking refs ``refs/remotes/<remote>/heads/<id>`` and
``refs/remotes/<remote>/archive/<id>``. Every session ref X is decided by :func:`decide` from
its local tip L, its base O and the remote's tip R:

- L == R: nothing. Only one side has X and no base: new there, it is copied over.
- A fast-forward either way: the side behind moves (a pull here, a push there).
- Diverged: the remote's side keeps the name (it reached the remote first); the local side
  becomes the fork ``<id>-<short L>`` (:func:`~gitsessions.rules.pull_fork_name`) and X here
  moves to R; the push then sends the fork.
- Gone on one side (a rename, an archive, a restore): the other side drops X too when it
  still has X at the base and X's commit is kept by another synced ref; a side that gained
  turns since the base keeps X live and sends it again. Nothing unreachable is deleted.

A pull carries out the steps that move refs here (:func:`pull_steps`); a push the ones that
move the remote's (:mod:`.remote`). A ref of a session a live writer holds, or whose journal
holds a turn a crashed ``gs`` left, is not moved: it waits for the next sync.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dulwich.graph import can_fast_forward, find_merge_base
from dulwich.objects import Commit, ObjectID, Tree
from dulwich.refs import Ref
from dulwich.repo import Repo

from ..errors import CorruptSession, GitSessionsError, UnsupportedVersion
from ..rules import SESSION_ID_RE, CommitId, Lineage, SessionId, commit_message, pull_fork_name
from .faults import writes_to
from .git import SESSION_FILE, GitStore
from .values import PullReport

HEADS = b"refs/heads/"
ARCHIVE = b"refs/archive/"
#: The namespaces sync exchanges: live and archived sessions.
SYNCED = (HEADS, ARCHIVE)
_HEAD = Ref(b"HEAD")


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
    return Step.DIVERGED


def not_a_session(repo: Repo, ref: bytes, sha: bytes) -> str | None:
    """Why ``ref`` (at ``sha``) is no session ref to sync (design.md "Sync"), or None when it is one."""
    name = ref.split(b"/", 2)[2].decode("utf-8", "replace")
    if not SESSION_ID_RE.match(name) or name.upper() == "HEAD":
        return "not a session id"
    try:
        commit = repo[ObjectID(sha)]
        tree = repo[commit.tree] if isinstance(commit, Commit) else None
    except KeyError:
        return "its commit is missing"
    if not isinstance(tree, Tree) or SESSION_FILE not in tree:
        return f"no {SESSION_FILE.decode()} in its tree"
    return None


def session_refs(repo: Repo, refs: Mapping[Any, bytes]) -> tuple[dict[bytes, bytes], list[tuple[str, str]]]:
    """Split ``refs`` into the session refs under ``refs/heads/`` and ``refs/archive/`` and the rest.

    Returns:
        ``(session refs, [(ref name, why it is none)])``; refs outside both namespaces are left out.
    """
    kept: dict[bytes, bytes] = {}
    skipped: list[tuple[str, str]] = []
    for ref, sha in sorted(refs.items()):
        if not ref.startswith(SYNCED):
            continue
        why = not_a_session(repo, ref, sha)
        if why is None:
            kept[ref] = sha
        else:
            skipped.append((ref.decode("utf-8", "replace"), why))
    return kept, skipped


def label(ref: bytes) -> str:
    """How messages name a session ref: ``<id>``, or ``archive/<name>``."""
    return ref.decode("utf-8", "replace").removeprefix("refs/heads/").removeprefix("refs/")


def holder(repo: Repo, sha: bytes, tips: Mapping[bytes, bytes], but: bytes) -> bytes | None:
    """Return a ref of ``tips`` other than ``but`` whose history holds commit ``sha``, else None.

    A rename, an archive and a restore keep the very commit, so exact tips are tried first.
    """
    others = sorted((ref, tip) for ref, tip in tips.items() if ref != but)
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
        if remote is not None and ObjectID(remote) not in repo.object_store:
            return Step.TAKE if local is None else Step.DIVERGED

        def contains(a: bytes, b: bytes) -> bool:
            return can_fast_forward(repo, ObjectID(a), ObjectID(b))

        return decide(local, self.base.get(ref), remote, contains=contains,
                      kept_here=lambda sha: holder(repo, sha, self.local, ref) is not None,
                      kept_there=lambda sha: holder(repo, sha, self.remote, ref) is not None)


# -- the sync base -----------------------------------------------------------------------------


def _tracking(remote: str, ref: bytes) -> Ref:
    return Ref(b"refs/remotes/" + remote.encode() + b"/" + ref[len(b"refs/"):])


def load_base(repo: Repo, remote: str) -> dict[bytes, bytes]:
    """Return the sync base of ``remote`` (ref -> commit); old-style ``refs/remotes/<remote>/<id>`` go.

    Those were written by every fetch before the base existed (``<id>`` may also be
    ``heads`` or ``archive``, a name the new layout needs as a folder), so they are removed.
    """
    prefix = b"refs/remotes/" + remote.encode() + b"/"
    base: dict[bytes, bytes] = {}
    for rest in list(repo.refs.keys(base=Ref(prefix))):
        if rest.startswith((b"heads/", b"archive/")):
            sha = repo.refs.read_ref(Ref(prefix + rest))
            if sha and not sha.startswith(b"ref: "):
                base[b"refs/" + rest] = sha
        elif SESSION_ID_RE.match(rest.decode("utf-8", "replace")):
            repo.refs.remove_if_equals(Ref(prefix + rest), None)
    return base


def settle(repo: Repo, remote: str, sides: Sides, refs: list[bytes] | None = None) -> None:
    """Move the sync base of every ref (of ``refs``) both sides now agree on to that commit.

    A ref on neither side leaves the base; a ref the sides still differ on keeps its base,
    so a step that had to wait (a live writer, a refusal) is decided the same way next time.
    """
    for ref in sides.refs() if refs is None else refs:
        local, remote_sha, base = sides.local.get(ref), sides.remote.get(ref), sides.base.get(ref)
        if local != remote_sha or local == base:
            continue
        if local is None:
            repo.refs.remove_if_equals(_tracking(remote, ref), None)
            sides.base.pop(ref, None)
        else:
            repo.refs.set_if_equals(_tracking(remote, ref), None, ObjectID(local))
            sides.base[ref] = local


# -- the steps of a pull -----------------------------------------------------------------------


class _Free:
    """The lock of a ref no writer holds (archived sessions have no writer)."""

    def release(self) -> None:
        """Nothing to release."""


def _claim(store: GitStore, ref: bytes, report: PullReport):
    """Take the writer lock of the session ``ref`` names, or report why it waits (then None)."""
    if not ref.startswith(HEADS):
        return _Free()
    sid = label(ref)
    lock = store.lock(sid)
    if not lock.try_acquire():
        report.deferred.append((sid, f"will sync after the gs process writing it ends (it is {lock.holder()})"))
        return None
    if store.journal(sid).exists():
        lock.release()
        report.deferred.append((sid, "will sync after the turn a stopped gs left in its journal is saved "
                                     f"(gs show {sid} saves it)"))
        return None
    return lock


class _Pull:
    """The steps of one pull that move refs here, reported as they go."""

    def __init__(self, store: GitStore, sides: Sides, where: str):
        self.store, self.sides, self.where = store, sides, where
        repo = store.repo()
        assert repo is not None
        self.repo = repo
        self.report = PullReport()

    def _clash(self, ref: bytes) -> str | None:
        """The local id or archive name that ``ref``'s name equals but for case, if any."""
        name = label(ref).removeprefix("archive/")
        names = self.store.archived_ids() if ref.startswith(ARCHIVE) else self.store.session_ids()
        return next((n for n in names if n.casefold() == name.casefold() and n != name), None)

    def take(self, ref: bytes) -> None:
        old, new = self.sides.local.get(ref), self.sides.remote[ref]
        what = label(ref)
        if old is None and (clash := self._clash(ref)) is not None:
            self.report.failed.append((what, f"{self.where} has {what}, which differs only by case from {clash} "
                                             "here; rename one of them"))
            return
        lock = _claim(self.store, ref, self.report)
        if lock is None:
            return
        try:
            how = "new from" if old is None else "fast-forward from"
            if not self.store.update_ref(Ref(ref), old.decode() if old else None, new.decode(),
                                         f"sync: {how} {self.where}"):
                self.report.deferred.append((what, "it moved during the sync; sync again"))
                return
        finally:
            lock.release()
        self.sides.local[ref] = new
        if old is None:
            self.report.created.append(what)
        else:
            self.report.fast_forwarded.append((what, old.decode(), new.decode()))

    def diverged(self, ref: bytes) -> None:
        mine, theirs = self.sides.local[ref], self.sides.remote[ref]
        name, archived = label(ref).removeprefix("archive/"), ref.startswith(ARCHIVE)
        lock = _claim(self.store, ref, self.report)
        if lock is None:
            return
        try:
            fork = pull_fork_name(self.store, name, mine.decode(), holds=lambda taker: self._holds(taker, mine))
            fork_ref = (ARCHIVE if archived else HEADS) + fork.encode()
            if fork_ref not in self.sides.local:
                self._fork(name, fork, fork_ref, mine, theirs)
            if not self.store.update_ref(Ref(ref), mine.decode(), theirs.decode(),
                                         f"sync: diverged; {self.where}'s side keeps {name}, this side is {fork}"):
                self.report.deferred.append((label(ref), "it moved during the sync; sync again"))
                return
        except GitSessionsError as exc:  # a commit hook refused the fork, the disk is full...
            self.report.failed.append((label(ref), f"diverged, and its fork could not be made: {exc}"))
            return
        finally:
            lock.release()
        self.sides.local[ref] = theirs
        self.report.forks.append((label(ref), label(fork_ref), mine.decode()))

    def _holds(self, taker: str, mine: bytes) -> bool:
        """True when the session or archive ``taker`` names already holds commit ``mine`` (an earlier fork)."""
        ref = ARCHIVE + taker[len("archive/"):].encode() if taker.startswith("archive/") else HEADS + taker.encode()
        tip = self.sides.local.get(ref)
        return tip is not None and can_fast_forward(self.repo, ObjectID(mine), ObjectID(tip))

    def _fork(self, name: str, fork: SessionId, fork_ref: bytes, mine: bytes, theirs: bytes) -> None:
        if fork_ref.startswith(ARCHIVE):  # an archived side stays archived: a ref, no new commit
            self.store.update_ref(Ref(fork_ref), None, mine.decode(), f"sync: diverged from archive/{name}")
            self.sides.local[fork_ref] = mine
            return
        try:
            events = self.store.load(name, mine.decode()).events
        except (CorruptSession, UnsupportedVersion):
            events = []  # still kept: gs list flags the damaged log
        bases = find_merge_base(self.repo, [ObjectID(mine), ObjectID(theirs)])
        # Unrelated histories (the same id made on two machines) have no common commit:
        # the fork then names the commit it sits on.
        at = CommitId((bases[0] if bases else mine).decode())
        message = commit_message(fork, events, kind="fork", lineage=Lineage(SessionId(name), at), why="diverged")
        self.sides.local[fork_ref] = self.store.branch_from(fork, mine.decode(), message).encode()

    def drop(self, ref: bytes) -> None:
        sha = self.sides.local[ref]
        keeper = holder(self.repo, sha, self.sides.local, ref)
        if keeper is None:  # what keeps it there did not arrive here (reported): keep it
            return
        lock = _claim(self.store, ref, self.report)
        if lock is None:
            return
        try:
            if not self.repo.refs.remove_if_equals(Ref(ref), ObjectID(sha)):
                self.report.deferred.append((label(ref), "it moved during the sync; sync again"))
                return
            if self.repo.refs.read_ref(_HEAD) == b"ref: " + ref and keeper.startswith(HEADS):
                self.repo.refs.set_symbolic_ref(_HEAD, Ref(keeper))  # the current session, renamed there
        finally:
            lock.release()
        del self.sides.local[ref]
        self.report.dropped.append((label(ref), label(keeper)))


@writes_to(lambda store, *args, **kwargs: store.path)
def pull_steps(store: GitStore, sides: Sides, where: str) -> PullReport:
    """Carry out every step that moves a ref here; ``sides.local`` follows what was done.

    Takes and divergences come first: they make the refs that keep what a drop removes.

    Args:
        store: the session store.
        sides: the refs of both sides and the base (``local`` is updated).
        where: how messages name the remote.

    Returns:
        What was done, deferred or refused.

    Raises:
        DiskFull, RepoReadOnly: the repo cannot be written (see :mod:`.faults`).
    """
    pull = _Pull(store, sides, where)
    steps = {ref: sides.step(pull.repo, ref) for ref in sides.refs()}
    for ref, step in steps.items():
        if step is Step.TAKE:
            pull.take(ref)
        elif step is Step.DIVERGED:
            pull.diverged(ref)
        elif step is Step.SAME:
            pull.report.unchanged += 1
    for ref, step in steps.items():
        if step is Step.DROP_HERE:
            pull.drop(ref)
    return pull.report
