"""Backup and sync through any git remote, with dulwich's transports: the remotes, a pull, push and sync.

Remotes live in the repo config as git keeps them (``[remote "origin"] url = ...``), so
plain ``git push origin`` and ``git fetch origin`` work too. What a pull and a push do with
each session ref is the sync rule of :mod:`.sync`; this module connects and moves the
objects: a fetch of the remote's session refs, whose steps here are :mod:`.pull`'s, and a
push of explicit refspecs (dulwich rejects wildcards), whose steps there are :mod:`.push`'s:
in a second request once the refs that keep their commits are accepted, the deletions a
rename, an archive or a restore here asks for.

Credentials are never written to the config: a password in a URL is stripped when the
remote is added; HTTP credentials come from the caller (the CLI reads the environment) or
from ``~/.git-credentials``.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from typing import Any
from urllib.parse import urlsplit

from dulwich.refs import Ref
from dulwich.repo import Repo

from ...errors import RemoteError
from ..faults import writer_of, writes_to
from ..git import GitStore
from ..lock import SAME_SAVES, unless_same_pack
from ..shared import write_config
from .clients import DEFAULT_TIMEOUT_S, bad_host, connect, strip_password
from .new_remote import create_bare
from .pull import pull_steps
from .push import Push
from .reports import PullReport, PushReport, SyncReport
from .sync import (
    Sides,
    label,
    load_base,
    session_refs,
    settle,
    synced_refs,
    upgrade_refspecs,
    write_refspecs,
)
from .transport import fetch_sessions, session_refs_there
from .urls import dash_host, looks_like_url, remote_named

_REMOTE_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
#: Rounds of pull + push one sync runs at most while the remote keeps moving in between.
SYNC_ROUNDS = 3

__all__ = ["Remotes"]


class Remotes:
    """The remotes of one session store, and push/pull/clone through them.

    Args:
        store: the session store.
        username, password: HTTP credentials (else ``~/.git-credentials`` is consulted).
        ssh_command: the ssh program and options (the CLI passes ``GIT_SSH_COMMAND`` or
            ``GIT_SSH``; else ``core.sshCommand`` of the repo's config, else ``ssh``).
        timeout: seconds a remote may stay silent before a request to it fails.
        warnings: gets what the caller should tell the user (a push whose remote hooks could
            not run), each once.
    """

    def __init__(self, store: GitStore, *, username: str | None = None, password: str | None = None,
                 ssh_command: str | None = None, timeout: float | None = None, warnings: list[str] | None = None):
        self.store = store
        self.username = username
        self.password = password
        self.ssh_command = ssh_command
        self.timeout = DEFAULT_TIMEOUT_S if timeout is None else timeout
        self.warnings = warnings
        #: commit -> why its tree is no session's (None: it is one); commits never change
        self._checked: dict[bytes, str | None] = {}

    def _know_logs(self) -> None:
        """Take the commits the store knows to hold a session log for sessions, without reading them.

        Those caches (derived, rebuilt from git when missing) name commits whose tree was read, so the
        session refs of a sync that moves nothing cost no object read.
        """
        for commit in self.store.known_logs():
            self._checked.setdefault(commit.encode("ascii"), None)

    # -- configuration ----------------------------------------------------------------------

    def list(self) -> list[tuple[str, str]]:
        """Return ``(name, url)`` of every configured remote, sorted by name."""
        repo = self.store.repo()
        if repo is None:
            return []
        config = repo.get_config()
        out = []
        for section in config.sections():
            if len(section) == 2 and section[0] == b"remote":
                out.append((section[1].decode(), config.get(section, b"url").decode()))
        return sorted(out)

    def url(self, name: str) -> str:
        """Return the URL of remote ``name``.

        Raises:
            RemoteError: no such remote.
        """
        for n, url in self.list():
            if n == name:
                return url
        known = ", ".join(n for n, _ in self.list()) or "none yet"
        raise RemoteError(f"no remote {name!r} (remotes: {known}); add one with: gs remote add {name} URL")

    @writes_to(lambda self, *args, **kwargs: self.store.path)
    def add(self, name: str, url: str) -> bool:
        """Add remote ``name`` as git keeps one, with the fetch refspecs of :func:`.sync.write_refspecs`.

        Returns:
            True when a password was stripped from the URL (it is never stored).

        Raises:
            RemoteError: a bad name, an empty URL, or the name exists.
        """
        if not _REMOTE_NAME_RE.match(name):
            raise RemoteError(f"invalid remote name {name!r}: use letters, digits, '.', '-' or '_'")
        if not url.strip():
            raise RemoteError("the remote URL is empty")
        if (host := dash_host(url)) is not None:
            raise RemoteError(bad_host(url, host))
        if any(n == name for n, _ in self.list()):
            raise RemoteError(f"remote {name!r} exists; remove it first with: gs remote remove {name}")
        url, stripped = strip_password(url.strip())
        repo = self.store.repo(create=True)
        assert repo is not None
        config = repo.get_config()
        section = (b"remote", name.encode())
        config.set(section, b"url", url.encode())
        write_refspecs(repo, config, name)
        return stripped

    @writes_to(lambda self, *args, **kwargs: self.store.path)
    def remove(self, name: str) -> None:
        """Remove remote ``name`` and its remote-tracking refs.

        Raises:
            RemoteError: no such remote.
        """
        self.url(name)
        repo = self._open()
        config = repo.get_config()
        del config[(b"remote", name.encode())]
        write_config(repo, config)
        prefix = Ref(f"refs/remotes/{name}/".encode())
        for ref in list(repo.refs.keys(base=prefix)):
            repo.refs.remove_if_equals(Ref(prefix + ref), None)

    # -- transfer ---------------------------------------------------------------------------

    def _location(self, remote: str) -> tuple[str, bool]:
        """Return ``(url, is a configured name)``; a bare word must be a configured remote."""
        if looks_like_url(remote):
            return remote, False
        return self.url(remote), True

    def _client(self, url: str, operation: str):
        username: str | None = None
        password: str | None = None
        if url.startswith(("http://", "https://")):
            username, password = self.username, self.password
            if password is None:
                from dulwich.client import get_credentials_from_store

                parts = urlsplit(url)
                found = next(get_credentials_from_store(parts.scheme, parts.hostname or "", parts.username), None)
                if found:
                    username, password = found
            username = (username or urlsplit(url).username) if password is not None else None
        repo = self.store.repo()
        config = repo.get_config_stack() if repo is not None else None
        return connect(url, operation, config=config, timeout=self.timeout, username=username, password=password,
                       ssh_command=self.ssh_command, warnings=self.warnings)

    def _where(self, remote: str) -> tuple[str, str | None]:
        """Return how messages name ``remote``, and its configured name (None for a URL: no sync base)."""
        name = remote_named(remote, self.list())  # a configured remote's URL is that remote
        return (name, name) if name else ("remote", None)

    def look(self, remote: str) -> dict[bytes, bytes]:
        """Ask ``remote`` (a name or URL) for its session refs, fetching nothing: whether it answers.

        Returns:
            The remote's refs under ``refs/heads/`` and ``refs/archive/``: ref -> commit.

        Raises:
            RemoteError: unreachable, not a git repository, refused.
        """
        url, _named = self._location(remote)
        repo = self.store.repo()
        if repo is None:
            raise RemoteError("there is no session repo here yet to look from")
        client, path = self._client(url, "pull")
        return session_refs_there(repo, client, url, path)

    @writer_of(lambda self, *args, **kwargs: self.store.path)
    def fetch(self, remote: str) -> dict[bytes, bytes]:
        """Fetch the objects of the session branches and archives of ``remote`` (a name or URL).

        No ref moves here: the sync base follows only what a pull or push settles.

        Returns:
            The remote's refs under ``refs/heads/`` and ``refs/archive/``: ref -> commit
            (also those that are no sessions, for the caller to report).

        Raises:
            RemoteError: unreachable, not a git repository, refused.
        """
        return self._fetch(remote)[0]

    def _fetch(self, remote: str) -> tuple[dict[bytes, bytes], Mapping[Any, bytes]]:
        """Fetch (see :meth:`fetch`); return the remote's refs and the session refs here, read just before."""
        url, _named = self._location(remote)
        repo = self.store.repo(create=True)
        assert repo is not None
        here: Mapping[Any, bytes] = synced_refs(repo)  # a fetch moves none of them
        client, path = self._client(url, "pull")
        refs = unless_same_pack(lambda: fetch_sessions(repo, client, url, path, have=set(here.values())))
        if refs is None:
            raise RemoteError(SAME_SAVES)
        self.store.close()  # new packs: reopen with a fresh pack list
        return refs, here

    @writer_of(lambda self, *args, **kwargs: self.store.path)
    def pull(self, remote: str) -> PullReport:
        """Fetch ``remote`` and carry out the steps of the sync rule that move refs here (:mod:`.sync`).

        Raises:
            RemoteError: unreachable, not a git repository, refused.
        """
        self._know_logs()
        return self._pull(remote, *self._fetch(remote))[0]

    def _open(self) -> Repo:
        repo = self.store.repo()
        assert repo is not None
        return repo

    def _pull(self, remote: str, fetched: dict[bytes, bytes], here: Mapping[Any, bytes]
              ) -> tuple[PullReport, dict[bytes, bytes]]:
        """Pull the remote's refs ``fetched`` into the refs ``here``; return the report and the sync base left."""
        where, name = self._where(remote)
        repo = self._open()
        theirs, skipped = session_refs(repo, fetched, self._checked)
        mine, _ = session_refs(repo, here, self._checked)  # a stranger here: the push says
        if name:
            upgrade_refspecs(repo, name)
        sides = Sides(dict(mine), load_base(repo, name) if name else {}, theirs)
        report = pull_steps(self.store, sides, where)
        report.skipped = skipped
        # Tips taken from there hold a session log (their trees were checked above): as after
        # a clone, later syncs and lists need not read them again.
        self.store.state.mark_received(sha.decode() for ref, sha in sides.local.items()
                                       if sha != mine.get(ref) and sha == theirs.get(ref))
        self.store.settle_current()  # a clone's first pull, or the current session dropped: the one saved last
        if name:
            settle(self._open(), name, sides)
        return report, sides.base

    @writer_of(lambda self, *args, **kwargs: self.store.path)
    def sync(self, remote: str) -> SyncReport:
        """Pull, then push what the pull left to send; again (up to SYNC_ROUNDS) while the remote moves meanwhile.

        The push is planned on the refs the pull fetched: with nothing to send, no push
        connection is opened.

        Raises:
            RemoteError: unreachable, not a git repository, refused as a whole.
        """
        report = SyncReport()
        self._know_logs()  # no repo is made at a path not there: only an explicit push does (a watch must not)
        for _ in range(SYNC_ROUNDS):
            fetched, here = self._fetch(remote)
            pulled, base = self._pull(remote, fetched, here)
            pushed = self._push(remote, known=fetched, base=base)
            report.add(pulled, pushed)
            if not pushed.moved:
                break
        return report

    @writer_of(lambda self, *args, **kwargs: self.store.path)
    def push(self, remote: str, *, only: Collection[str] | None = None) -> PushReport:
        """Send what the sync rule (:mod:`.sync`) says the remote lacks; drop there what moved here.

        Sessions renamed, archived or restored here are dropped there (a second request,
        once the refs that keep their commits are accepted). A ref the server refuses (a
        hook...) is reported with the server's words; the rest still goes. A remote with
        newer saves of a session is no failure (a pull brings them). The pack sent holds what
        the remote lacks, new saves as deltas on its blobs (:mod:`.thinpack`).

        Args:
            remote: a configured name or a URL (a URL has no sync base: nothing is dropped there).
            only: session ids to send (their branches and archives); None: every session.

        Raises:
            RemoteError: unreachable or refused as a whole.
        """
        self._know_logs()
        created = create_bare(self._location(remote)[0], self.store, only)
        report = self._push(remote, only=only)
        report.created_there = created
        return report

    def _push(self, remote: str, *, only: Collection[str] | None = None, known: dict[bytes, bytes] | None = None,
              base: dict[bytes, bytes] | None = None) -> PushReport:
        """Push (see :meth:`push`); ``known``: the remote's refs just fetched; ``base``: the sync base a pull left."""
        url, _named = self._location(remote)
        _where, name = self._where(remote)
        if not self.store.exists():
            return PushReport()
        repo = self._open()

        def in_scope(ref: bytes) -> bool:
            return only is None or label(ref).removeprefix("archive/") in only

        mine, skipped = session_refs(repo, {r: s for r, s in synced_refs(repo).items() if in_scope(r)},
                                     self._checked)
        # The base as the pull just settled it. Another gs moving it meanwhile leaves an
        # older one here: a drop needs a side still at the base, so refs are kept, not lost.
        base = {r: s for r, s in (load_base(repo, name) if base is None else base).items()
                if in_scope(r)} if name else {}
        push = Push(repo, name, mine, base, in_scope, known, PushReport(skipped=skipped))
        if known is not None and (decided := push.decided()) is not None:
            return decided  # from the fetched refs: no connection
        client, path = self._client(url, "push")
        return push.run(url, client, path)
