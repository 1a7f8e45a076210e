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

import os
import re
from collections.abc import Callable, Collection, Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from dulwich.client import HTTPUnauthorized, LocalGitClient, SendPackError
from dulwich.errors import GitProtocolError, HangupException, NotGitRepository
from dulwich.object_store import ObjectStoreGraphWalker
from dulwich.objects import ZERO_SHA, ObjectID
from dulwich.refs import Ref
from dulwich.repo import Repo

from ...errors import RemoteError
from ..faults import local_fault
from ..lock import unless_same_pack
from ..privacy import tighten_packs
from ..repo import read_refs
from .clients import answering, limit_of, strip_password
from .reports import PushReport
from .sync import SYNCED, label, named_like_a_session
from .urls import local_path

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
    elif (path := local_path(url)) is not None and not os.path.lexists(path):
        text = "nothing is there (" + ("gs push makes the repository in a folder that exists" if path.parent.is_dir()
                                       else f"nor is its folder {path.parent}: a typo, or a disk not mounted?") + ")"
    elif any(isinstance(cause, NotGitRepository) for cause in causes) or _no_repository(local_path(url)):
        where = "on the server: git init --bare PATH" if "://" in url and not url.startswith("file:") else \
            f"with: git init --bare {urlsplit(url).path if url.startswith('file:') else url}"
        text = f"no git repository there (create one {where}; or check the URL)"
    elif isinstance(exc, HTTPUnauthorized):
        text = "the server wants credentials: put them in ~/.git-credentials or GS_HTTP_USERNAME/GS_HTTP_PASSWORD"
    else:
        text = said or exc.__class__.__name__
    return RemoteError(f"could not reach {shown}: {text}; nothing local was changed")


def _no_repository(path: Path | None) -> bool:
    """True when ``path`` is a local folder that holds no git repository (bare or not)."""
    return path is not None and path.is_dir() and not (path / "objects").is_dir() and not (path / ".git").exists()


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


def session_refs_there(repo: Repo, client: Any, url: str, path: str) -> dict[bytes, bytes]:
    """The remote's session refs, asked for alone: nothing is fetched (``gs doctor``'s look).

    Returns:
        The remote's refs under ``refs/heads/`` and ``refs/archive/``: ref -> commit.

    Raises:
        RemoteError: unreachable, not a git repository, refused.
    """
    try:
        with answering(client):
            refs = _fetch(repo, client, path, lambda _refs, depth=None: [])
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
    tighten_packs(repo)
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
    # dulwich does not raise when the server refuses a ref: read ref_status.
    return result.ref_status or {}


#: A ref's status when another process held it locked, or moved it while the request ran
#: (dulwich's local client: ``unable to set``): another gs is moving it; the next round decides.
LOCKED: Any = object()

#: ref -> (its status: None when accepted, :data:`LOCKED`, else the server's reason; what the
#: server's hooks wrote during that request).
Outcome = dict[bytes, tuple[Any, bytes]]

#: How dulwich's local client writes a name or commit into its messages: ``b'refs/heads/w'``.
_BYTES_REPR = re.compile(r"""b'([^'\\]*)'""")


def request(url: str, client: Any, path: str, update_refs: Callable, pack_data: Callable,
            refs: Collection[bytes]) -> Outcome:
    """Make one push request (:func:`send`) and say what became of each of ``refs``.

    Args:
        url: the remote's URL, for messages.
        client: the dulwich client of the remote.
        path: the remote's path as the client takes it.
        update_refs: dulwich's callback from the remote's refs to the refs to change.
        pack_data: dulwich's callback that makes the pack to send.
        refs: the refs asked for; may be filled by ``update_refs`` (read after the request).

    Returns:
        The :data:`Outcome` of each ref of ``refs``.

    Raises:
        RemoteError: unreachable, or the push refused as a whole.
    """
    said = bytearray()
    status = unless_same_pack(lambda: send(url, client, path, update_refs, pack_data, said))
    if status is None:  # a path remote's ref, or the same pack, another gs writes now
        status = dict.fromkeys(refs, LOCKED)  # some refs may have moved: the next round decides
    text = said.decode("utf-8", "replace")
    status = {ref: LOCKED if _lost_a_race(client, ref, why, text) else why for ref, why in status.items()}
    return {ref: (status.get(ref), bytes(said)) for ref in refs}


