"""Remote URLs: when a URL is a configured remote (the same repository, however it is written)."""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit


def looks_like_url(remote: str) -> bool:
    """True when ``remote`` is a URL or path rather than a remote's name (a name has no ``/`` or ``:``)."""
    return "/" in remote or ":" in remote or remote.startswith(".")


def dash_host(url: str) -> str | None:
    """The host ``url`` names when it starts with ``-`` (``ssh://-oProxyCommand=...``), else None.

    ssh (and git) would read such a host as an option: a URL that runs a command. git itself
    refuses them ("strange hostname"); gs refuses them as a bad URL wherever one is taken.
    """
    url = url.strip()
    if local_path(url) is not None:
        return None  # a path: no host (a folder named -x is a folder)
    parts = urlsplit(url)
    if parts.scheme and parts.netloc:
        host = parts.netloc.rsplit("@", 1)[-1]
    else:  # scp-like [user@]host:path
        host = url.split(":", 1)[0].rsplit("@", 1)[-1]
    return host if host.startswith("-") else None


def repository_key(url: str) -> str:
    """How ``url`` compares with another naming the same repository.

    A path (plain or ``file://``) becomes the absolute path it resolves to; a network URL
    loses its user name and password (the same repository, however one logs in), and its
    scheme and host are lowercased; a trailing ``/`` goes.
    """
    url = url.strip()
    path = local_path(url)
    if path is not None:
        return os.path.realpath(path)
    parts = urlsplit(url)
    if not parts.scheme or (len(parts.scheme) == 1 and os.name == "nt"):  # scp-like host:path
        return url.rstrip("/")
    host = (parts.hostname or "").lower() + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme.lower(), host, parts.path.rstrip("/"), parts.query, ""))


def local_path(url: str) -> Path | None:
    """The path on this machine that ``url`` names (a plain path or ``file://``), else None (a network URL)."""
    url = url.strip()
    parts = urlsplit(url)
    if parts.scheme == "file":
        url, parts = parts.path, urlsplit(parts.path)
    if parts.scheme and not (len(parts.scheme) == 1 and os.name == "nt"):  # not C:\ on Windows
        return None
    if ":" in url.split("/", 1)[0]:  # scp-like host:path
        return None
    return Path(os.path.expanduser(url))


def remote_named(remote: str, remotes: list[tuple[str, str]]) -> str | None:
    """Return the configured remote that ``remote`` (a name or URL) is, or None for another URL.

    A URL naming the repository of a configured remote (:func:`repository_key`: the same
    path, the same URL but for credentials) is that remote, with its sync base; another
    URL has none, so renames and archives do not travel through it.

    Args:
        remote: a remote's name or a URL, as the user gave it.
        remotes: ``(name, url)`` of every configured remote.

    Returns:
        The remote's name (a bare word is taken for one), or None.
    """
    if not looks_like_url(remote):
        return remote
    key = repository_key(remote)
    return next((name for name, url in remotes if repository_key(url) == key), None)
