"""The requests a sync makes of a remote through dulwich: a fetch, a push request; failures in user words.

The fetch brings the remote's session refs, and their objects only when some are missing
here. dulwich's fetch does work that a sync with nothing to bring does not need: it reads every
branch here (its graph walker of what this side has) before it knows whether anything is
wanted, and from a local path it reads the remote's refs twice, by dulwich's lookup of each
ref by name (~25 us a ref). Here the graph walker is built only once something is wanted,
and a local remote's refs are read first in one pass each (:func:`~.repo.read_refs`): when
it holds nothing missing here, dulwich's fetch is not called at all.

The clients come from :mod:`.clients` (a local push through git's receive-pack, a silence
limit on every network request).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Iterator, Mapping
from typing import Any
from urllib.parse import urlsplit

from dulwich.client import HTTPUnauthorized, LocalGitClient, SendPackError
from dulwich.errors import GitProtocolError, HangupException, NotGitRepository
from dulwich.object_store import ObjectStoreGraphWalker
from dulwich.objects import ZERO_SHA, ObjectID
from dulwich.refs import Ref
from dulwich.repo import Repo

from ..errors import RemoteError
from .clients import answering, limit_of, strip_password
from .faults import local_fault
from .repo import read_refs
from .sync import SYNCED, named_like_a_session
from .values import PushReport

#: What dulwich raises when the remote cannot be reached or read.
NETWORK_ERRORS = (OSError, GitProtocolError, HangupException, NotGitRepository, HTTPUnauthorized)
class _Walker:
    """dulwich's graph walker of the repo fetched into, built on first use (it reads every branch)."""

    def __init__(self, repo: Repo):
        self._repo = repo
        self._walker: ObjectStoreGraphWalker | None = None

    def _real(self) -> ObjectStoreGraphWalker:
        if self._walker is None:
            self._walker = self._repo.get_graph_walker()
        return self._walker

    def __next__(self) -> ObjectID | None:
        return self._real().next()

    def next(self) -> ObjectID | None:
        """The next commit this side has, for the server to acknowledge (dulwich's protocol)."""
        return self._real().next()

    def ack(self, sha: ObjectID) -> None:
        """The server has ``sha``: its ancestors need not be offered."""
        self._real().ack(sha)

    def nak(self) -> None:
        """The server has none of the commits offered so far."""
        self._real().nak()

    def __getattr__(self, name: str) -> Any:  # shallow, update_shallow...
        return getattr(self._real(), name)


class _Target:
    """The repo a fetch writes into, as dulwich sees it, with the graph walker made on first use."""

    def __init__(self, repo: Repo):
        self._repo = repo

    def get_graph_walker(self, heads: list[ObjectID] | None = None) -> Any:
        """Return dulwich's graph walker, built when the server first asks for it."""
        return _Walker(self._repo) if heads is None else self._repo.get_graph_walker(heads)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._repo, name)


def unreachable(url: str, exc: BaseException, client: Any = None) -> RemoteError:
    """The error for a remote at ``url`` that could not be reached or read (``exc``: dulwich's).

    Args:
        url: the remote's URL (shown without its password).
        exc: what dulwich (or the socket, urllib3, ssh) raised.
        client: the client of the request (its silence limit is named).
    """
    shown = strip_password(url)[0]
    causes = list(_causes(exc))
    if any(_timed_out(cause) for cause in causes):
        return RemoteError(f"{shown} did not answer within {limit_of(client):g} s; nothing local was changed "
                           "(a slow server: raise sync.timeout in the config)")
    said = " ".join(str(exc).split())
    ssh_refused = _SSH_REFUSED.search(said)
    if ssh_refused:  # ssh's own words for it
        text = f"could not connect to {ssh_refused[1]}:{ssh_refused[2]} (connection refused)"
    elif any(isinstance(cause, ConnectionRefusedError) for cause in causes):
        text = f"could not connect to {_host_port(url)} (connection refused)"
    elif any(isinstance(cause, NotGitRepository) for cause in causes):
        where = "on the server: git init --bare PATH" if "://" in url and not url.startswith("file:") else \
            f"with: git init --bare {urlsplit(url).path if url.startswith('file:') else url}"
        text = f"no git repository there (create one {where}; or check the URL)"
    elif isinstance(exc, HTTPUnauthorized):
        text = "the server wants credentials: put them in ~/.git-credentials or GS_HTTP_USERNAME/GS_HTTP_PASSWORD"
    else:
        text = said or exc.__class__.__name__
    return RemoteError(f"could not reach {shown}: {text}; nothing local was changed")


#: How ssh says it found nothing listening: ``ssh: connect to host H port P: Connection refused``.
_SSH_REFUSED = re.compile(r"connect to host (\S+) port (\d+): Connection refused")


