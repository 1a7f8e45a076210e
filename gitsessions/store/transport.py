"""The requests a sync makes of a remote through dulwich: a fetch, a push request; failures in user words.

The fetch brings the remote's session refs, and their objects only when some are missing
here. dulwich's fetch does work that a sync with nothing to bring does not need: it reads every
branch here (its graph walker of what this side has) before it knows whether anything is
wanted, and from a local path it reads the remote's refs twice, by dulwich's lookup of each
ref by name (~25 us a ref). Here the graph walker is built only once something is wanted,
and a local remote's refs are read first in one pass each (:func:`~.repo.read_refs`): when
it holds nothing missing here, dulwich's fetch is not called at all.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

from dulwich.client import HTTPUnauthorized, LocalGitClient, SendPackError
from dulwich.errors import GitProtocolError, HangupException, NotGitRepository
from dulwich.object_store import ObjectStoreGraphWalker
from dulwich.objects import ZERO_SHA, ObjectID
from dulwich.refs import Ref
from dulwich.repo import Repo

from ..errors import RemoteError
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


def unreachable(url: str, exc: BaseException) -> RemoteError:
    """The error for a remote at ``url`` that could not be reached or read (``exc``: dulwich's)."""
    text = " ".join(str(exc).split()) or exc.__class__.__name__
    if isinstance(exc, HTTPUnauthorized):
        text = "the server wants credentials: put them in ~/.git-credentials or GS_HTTP_USERNAME/GS_HTTP_PASSWORD"
    return RemoteError(f"could not reach {url}: {text}; nothing local was changed")


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
        refs = _fetch(repo, client, path, wants)
    except NETWORK_ERRORS as exc:
        raise unreachable(url, exc) from None
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
        result = client.send_pack(path, update_refs, generate_pack_data=pack_data, progress=said.extend)
    except SendPackError as exc:
        raise RemoteError(f"{url} refused the push: {' '.join(str(exc).split())}") from None
    except NETWORK_ERRORS as exc:
        raise unreachable(url, exc) from None
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
