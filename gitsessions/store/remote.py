"""Backup and sync through any git remote (issue 5), with dulwich's transports.

Remotes live in the repo config as git keeps them (``[remote "origin"] url = ...``), so
plain ``git push origin`` works too. Every session branch and archive ref is pushed by
explicit refspec (dulwich rejects wildcards). A pull fetches, then per session:

- unknown here: created (a new local session);
- fast-forward: applied, unless a live writer on this machine holds the session;
- ahead here: left alone (push sends it);
- diverged: the local tip stays the session, the remote side is kept as a fork named
  ``<id>-<remote>-<short commit>`` with lineage. No side is overwritten, nothing is merged.

Credentials are never written to the config: a password in a URL is stripped when the
remote is added; HTTP credentials come from the caller (the CLI reads the environment) or
from ``~/.git-credentials``.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

from dulwich.client import HTTPUnauthorized, SendPackError, get_transport_and_path
from dulwich.errors import GitProtocolError, HangupException, NotGitRepository
from dulwich.graph import can_fast_forward
from dulwich.objects import ZERO_SHA, Commit, ObjectID, Tree
from dulwich.refs import Ref

from ..errors import CorruptSession, RemoteError, UnsupportedVersion
from ..rules import SESSION_ID_RE, CommitId, Lineage, SessionId, commit_message, pull_fork_name, taken_by
from .faults import writes_to
from .git import SESSION_FILE, GitStore
from .thinpack import PushPack
from .values import Credentials, PullReport, PushReport

_REMOTE_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_SYNCED = (b"refs/heads/", b"refs/archive/")

__all__ = ["Credentials", "PullReport", "PushReport", "RemoteError", "Remotes", "strip_password"]


def strip_password(url: str) -> tuple[str, bool]:
    """Return ``url`` without a password in it, and whether one was removed."""
    parts = urlsplit(url)
    if parts.password is None:
        return url, False
    netloc = parts.hostname or ""
    if parts.username:
        netloc = f"{parts.username}@{netloc}"
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc)), True


class Remotes:
    """The remotes of one session store, and push/pull/clone through them.

    Args:
        store: the session store.
        username, password: HTTP credentials (else ``~/.git-credentials`` is consulted).
        ssh_command: the ssh program and options (the CLI passes ``GIT_SSH_COMMAND`` or
            ``GIT_SSH``; else ``core.sshCommand`` of the repo's config, else ``ssh``).
    """

    def __init__(self, store: GitStore, *, username: str | None = None, password: str | None = None,
                 ssh_command: str | None = None):
        self.store = store
        self.username = username
        self.password = password
        self.ssh_command = ssh_command

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
        """Add remote ``name`` (git's layout, with a fetch refspec for plain git).

        Returns:
            True when a password was stripped from the URL (it is never stored).

        Raises:
            RemoteError: a bad name, an empty URL, or the name exists.
        """
        if not _REMOTE_NAME_RE.match(name):
            raise RemoteError(f"invalid remote name {name!r}: use letters, digits, '.', '-' or '_'")
        if not url.strip():
            raise RemoteError("the remote URL is empty")
        if any(n == name for n, _ in self.list()):
            raise RemoteError(f"remote {name!r} exists; remove it first with: gs remote remove {name}")
        url, stripped = strip_password(url.strip())
        repo = self.store.repo(create=True)
        assert repo is not None
        config = repo.get_config()
        section = (b"remote", name.encode())
        config.set(section, b"url", url.encode())
        config.set(section, b"fetch", f"+refs/heads/*:refs/remotes/{name}/*".encode())
        config.write_to_path()
        return stripped

    @writes_to(lambda self, *args, **kwargs: self.store.path)
    def remove(self, name: str) -> None:
        """Remove remote ``name`` and its remote-tracking refs.

        Raises:
            RemoteError: no such remote.
        """
        self.url(name)
        repo = self.store.repo()
        assert repo is not None
        config = repo.get_config()
        del config[(b"remote", name.encode())]
        config.write_to_path()
        prefix = Ref(f"refs/remotes/{name}/".encode())
        for ref in list(repo.refs.keys(base=prefix)):
            repo.refs.remove_if_equals(Ref(prefix + ref), None)

    # -- transfer ---------------------------------------------------------------------------

    def _location(self, remote: str) -> tuple[str, bool]:
        """Return ``(url, is a configured name)``; a bare word must be a configured remote."""
        if "/" in remote or ":" in remote or remote.startswith("."):
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
        try:
            # quiet: no server progress chatter; a hook's messages still come (see push).
            # ssh_command None: core.sshCommand from the config, else ssh.
            return get_transport_and_path(url, config=config, operation=operation, quiet=True,
                                          username=username, password=password,
                                          ssh_command=self.ssh_command or None)
        except ValueError as exc:
            raise RemoteError(f"cannot use {url!r}: {exc}") from None

    def _fail(self, url: str, exc: BaseException) -> RemoteError:
        text = " ".join(str(exc).split()) or exc.__class__.__name__
        if isinstance(exc, HTTPUnauthorized):
            text = "the server wants credentials: put them in ~/.git-credentials or GS_HTTP_USERNAME/GS_HTTP_PASSWORD"
        return RemoteError(f"could not reach {url}: {text}; nothing local was changed")

    def fetch(self, remote: str) -> dict[bytes, bytes]:
        """Fetch session branches and archives of ``remote`` (a name or URL).

        Tracking refs ``refs/remotes/<name>/<id>`` are updated for a named remote.

        Returns:
            The remote's refs under ``refs/heads/`` and ``refs/archive/``: ref -> commit.

        Raises:
            RemoteError: unreachable, not a git repository, refused.
        """
        url, named = self._location(remote)
        repo = self.store.repo(create=True)
        assert repo is not None
        client, path = self._client(url, "pull")

        def wants(refs: dict, depth: int | None = None) -> list[bytes]:
            return [sha for ref, sha in refs.items()
                    if ref.startswith(_SYNCED) and sha and sha != ZERO_SHA and sha not in repo.object_store]

        try:
            result = client.fetch(path, repo, determine_wants=wants)
        except (OSError, GitProtocolError, HangupException, NotGitRepository, HTTPUnauthorized) as exc:
            raise self._fail(url, exc) from None
        refs = {ref: sha for ref, sha in (result.refs or {}).items()
                if ref.startswith(_SYNCED) and sha and sha != ZERO_SHA}
        if named:
            for ref, sha in refs.items():
                if ref.startswith(b"refs/heads/"):
                    repo.refs.set_if_equals(b"refs/remotes/" + remote.encode() + b"/" + ref[11:], None, sha)
        self.store.close()  # new packs: reopen with a fresh pack list
        return refs

    def pull(self, remote: str) -> PullReport:
        """Fetch ``remote`` and bring every session up to date (see the module doc)."""
        refs = self.fetch(remote)
        remote_name = remote if _REMOTE_NAME_RE.match(remote) else "remote"
        report = PullReport()
        repo = self.store.repo()
        assert repo is not None
        for ref, sha in sorted(refs.items()):
            name = ref.split(b"/", 2)[2].decode("utf-8", "replace")
            new = sha.decode("ascii")
            if not SESSION_ID_RE.match(name):
                report.skipped.append((name, "not a valid session id"))
                continue
            if ref.startswith(b"refs/archive/"):
                if self.store.archive_ref(name) is None and self.store.update_ref(Ref(ref), None, new, "pull: archive"):
                    report.created.append(f"archive/{name}")
                else:
                    report.unchanged += 1
                continue
            self._pull_session(name, new, remote_name, report)
        return report

    def _pull_session(self, sid: str, new: str, remote_name: str, report: PullReport) -> None:
        store = self.store
        repo = store.repo()
        assert repo is not None
        local = store.tip(sid)
        if local == new:
            report.unchanged += 1
            return
        lock = store.lock(sid)
        if not lock.try_acquire():
            report.skipped.append((sid, f"a live writer holds it ({lock.holder()}); pull again later"))
            return
        try:
            local = store.tip(sid)
            ref = Ref(b"refs/heads/" + sid.encode())
            if local is None:
                existing = taken_by(store, sid)
                if existing is not None:
                    report.skipped.append((sid, f"clashes with local {existing}"))
                elif store.update_ref(ref, None, new, f"pull: new session from {remote_name}"):
                    report.created.append(sid)
                return
            if can_fast_forward(repo, ObjectID(local.encode()), ObjectID(new.encode())):
                if store.update_ref(ref, local, new, f"pull: fast-forward from {remote_name}"):
                    report.fast_forwarded.append((sid, local, new))
                else:
                    report.skipped.append((sid, "it moved during the pull; pull again"))
            elif can_fast_forward(repo, ObjectID(new.encode()), ObjectID(local.encode())):
                report.unchanged += 1  # ahead here
            else:
                fork_id = pull_fork_name(sid, remote_name, new)
                if taken_by(store, fork_id) is None:
                    try:
                        events = store.load(sid, new).events
                    except (CorruptSession, UnsupportedVersion):
                        events = []  # still kept: gs list flags the damaged log
                    lineage = Lineage(SessionId(sid), CommitId(new))
                    message = commit_message(fork_id, events, kind="fork", lineage=lineage,
                                             source=f"{remote_name}/{sid}", why="diverged")
                    store.branch_from(fork_id, new, message)
                    report.forks.append((sid, fork_id, new))
                else:
                    report.unchanged += 1
        finally:
            lock.release()

    def push(self, remote: str) -> PushReport:
        """Send every session branch and archive ref to ``remote`` (a name or URL).

        The pack sent holds what the remote lacks, new saves as deltas (:mod:`.thinpack`). A ref the
        server refuses (not a fast-forward, a hook) is reported with the server's reason.

        Raises:
            RemoteError: unreachable or refused as a whole.
        """
        url, named = self._location(remote)
        repo = self.store.repo()
        if repo is None:
            return PushReport()
        report = PushReport()
        local = {ref: sha for ref, sha in repo.refs.as_dict().items() if ref.startswith(_SYNCED)}
        for name in sorted(local):
            if why := self._not_a_session(name, local[name]):
                report.skipped.append((name.decode("utf-8", "replace"), why))
                del local[name]
        sent: list[bytes] = []
        said = bytearray()  # what the server's hooks wrote (sideband 2), e.g. why they refused
        client, path = self._client(url, "push")

        def update_refs(remote_refs: dict[bytes, bytes]) -> dict[bytes, bytes]:
            new_refs = dict(remote_refs)
            for ref, sha in sorted(local.items()):
                theirs = remote_refs.get(ref)
                if theirs == sha:
                    report.unchanged += 1
                    continue
                if theirs and theirs != ZERO_SHA and (ObjectID(theirs) not in repo.object_store
                                                      or not can_fast_forward(repo, ObjectID(theirs), sha)):
                    report.failed.append((ref.decode(), self._diverged_hint(ref, theirs, remote)))
                    continue
                new_refs[ref] = sha
                sent.append(ref)
            return new_refs

        pack_data = PushPack(repo, client)  # what the remote lacks; new saves as deltas on its blobs

        try:
            result = client.send_pack(path, update_refs, generate_pack_data=pack_data, progress=said.extend)
        except SendPackError as exc:
            raise RemoteError(f"{url} refused the push: {' '.join(str(exc).split())}") from None
        except (OSError, GitProtocolError, HangupException, NotGitRepository, HTTPUnauthorized) as exc:
            raise self._fail(url, exc) from None
        # dulwich does not raise when the server refuses a ref: read ref_status (design.md).
        status = result.ref_status or {}
        lines = [line.strip() for line in said.decode("utf-8", "replace").replace("\r", "\n").splitlines()]
        server_said = "; ".join(line for line in lines if line)
        for ref in sent:
            error = status.get(ref)
            if error is not None:
                reason = f"{error} (the server said: {server_said})" if server_said else str(error)
                report.failed.append((ref.decode("utf-8", "replace"), reason))
            else:
                report.pushed.append(ref.decode("utf-8", "replace"))
        return report

    def _not_a_session(self, ref: bytes, sha: bytes) -> str | None:
        """Why ``ref`` is no session ref to sync (design.md, "Sync"), or None when it is one."""
        name = ref.split(b"/", 2)[2].decode("utf-8", "replace")
        if not SESSION_ID_RE.match(name) or name.upper() == "HEAD":
            return "not a session id"
        repo = self.store.repo()
        assert repo is not None
        try:
            commit = repo[ObjectID(sha)]
            tree = repo[commit.tree] if isinstance(commit, Commit) else None
        except KeyError:
            return "its commit is missing"
        if not isinstance(tree, Tree) or SESSION_FILE not in tree:
            return f"no {SESSION_FILE.decode()} in its tree"
        return None

    def _diverged_hint(self, ref: bytes, theirs: bytes, remote: str) -> str:
        sid = ref.split(b"/", 2)[2].decode("utf-8", "replace")
        kept = pull_fork_name(sid, remote, theirs.decode())
        if ref.startswith(b"refs/heads/") and self.store.find(kept):
            return (f"not a fast-forward: {remote} has other saves of {sid} (kept here as {kept}); to publish "
                    f"this side under a new name: gs rename {sid} NEW && gs pull {remote} && gs push {remote}")
        return (f"not a fast-forward: {remote} has saves this repo lacks; run gs pull {remote} "
                "(their side is kept as a fork)")
