"""Publishing one session to a separate git remote (``gs share``), without the rest of the archive.

The session is pushed (:meth:`.Remotes.push` with ``only=``) from a throwaway repository
that borrows this one's objects (git's alternates) and holds one ref, ``refs/heads/<id>`` at
the shared commit: what leaves is that commit and its ancestors (the history it was forked
from included), whatever else the archive holds. A past revision (``work~2``) is shared
under its session's id, pointing at that commit.

URLs shared to are remembered in the repo's config, one section per URL with a line per
session sent there (``[gs-share "<url>"] session = work``), so that only the first share to
a URL asks. What is stored is already redacted; nothing here reads or changes the text.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from dulwich.objects import ObjectID
from dulwich.pack import write_pack_data
from dulwich.refs import Ref

from ...ids import CommitId, SessionId
from ...log.transcript import title_of
from ...log.turns import turn_count
from ..faults import writes_to
from ..git import GitStore
from ..shared import write_config
from ..values import Revision
from .remotes import Remotes
from .reports import PushReport
from .urls import repository_key

#: The repo config section (with the URL as subsection) that remembers where sessions were shared.
SECTION = b"gs-share"


@dataclass(frozen=True)
class ShareOffer:
    """What ``gs share`` is about to send, for the user to agree to.

    Attributes:
        session_id: the session, and the name of the branch on the remote.
        commit: the commit the remote branch will point at.
        title: the session's title at that commit.
        turns: turns in the session at that commit.
        saves: commits sent (the session's history back to its first save).
        pack_bytes: the size of the pack an empty repository receives, bytes (git objects,
            compressed; a remote that holds some of them already gets less).
        forked_from: the sessions whose saves are part of that history (it was forked from
            them), as their ``Forked-From`` trailers name them, the one it left first (its
            parent, then its parent's parent...).
    """

    session_id: SessionId
    commit: CommitId
    title: str
    turns: int
    saves: int
    pack_bytes: int
    forked_from: list[str]


def describe(store: GitStore, revision: Revision) -> ShareOffer:
    """Say what sharing ``revision`` sends.

    Args:
        store: the session store.
        revision: the revision to share (its session at its commit).

    Returns:
        The :class:`ShareOffer`.

    Raises:
        CorruptSession, UnsupportedVersion: the log at that commit cannot be read.
    """
    sid, commit = revision.session_id, revision.commit
    events = store.load(sid, commit).events
    saves, others, lineages = 0, list[str](), set()
    for info in store.first_parents(commit):
        saves += 1
        # the Forked-From chain, not the Session trailers: a renamed session's saves carry its old name
        lineage = info.message.fields.forked_from
        if lineage is not None and lineage.commit not in lineages:
            lineages.add(lineage.commit)
            others.append(lineage.session_id)
    repo = store.repo()
    assert repo is not None
    count, records = repo.generate_pack_data(set(), {ObjectID(commit.encode())})
    size = 0

    def counted(chunk: bytes) -> None:
        nonlocal size
        size += len(chunk)

    write_pack_data(counted, records, repo.object_format, num_records=count)
    return ShareOffer(sid, commit, title_of(events), turn_count(events), saves, size, others)


def _key(url: str) -> bytes:
    """The URL as remembered: its :func:`~.urls.repository_key` (the same repository, however reached)."""
    return repository_key(url).encode("utf-8")


def shared_before(store: GitStore, url: str) -> bool:
    """Return True when a session of ``store`` was shared to ``url`` before (user and password in it ignored)."""
    repo = store.repo()
    return repo is not None and repo.get_config().has_section((SECTION, _key(url)))


@writes_to(lambda store, *args, **kwargs: store.path)
def remember(store: GitStore, url: str, session_id: str) -> None:
    """Record in the repo config that ``session_id`` was shared to ``url`` (never its credentials)."""
    repo = store.repo()
    assert repo is not None
    config = repo.get_config()
    section = (SECTION, _key(url))
    try:
        known = list(config.get_multivar(section, b"session"))
    except KeyError:
        known = []
    if session_id.encode() not in known:
        config.add(section, b"session", session_id.encode())
        write_config(repo, config)


def share(store: GitStore, revision: Revision, url: str, *, username: str | None = None,
          password: str | None = None, ssh_command: str | None = None, timeout: float | None = None) -> PushReport:
    """Push ``revision`` alone to ``url``, as the branch of its session id.

    Args:
        store: the session store.
        revision: the session and commit to publish.
        url: a git URL or path (an empty repository, a gist, or one shared to before).
        username: HTTP user name (see :class:`.Remotes`).
        password: HTTP password (else ``~/.git-credentials`` is consulted).
        ssh_command: the ssh program and options (else ``core.sshCommand``, else ``ssh``).
        timeout: seconds the remote may stay silent (see :class:`.Remotes`).

    Returns:
        The push's report: the ref pushed, or why not (the remote's branch of that name
        holds saves the commit does not contain: not a fast-forward).

    Raises:
        RemoteError: unreachable, not a git repository, refused as a whole.
    """
    repo = store.repo()
    assert repo is not None
    scratch = Path(tempfile.mkdtemp(prefix="gs-share-"))
    try:
        one = scratch / "repo.git"
        with GitStore(one, identity=store.identity.decode("utf-8", "replace")) as view:
            borrowed = view.repo(create=True)
            assert borrowed is not None
            # this repo's remote settings (core.sshCommand, http.*) apply to the push as well
            shutil.copyfile(Path(repo.controldir()) / "config", one / "config")
            borrowed.object_store.add_alternate_path(repo.object_store.path)
            view.close()
            view.update_ref(Ref(b"refs/heads/" + revision.session_id.encode()), None, revision.commit, "share")
            remotes = Remotes(view, username=username, password=password, ssh_command=ssh_command,
                              timeout=timeout)
            report = remotes.push(url, only={revision.session_id})
            if report.diverged:  # their tip is unknown here: fetched, it may hold this commit (nothing to send)
                _behind_or_diverged(view, remotes, url, revision, report)
            return report
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _behind_or_diverged(view: GitStore, remotes: Remotes, url: str, revision: Revision, report: PushReport) -> None:
    """Tell a remote that continued the session from one that also lacks saves of it: fetch its tip and look.

    A push cannot tell: the remote's tip is a commit this repository never saw. When it
    holds ``revision``'s commit, the remote is ahead and there is nothing to send, moved
    from ``report.diverged`` to ``report.behind``. The objects fetched stay in ``view``,
    the throwaway repository (the archive here is not changed).

    Raises:
        RemoteError: the remote cannot be read.
    """
    from dulwich.graph import can_fast_forward

    from .sync import label

    ref = b"refs/heads/" + revision.session_id.encode()
    theirs = remotes.fetch(url).get(ref)
    repo = view.repo()
    if theirs is None or repo is None or ObjectID(theirs) not in repo.object_store:
        return
    if can_fast_forward(repo, ObjectID(revision.commit.encode()), ObjectID(theirs)):
        name = label(ref)
        report.diverged[:] = [r for r in report.diverged if r != name]
        report.behind.append(name)
