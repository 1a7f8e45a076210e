"""What sync reports (see :mod:`.remotes`): per session ref, what a pull, a push or a sync did.

Apart from :mod:`.values`, so that what opens a session (the chat before its first prompt)
does not build these classes: only the sync commands use them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TypedDict


class Credentials(TypedDict, total=False):
    """What the caller knows about reaching remotes (the CLI reads it from the environment).

    Attributes:
        username, password: HTTP credentials (else ``~/.git-credentials`` is consulted).
        ssh_command: the ssh program and options (else ``core.sshCommand``, else ``ssh``).
        timeout: seconds a remote may stay silent before a request to it fails.
    """

    username: str | None
    password: str | None
    ssh_command: str | None
    timeout: float


@dataclass
class PullReport:
    """What a pull did, per session ref (the rule: README "Sync", :mod:`.sync`).

    Attributes:
        created: sessions new here (``archive/<name>`` for an archived one).
        fast_forwarded: ``(id, old commit, new commit)`` (``archive/<name>`` for an archived one).
        forks: ``(id, fork id, local commit)``: the session diverged; the remote's side kept
            the name and the local turns are in the fork.
        made_twice: ids of ``forks`` whose two sides share no save: the id was made on both
            machines (not a divergence of one session).
        came_back: ``(id, kept in)``: created here from the remote, though renamed or archived
            here (into ``kept in``) since the base: it gained turns there, so both are kept.
        beside: ``(id, old id)``: created here, ``old id`` renamed there, while ``old id``
            gained turns here (those stay in ``old id``): both are kept.
        dropped: ``(ref, kept in)``: renamed, archived or restored on the other side, so the
            ref went here too; ``kept in`` is the ref that holds its commits now.
        deferred: ``(id, why)``: not moved because a live writer holds it or a crashed turn
            waits in its journal; the next sync does it.
        failed: ``(id, why)``: could not be synced (an id clash...).
        skipped: ``(ref, why)``: the remote's refs that are no sessions.
        unchanged: session refs already up to date (or ahead here).
    """

    created: list[str] = field(default_factory=list)
    fast_forwarded: list[tuple[str, str, str]] = field(default_factory=list)
    forks: list[tuple[str, str, str]] = field(default_factory=list)
    made_twice: list[str] = field(default_factory=list)
    came_back: list[tuple[str, str]] = field(default_factory=list)
    beside: list[tuple[str, str]] = field(default_factory=list)
    dropped: list[tuple[str, str]] = field(default_factory=list)
    deferred: list[tuple[str, str]] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    unchanged: int = 0

    def changed(self) -> bool:
        """True when the pull moved a session ref, or has one to report (strangers aside)."""
        return bool(self.created or self.fast_forwarded or self.forks or self.dropped or self.deferred
                    or self.failed)


@dataclass
class PushReport:
    """What a push did, per session ref.

    Attributes:
        pushed: refs sent (created or fast-forwarded there).
        deleted: ``(ref, kept in)``: refs removed there because they were renamed, archived or
            restored here; ``kept in`` holds their commits on the remote.
        unchanged: refs the remote has as here.
        behind: refs the remote has newer saves of (a pull brings them; no failure).
        diverged: refs both sides gained saves of (a pull or sync resolves them).
        moved: refs the remote changed since the fetch this push was planned on (sync runs
            another round).
        failed: ``(ref, why)``: refused, in the server's words.
        kept_there: ``(ref, kept in)``: refs renamed, archived or restored here that the remote
            refused to delete (``receive.denyDeletes``): the old name stays there, its saves
            are in ``kept in``; a sync does not ask again while the ref stays as it is there.
        skipped: ``(ref, why)``: local refs that are no sessions.
        connected: whether a push connection was opened at all.
        others_there: session refs the remote held outside the ones pushed (``only=``): a
            share to a repository that is not empty.
        created_there: the bare repository this push made first (a local path not there yet).
    """

    pushed: list[str] = field(default_factory=list)
    deleted: list[tuple[str, str]] = field(default_factory=list)
    unchanged: int = 0
    behind: list[str] = field(default_factory=list)
    diverged: list[str] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)
    failed: list[tuple[str, str]] = field(default_factory=list)
    kept_there: list[tuple[str, str]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    connected: bool = False
    others_there: int = 0
    created_there: Path | None = None


@dataclass
class SyncReport:
    """What ``sync`` did: every round's pull and push, merged (a line is reported once).

    Attributes:
        pull: the pulls of all rounds.
        push: the pushes of all rounds.
        rounds: how many pull+push rounds ran (more than one when the remote moved meanwhile).
    """

    pull: PullReport = field(default_factory=PullReport)
    push: PushReport = field(default_factory=PushReport)
    rounds: int = 0

    @property
    def ok(self) -> bool:
        """True when everything was synced or deferred for a live writer (exit status 0)."""
        return not (self.pull.failed or self.push.failed)

    def add(self, pull: PullReport, push: PushReport) -> None:
        """Merge one round: what was done adds up; what waits or was counted is the last round's."""
        self.rounds += 1
        mine, theirs = self.pull, pull
        mine.created += theirs.created
        mine.fast_forwarded += theirs.fast_forwarded
        mine.forks += theirs.forks
        mine.made_twice += theirs.made_twice
        mine.came_back += theirs.came_back
        mine.beside += theirs.beside
        mine.dropped += theirs.dropped
        mine.deferred, mine.skipped, mine.unchanged = theirs.deferred, theirs.skipped, theirs.unchanged
        self.push.pushed += push.pushed
        self.push.deleted += push.deleted
        self.push.kept_there += push.kept_there
        self.push.behind, self.push.diverged, self.push.moved = push.behind, push.diverged, push.moved
        self.push.skipped, self.push.unchanged = push.skipped, push.unchanged
        self.push.connected = self.push.connected or push.connected
        # a ref refused again in a later round is reported once, with the latest words
        for report, more in ((self.pull, pull.failed), (self.push, push.failed)):
            report.failed = list({**dict(report.failed), **dict(more)}.items())
