"""The dulwich client of a remote, as a sync makes its requests: which client, and how long it waits.

A push to a local path goes through git's own ``git receive-pack``, so the remote's hooks
and git's checks (``receive.denyCurrentBranch``, ``receive.fsckObjects``...) run as they do
over git:// or ssh; dulwich's local client, which moves the refs itself, reads and fetches
(no hook runs for those) and pushes only where no git program is installed.

A remote that stays silent for ``timeout`` seconds (to connect, between two pieces of its
answer) fails the request: the socket's timeout for git://, urllib3's for http (a read that
timed out is not tried again), and for ssh, which itself waits for ever for a server that
accepted the connection, a bounded wait on its output.
"""

from __future__ import annotations

import os
import select
import shutil
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit, urlunsplit
from weakref import WeakKeyDictionary

from dulwich.client import LocalGitClient, SSHGitClient, SubprocessGitClient, TCPGitClient, get_transport_and_path

from ...config import DEFAULT_SYNC_TIMEOUT_S
from ...errors import RemoteError
from .urls import dash_host

#: Seconds a remote may stay silent before a request to it fails, unless told otherwise.
DEFAULT_TIMEOUT_S = DEFAULT_SYNC_TIMEOUT_S
#: The warning when a push to a local path cannot run the remote's hooks.
NO_HOOKS = ("no git program is installed, so the hooks and receive checks of {url} were not run "
            "(install git to have them run)")

#: The seconds each client :func:`connect` made waits for its remote to answer.
_LIMITS: WeakKeyDictionary[Any, float] = WeakKeyDictionary()


def strip_password(url: str) -> tuple[str, bool]:
    """Return ``url`` without a password in it, and whether one was removed.

    The one place a URL loses its password: every message naming a URL and the config
    show it without (the password still reaches the server, as a credential).
    """
    parts = urlsplit(url)
    if parts.password is None:
        return url, False
    netloc = parts.hostname or ""
    if parts.username:
        netloc = f"{parts.username}@{netloc}"
    if parts.port:
        netloc += f":{parts.port}"
    return urlunsplit(parts._replace(netloc=netloc)), True


def bad_host(url: str, host: str) -> str:
    """The refusal of a URL whose host starts with ``-`` (see :func:`.urls.dash_host`)."""
    return (f"bad URL {strip_password(url)[0]!r}: its host {host!r} starts with '-', which ssh would read as an "
            "option (a command to run); nothing was run. Check the URL")


def connect(url: str, operation: str, *, config: Any, timeout: float = DEFAULT_TIMEOUT_S,
            username: str | None = None, password: str | None = None, ssh_command: str | None = None,
            warnings: list[str] | None = None) -> tuple[Any, str]:
    """Return dulwich's client for ``url`` and the remote's path as the client takes it.

    Args:
        url: the remote's URL or path (with its password, if any: a credential).
        operation: ``"pull"`` or ``"push"``.
        config: the session repo's config stack (insteadOf, http.*, core.sshCommand), or None.
        timeout: seconds the remote may stay silent before a request fails.
        username: HTTP user name (None: none).
        password: HTTP password (None: none).
        ssh_command: the ssh program and options (None: core.sshCommand, else ssh).
        warnings: gets the warning, once, when a local push cannot run the remote's hooks.

    Raises:
        RemoteError: a URL dulwich cannot use.
    """
    if (host := dash_host(url)) is not None:
        raise RemoteError(bad_host(url, host))
    pool = _http_pool(config, url, timeout) if url.startswith(("http://", "https://")) else None
    try:
        # quiet: no server progress chatter; a hook's messages still come (see send).
        client, path = get_transport_and_path(url, config=config, operation=operation, quiet=True,
                                              username=username, password=password,
                                              ssh_command=ssh_command or None, pool_manager=pool)
    except ValueError as exc:
        raise RemoteError(f"cannot use {strip_password(url)[0]!r}: {exc}") from None
    if isinstance(client, LocalGitClient) and operation == "push":
        if shutil.which("git"):
            client = SubprocessGitClient(thin_packs=True, quiet=True)
        elif warnings is not None and (note := NO_HOOKS.format(url=url)) not in warnings:
            warnings.append(note)
    if isinstance(client, SSHGitClient) and sys.platform != "win32":
        client.ssh_vendor = _AnsweringSSH(client.ssh_vendor, timeout)  # type: ignore[assignment]
    _LIMITS[client] = timeout
    return client, path