def _lost_a_race(client: Any, ref: bytes, why: Any, said: str) -> bool:
    """True when ``ref`` was refused only because another process held it or moved it meanwhile.

    dulwich's local client says ``unable to set``/``unable to remove`` when its
    compare-and-swap lost; git's receive-pack says ``cannot lock ref '<ref>'`` (its lock file
    exists, or the ref is no longer at the commit the request expected).
    """
    if not isinstance(why, str):
        return False
    if isinstance(client, LocalGitClient) and why.startswith("unable to "):
        return True
    return why.startswith("failed to ") and f"cannot lock ref '{ref.decode('utf-8', 'replace')}'" in said


def one_by_one(url: str, client: Any, path: str, pack_data: Callable, outcome: Outcome,
               wanted: Mapping[bytes, bytes], advertised: Mapping[bytes, bytes]) -> None:
    """Send again, a request each, the refs of a request refused for more than one of them.

    A pre-receive hook refuses a request as a whole (git runs it once for all its refs), so
    an innocent ref shares the fate of the one it objects to. Only then is each ref sent
    alone: the failure case pays the extra requests, never a push that went through.

    Args:
        url: the remote's URL, for messages.
        client: the dulwich client of the remote.
        path: the remote's path as the client takes it.
        pack_data: dulwich's callback that makes the pack to send.
        outcome: the first request's outcome; each ref sent again gets its own.
        wanted: ref -> the commit it is to point at.
        advertised: the remote's refs as the first request found them: a ref changed there
            since is not sent (it becomes :data:`LOCKED`: the next round decides it).
    """
    again = [ref for ref, (error, _) in outcome.items() if error is not None and error is not LOCKED]
    if len(again) < 2:
        return
    for ref in again:
        moved: list[bytes] = []

        def alone(remote_refs: dict[bytes, bytes], ref: bytes = ref, moved: list[bytes] = moved) -> dict[bytes, bytes]:
            if remote_refs.get(ref) != advertised.get(ref):
                moved.append(ref)
                return {}
            return {ref: wanted[ref]}

        outcome.update(request(url, client, path, alone, pack_data, [ref]))
        if moved:
            outcome[ref] = (LOCKED, b"")


def accepted(ref: bytes, outcome: Outcome, report: PushReport) -> bool:
    """True when the server accepted ``ref``; else it goes in ``report`` as moved (:data:`LOCKED`) or refused."""
    if outcome[ref][0] is LOCKED:  # another gs moved it: the next round decides
        if (name := label(ref)) not in report.moved:
            report.moved.append(name)
        return False
    return not refused(ref, outcome, report)


def refuses_deletions(error: Any) -> bool:
    """True for git's refusal of a ref deletion by ``receive.denyDeletes`` (``deletion prohibited``)."""
    return isinstance(error, str) and error.startswith("deletion prohibited")


def _plain(text: str) -> str:
    """``text`` with dulwich's bytes reprs as the names they are, on one line."""
    return " ".join(_BYTES_REPR.sub(r"\1", text).split())


def refused(ref: bytes, outcome: Outcome, report: PushReport) -> bool:
    """Report ``ref`` as refused, in the server's words, when it was; return whether it was.

    The reason is the one given for ``ref``; what the server's hooks wrote follows, apart.
    dulwich's local client writes each ref's reason there too: those echoes are left out,
    so no ref's reason is said twice or under another ref. A ref :data:`LOCKED` is not
    refused (the caller counts it as moved).
    """
    error, said = outcome.get(ref, (None, b""))
    if error is None or error is LOCKED:
        return False
    text = said.decode("utf-8", "replace")
    for reason in {why for why, _ in outcome.values() if isinstance(why, str) and why}:
        text = text.replace(reason, "\n")
    lines = [_plain(line) for line in text.replace("\r", "\n").splitlines()]
    server_said = "; ".join(line for line in lines if line)
    reason = _plain(str(error))
    report.failed.append((ref.decode("utf-8", "replace"),
                          f"{reason} (the server said: {server_said})" if server_said else reason))
    return True