def _network_errors() -> tuple[type[BaseException], ...]:
    """:data:`NETWORK_ERRORS` and urllib3's errors (dulwich lets a timeout in a reply's body through).

    Called only once a request failed: urllib3 is imported by the http client, not before.
    """
    try:
        from urllib3.exceptions import HTTPError
    except ImportError:  # no http client installed: nothing of urllib3's can be raised
        return NETWORK_ERRORS
    return (*NETWORK_ERRORS, HTTPError)


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what it was raised from, urllib3's reason for giving up included."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        cause = todo.pop()
        if cause is None or id(cause) in seen:
            continue
        seen.add(id(cause))
        yield cause
        todo += [cause.__cause__, cause.__context__, getattr(cause, "reason", None)]


def _timed_out(exc: BaseException) -> bool:
    """True for a socket's, urllib3's or our own timeout (a refused connection is none)."""
    if exc.__class__.__module__.startswith("urllib3"):
        return exc.__class__.__name__ in ("ReadTimeoutError", "ConnectTimeoutError", "TimeoutError")
    return isinstance(exc, TimeoutError)


def _host_port(url: str) -> str:
    """``HOST:PORT`` of ``url``, the scheme's port when none is given."""
    parts = urlsplit(url)
    port = parts.port or {"git": 9418, "ssh": 22, "http": 80, "https": 443}.get(parts.scheme, 0)
    return f"{parts.hostname}:{port}" if port else str(parts.hostname)


def _failed(url: str, exc: BaseException, client: Any, repo: Repo) -> Exception:
    """A failed request's error: the store's own when writing here failed, else :func:`unreachable`'s."""
    if isinstance(exc, OSError):
        local = local_fault(exc, repo.path)
        if local is not None:
            return local
    return unreachable(url, exc, client)


def fetch_sessions(repo: Repo, client: Any, url: str, path: str, have: Collection[bytes] = ()) -> dict[bytes, bytes]:
    """Fetch into ``repo`` the commits of the remote's session refs that ``repo`` lacks (no ref moves here).

    Args:
        repo: the local repository.
        client: the dulwich client of the remote.
        url: the remote's URL, for messages.
        path: the remote's path as the client takes it.
        have: commits known to be in ``repo`` (the tips of its refs): not looked up.

    Returns:
        The remote's refs under ``refs/heads/`` and ``refs/archive/``: ref -> commit (also
        those that are no sessions, for the caller to report).

    Raises:
        RemoteError: unreachable, not a git repository, refused.
    """
    def wants(refs: Mapping[bytes, bytes], depth: int | None = None) -> list[bytes]:
        # by name only: a ref named like a session is fetched to see whether its tree is one
        return [sha for ref, sha in refs.items()
                if named_like_a_session(ref) and sha and sha != ZERO_SHA and sha not in have
                and ObjectID(sha) not in repo.object_store]

    try:
        with answering(client):
            refs = _fetch(repo, client, path, wants)
    except _network_errors() as exc:
        raise _failed(url, exc, client, repo) from None
    return {ref: sha for ref, sha in refs.items() if ref.startswith(SYNCED) and sha and sha != ZERO_SHA}


def _fetch(repo: Repo, client: Any, path: str, wants: Callable[..., list[bytes]]) -> Mapping[Any, bytes]:
    """Fetch what ``wants`` picks of the remote's refs; return the remote's refs (at least the synced ones)."""
    if isinstance(client, LocalGitClient):
        with Repo(path) as there:
            refs: dict[Ref, ObjectID] = {}
            for namespace in SYNCED:
                refs.update(read_refs(there, namespace))
            if not wants(refs):
                return refs
    result = client.fetch(path, _Target(repo), determine_wants=wants)
    return result.refs or {}


def send(url: str, client: Any, path: str, update_refs: Callable, pack_data: Callable, said: bytearray
         ) -> dict[bytes, Any]:
    """Make one push request; return the server's status per ref (None: accepted).

    Args:
        url: the remote's URL, for messages.
        client: the dulwich client of the remote.
        path: the remote's path as the client takes it.
        update_refs: dulwich's callback from the remote's refs to the refs it is to hold.
        pack_data: dulwich's callback that makes the pack to send.
        said: gets what the server's hooks wrote (sideband 2).

    Raises:
        RemoteError: unreachable, or the push refused as a whole.
    """
    try:
        with answering(client):
            result = client.send_pack(path, update_refs, generate_pack_data=pack_data, progress=said.extend)
    except SendPackError as exc:
        raise RemoteError(f"{strip_password(url)[0]} refused the push: {' '.join(str(exc).split())}") from None
    except _network_errors() as exc:
        raise unreachable(url, exc, client) from None
    # dulwich does not raise when the server refuses a ref: read ref_status (design.md).
    return result.ref_status or {}


def refused(ref: bytes, status: Mapping[bytes, Any], said: bytearray, report: PushReport) -> bool:
    """Report ``ref`` as refused, in the server's words, when it was; return whether it was."""
    error = status.get(ref)
    if error is None:
        return False
    lines = [line.strip() for line in said.decode("utf-8", "replace").replace("\r", "\n").splitlines()]
    server_said = "; ".join(line for line in lines if line)
    report.failed.append((ref.decode("utf-8", "replace"),
                          f"{error} (the server said: {server_said})" if server_said else str(error)))
    return True
