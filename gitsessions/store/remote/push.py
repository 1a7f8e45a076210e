"""The steps of a push that move refs there, by the sync rule of :mod:`.sync`.

A push is planned on the refs the remote advertises (the rule of :func:`.sync.plan_push`),
sends what it lacks in one request, and drops what moved here (a rename, an archive or a
restore) in a second, once the refs that keep those commits there are accepted. The sync
base then moves to what both sides agree on (:func:`.sync.settle`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dulwich.objects import ZERO_SHA
from dulwich.repo import Repo

from ..thinpack import PushPack
from .reports import PushReport
from .sync import Sides, holder, keep_there, label, load_kept, named_like_a_session, plan_push, settle
from .transport import Outcome, accepted, one_by_one, refuses_deletions, request


class Push:
    """One push of the session refs ``mine`` to a remote, reported as it goes.

    Args:
        repo: the local repository.
        name: the remote's configured name (None: a URL, which has no sync base).
        mine: the session refs here the push is about: ref -> commit.
        base: the sync base of those refs (empty without ``name``).
        in_scope: whether a ref is one the push is about (``gs push --only``).
        known: the remote's refs just fetched (a sync), or None (``gs push``).
        report: gets what was done.
    """

    def __init__(self, repo: Repo, name: str | None, mine: dict[bytes, bytes], base: dict[bytes, bytes],
                 in_scope: Callable[[bytes], bool], known: dict[bytes, bytes] | None, report: PushReport):
        self.repo, self.name, self.mine, self.base = repo, name, mine, base
        self.in_scope = in_scope
        self.known = known
        self.report = report
        # A sync does not ask again to delete what the remote refused to (gs push does).
        self.kept = load_kept(repo, name, self.named(known)) if name and known is not None else None
        self.sent: dict[bytes, bytes] = {}
        self.to_drop: dict[bytes, tuple[bytes, bytes]] = {}
        self.dropping: dict[bytes, bytes] = {}  # ref -> the ref that keeps its commit there
        self.after: dict[bytes, bytes] = {}  # the remote's session refs once this push is done

    def named(self, refs: dict[bytes, bytes], scoped: bool = True) -> dict[bytes, bytes]:
        """The session refs of ``refs`` (strangers are left untouched), in scope unless not ``scoped``."""
        return {r: s for r, s in refs.items()
                if named_like_a_session(r) and (self.in_scope(r) or not scoped) and s != ZERO_SHA}

    def plan(self, advertised: dict[bytes, bytes], into: PushReport) -> tuple[dict, dict, Sides]:
        """Plan the push on the remote's refs ``advertised`` (see :func:`.sync.plan_push`)."""
        return plan_push(self.repo, Sides(dict(self.mine), self.base, self.named(advertised)), into, self.kept)

    def decided(self) -> PushReport | None:
        """The report of a push with nothing to send or drop by the refs just fetched (no connection), else None."""
        assert self.known is not None
        dry = PushReport(skipped=self.report.skipped)
        sends, drops, sides = self.plan(self.known, dry)
        if sends or drops:
            return None
        if self.name:
            settle(self.repo, self.name, sides, dry)
        return dry

    def run(self, url: str, client: Any, path: str) -> PushReport:
        """Send, then drop, then settle the sync base; return the report.

        Raises:
            RemoteError: unreachable or refused as a whole.
        """
        pack_data = PushPack(self.repo, client)  # what the remote lacks; new saves as deltas on its blobs
        self.report.connected = True
        outcome = request(url, client, path, self.update_refs, pack_data, self.sent)
        one_by_one(url, client, path, pack_data, outcome, self.sent, advertised=self.after)  # as yet
        self._took(outcome)
        if self.to_drop:
            self._dropped(request(url, client, path, self.drop_refs, pack_data, self.dropping))
        if self.name:
            settle(self.repo, self.name, Sides(self.mine, self.base,
                                               {r: s for r, s in self.after.items() if s != ZERO_SHA}), self.report)
        return self.report

    # The callbacks return only the refs to change: dulwich's local client would otherwise
    # rewrite (and lock) every ref of the remote, racing any other gs.

    def update_refs(self, remote_refs: dict[bytes, bytes]) -> dict[bytes, bytes]:
        """Dulwich's callback of the first request: the refs to send, planned on what the remote has now."""
        sends, drops, sides = self.plan(remote_refs, self.report)
        self.report.others_there = len(self.named(remote_refs, scoped=False)) - len(sides.remote)
        if self.known is not None:  # what changed there since the fetch waits for the next round
            fetched = self.named(self.known)
            moved = {r for r in set(sides.remote) | set(fetched) if sides.remote.get(r) != fetched.get(r)}
            self.report.moved = sorted(label(r) for r in moved)
            sends = {r: s for r, s in sends.items() if r not in moved}
            drops = {r: s for r, s in drops.items() if r not in moved}
        self.sent.update(sends)
        self.to_drop.update(drops)
        self.after.update(sides.remote)
        return dict(sends)

    def drop_refs(self, remote_refs: dict[bytes, bytes]) -> dict[bytes, bytes]:
        """Dulwich's callback of the second request: the drops whose ref and keeper are as planned there."""
        new_refs: dict[bytes, bytes] = {}
        theirs = self.named(remote_refs, scoped=False)
        for ref, (old, new) in sorted(self.to_drop.items()):
            if theirs.get(ref) != old:  # compare-and-swap on the base: it moved there
                self.report.moved.append(label(ref))
            elif (keeper := holder(self.repo, old, theirs, ref)) is not None:  # else its keeper was refused
                new_refs[ref] = new
                self.dropping[ref] = keeper
        return new_refs

    def _took(self, outcome: Outcome) -> None:
        """Report the refs the first request sent that the remote took."""
        for ref, sha in self.sent.items():  # session ref names: plain ASCII
            if accepted(ref, outcome, self.report):
                self.report.pushed.append(ref.decode())
                self.after[ref] = sha

    def _dropped(self, outcome: Outcome) -> None:
        """Report what became of the drops: deleted, kept there (the remote refuses deletions), or replaced."""
        for ref, keeper in self.dropping.items():
            if self.name and refuses_deletions(outcome[ref][0]):
                self.report.kept_there.append((ref.decode(), keeper.decode()))
                keep_there(self.repo, self.name, ref, self.to_drop[ref][0])
            elif accepted(ref, outcome, self.report):
                self.after[ref] = self.to_drop[ref][1]
                if self.after[ref] == ZERO_SHA:
                    self.report.deleted.append((ref.decode(), keeper.decode()))
                    if self.name:
                        keep_there(self.repo, self.name, ref, None)
                else:  # the name used again here
                    self.report.pushed.append(ref.decode())
