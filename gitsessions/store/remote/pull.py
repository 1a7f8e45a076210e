"""The steps of a pull that move refs here, by the sync rule of :mod:`.sync`.

Takes (a new session, a fast-forward) and divergences (the local side becomes a fork, the
name moves to the remote's tip) come first, then drops (renamed, archived or restored
there). A session ref moves only under its writer lock and without an orphaned journal;
otherwise it waits for the next sync, reported.
"""

from __future__ import annotations

from dulwich.graph import can_fast_forward, find_merge_base
from dulwich.objects import ObjectID
from dulwich.refs import Ref

from ...errors import CorruptSession, GitSessionsError, UnsupportedVersion
from ...ids import CommitId, SessionId, pull_fork_name
from ...log.commits import Lineage, commit_message
from ..faults import writes_to
from ..git import GitStore
from .reports import PullReport
from .sync import ARCHIVE, HEADS, Sides, Step, holder, label


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
        report.deferred.append((sid, f"will sync after the gs process writing it ends: {lock.holder()}"))
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
        #: namespace -> casefolded name -> the names here folding to it: read once, kept up as refs move
        self._names: dict[bytes, dict[str, set[str]]] = {}

    def _folded(self, ref: bytes) -> tuple[set[str], str]:
        """The names here of ``ref``'s namespace that fold to its name, and that name."""
        space, name = (ARCHIVE, label(ref).removeprefix("archive/")) if ref.startswith(ARCHIVE) else (HEADS, label(ref))
        if space not in self._names:
            folded: dict[str, set[str]] = {}
            for n in self.store.archived_ids() if space == ARCHIVE else self.store.session_ids():
                folded.setdefault(n.casefold(), set()).add(n)
            self._names[space] = folded
        return self._names[space].setdefault(name.casefold(), set()), name

    def _clash(self, ref: bytes) -> str | None:
        """The local id or archive name that ``ref``'s name equals but for case, if any."""
        names, name = self._folded(ref)
        return min(names - {name}, default=None)

    def _moved(self, made: bytes | None = None, gone: bytes | None = None) -> None:
        """Note a session ref made here and one removed, for the clash checks that follow."""
        if made is not None:
            names, name = self._folded(made)
            names.add(name)
        if gone is not None:
            names, name = self._folded(gone)
            names.discard(name)

    def take(self, ref: bytes, steps: dict[bytes, Step]) -> None:
        old, new = self.sides.local.get(ref), self.sides.remote[ref]
        what = label(ref)
        if old is None and (clash := self._clash(ref)) is not None:
            other = ref[: -len(clash)] + clash.encode()
            if steps.get(other) is Step.DROP_HERE and self.sides.local[other] == new and ref.startswith(HEADS):
                self._recase(other, ref)  # renamed there by case only
                return
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
            self._moved(made=ref)
            self.report.created.append(what)
            self._beside(ref, new)
        else:
            self.report.fast_forwarded.append((what, old.decode(), new.decode()))

    def _beside(self, ref: bytes, new: bytes) -> None:
        """Note a session new here that sits beside a rename (or an archive), one side each.

        Here renamed (or archived) since the base while it gained turns there: the base's
        commit is some other ref's tip here. There renamed from a session that gained turns
        here: its tip was saved under the old id (its commit says so), which holds more here.
        """
        if not ref.startswith(HEADS):
            return
        base = self.sides.base.get(ref)
        if base is not None and base != new:
            keeper = next((r for r, tip in sorted(self.sides.local.items()) if tip == base and r != ref), None)
            if keeper is not None:
                self.report.came_back.append((label(ref), label(keeper)))
                return
        try:
            old_id = self.store.commit_info(new.decode()).message.fields.session
        except (KeyError, ValueError, GitSessionsError):
            return
        if not old_id or old_id == label(ref):
            return
        mine = self.sides.local.get(HEADS + old_id.encode())
        if mine is not None and mine != new and can_fast_forward(self.repo, ObjectID(new), ObjectID(mine)):
            self.report.beside.append((label(ref), old_id))

    def _recase(self, old: bytes, new: bytes) -> None:
        """Rename session ``old`` to ``new``, its name in another case, as the remote did."""
        lock = _claim(self.store, old, self.report)
        if lock is None:
            return
        try:
            self.store.rename(label(old), label(new))
        except GitSessionsError as exc:
            self.report.failed.append((label(old), f"could not be renamed to {label(new)} as on {self.where}: {exc}"))
            return
        finally:
            lock.release()
        self.sides.local[new] = self.sides.local.pop(old)
        self._moved(made=new, gone=old)
        self.report.dropped.append((label(old), label(new)))

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
                self._moved(made=fork_ref)
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
        if not bases:
            self.report.made_twice.append(name)
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
            if not self.store.remove_ref(Ref(ref), sha.decode(), renamed_to=Ref(keeper)):
                self.report.deferred.append((label(ref), "it moved during the sync; sync again"))
                return
        finally:
            lock.release()
        del self.sides.local[ref]
        self._moved(gone=ref)
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
            pull.take(ref, steps)
        elif step is Step.DIVERGED:
            pull.diverged(ref)
        elif step is Step.SAME:
            pull.report.unchanged += 1
    for ref, step in steps.items():
        if step is Step.DROP_HERE and ref in sides.local:  # (not renamed by case above)
            pull.drop(ref)
    return pull.report