def _http_pool(config: Any, url: str, seconds: float) -> Any:
    """urllib3's pool manager as dulwich makes it, with ``seconds`` to connect and between reads.

    A read that timed out is not tried again (urllib3 would, three times, for a GET): a
    silent server fails the request after ``seconds``, not four times that.
    """
    import urllib3
    from dulwich.client import default_urllib3_manager
    from urllib3.util.retry import Retry

    once = Retry(total=3, read=0, redirect=5)

    class Once:
        def urlopen(self, method: str, url: str, redirect: bool = True, **kw: Any) -> Any:
            kw.setdefault("retries", once)
            return super().urlopen(method, url, redirect=redirect, **kw)  # type: ignore[misc]

    class Pool(Once, urllib3.PoolManager):  # type: ignore[misc]
        pass

    class Proxy(Once, urllib3.ProxyManager):  # type: ignore[misc]
        pass

    return default_urllib3_manager(config, pool_manager_cls=Pool, proxy_manager_cls=Proxy, base_url=url,
                                   timeout=seconds)


class NoAnswer(TimeoutError):
    """The remote sent nothing for ``seconds`` seconds."""

    def __init__(self, seconds: float):
        super().__init__(f"no answer within {seconds:g} s")
        self.seconds = seconds


class _AnsweringSSH:
    """dulwich's ssh vendor, whose connections wait at most ``seconds`` for each piece of output.

    ssh itself waits forever for a server that accepted the connection and says nothing (and
    so for a git program there that hangs); on that wait the ssh process is ended.
    """

    def __init__(self, vendor: Any, seconds: float):
        self._vendor = vendor
        self._seconds = seconds

    def run_command(self, *args: Any, **kwargs: Any) -> Any:
        """Start ssh as the vendor does; its reads wait at most ``seconds`` each."""
        connection = self._vendor.run_command(*args, **kwargs)
        proc = getattr(connection, "proc", None)
        if proc is not None and proc.stdout is not None:
            # the vendor's own reader stays referenced: dropping it would close ssh's stdout
            reader = _BoundedReader(proc, self._seconds, keep=connection.read)
            connection.read, connection.can_read = reader.read, reader.can_read
        return connection


class _BoundedReader:
    """Reads of a subprocess's stdout that wait at most ``seconds`` for the next bytes."""

    def __init__(self, proc: Any, seconds: float, keep: Any = None):
        self._proc = proc
        self._keep = keep
        self._fd = proc.stdout.fileno()
        self._seconds = seconds
        self._buffer = bytearray()

    def can_read(self) -> bool:
        """True when bytes are waiting (dulwich asks before it reads the server's acks)."""
        return bool(self._buffer) or bool(select.select([self._fd], [], [], 0)[0])

    def read(self, size: int) -> bytes:
        """Return ``size`` bytes (fewer at the end of the output).

        Raises:
            NoAnswer: nothing came for ``seconds`` (the process is ended).
        """
        while len(self._buffer) < size:
            if not select.select([self._fd], [], [], self._seconds)[0]:
                self._proc.kill()
                raise NoAnswer(self._seconds)
            chunk = os.read(self._fd, max(size - len(self._buffer), 65536))
            if not chunk:
                break
            self._buffer += chunk
        out = bytes(self._buffer[:size])
        del self._buffer[:size]
        return out


@contextmanager
def answering(client: Any) -> Iterator[None]:
    """Run a request of ``client``'s with its silence limit on the git:// socket it opens.

    dulwich's TCP client makes its socket inside the request, with the default timeout of
    that moment (which the socket keeps for its connect and every read).
    """
    limit = _LIMITS.get(client) if client is not None else None
    if limit is None or not isinstance(client, TCPGitClient):
        yield
        return
    before = socket.getdefaulttimeout()
    socket.setdefaulttimeout(limit)
    try:
        yield
    finally:
        socket.setdefaulttimeout(before)


def limit_of(client: Any) -> float:
    """The seconds ``client`` waits for its remote to answer (:func:`connect` set them)."""
    try:
        return _LIMITS.get(client, DEFAULT_TIMEOUT_S)
    except TypeError:  # no client (None): nothing to weakly refer to
        return DEFAULT_TIMEOUT_S
