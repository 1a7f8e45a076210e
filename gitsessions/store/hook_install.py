"""The hooks gitsessions ships: finding them, installing them into a session repo, their status.

The shipped hooks are the files of the top-level ``hooks/`` folder (a wheel holds them as
``gitsessions/hooks_data``). Running hooks around a commit is :mod:`.hooks`.
"""

from __future__ import annotations

import importlib.resources
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import HookExists
from .faults import writes_to
from .hooks import COMMIT_HOOKS, executable_hook

if TYPE_CHECKING:
    from importlib.abc import Traversable


# -- the hooks gitsessions ships (the top-level hooks/ of the source tree) -------------------


def _shipped_folder() -> Traversable:
    # A wheel holds hooks/ as gitsessions/hooks_data (pyproject.toml maps it); a source tree
    # (an editable install, or the package on PYTHONPATH) has only hooks/ next to the package.
    packaged = importlib.resources.files("gitsessions") / "hooks_data"
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent.parent / "hooks"


#: The file next to the shipped ``pre-commit`` holding the credential shapes it checks:
#: :func:`install_hooks` writes it from the patterns its caller passes (the CLI passes the
#: redactor's shapes, :func:`~gitsessions.secrets.detectors.hook_patterns`), so the hook restates none
#: of them and needs no gitsessions to run.
SECRET_PATTERNS_FILE = "gs-secret-patterns.json"


def secret_patterns_file(patterns: Mapping[str, str]) -> bytes:
    """Return the contents of :data:`SECRET_PATTERNS_FILE` for ``patterns`` (name -> regex)."""
    doc = {"written-by": "gs hooks install pre-commit, from gs's redaction patterns; the pre-commit "
                         "hook next to this file reads them",
           "patterns": dict(patterns)}
    return (json.dumps(doc, indent=2) + "\n").encode()


def _write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.gs-tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def shipped_hooks() -> dict[str, bytes]:
    """Return the hooks shipped with gitsessions: name -> the script's bytes.

    They are the files of the top-level ``hooks/`` folder, found in the installed wheel
    (as ``gitsessions/hooks_data``) or, in a source tree, next to the package.
    """
    folder = _shipped_folder()
    return {entry.name: entry.read_bytes() for entry in sorted(folder.iterdir(), key=lambda e: e.name)
            if entry.is_file() and not entry.name.startswith((".", "_"))}


@dataclass(frozen=True)
class HookStatus:
    """One hook of a session repo as ``gs hooks list`` shows it.

    Attributes:
        name: the hook's name.
        path: ``<repo>/hooks/<name>``.
        installed: the file exists.
        executable: it is an executable file (so it runs).
        origin: ``shipped`` (identical to gs's), ``modified`` (a shipped hook's name, other
            contents), ``own`` (not one gs ships), or None when not installed.
        run_by_gs: gs runs hooks of this name around its commits.
    """

    name: str
    path: Path
    installed: bool
    executable: bool
    origin: str | None
    run_by_gs: bool


def hook_status(repo_path: Path) -> list[HookStatus]:
    """Return the hooks installed in ``<repo>/hooks`` plus the shipped ones not installed, by name.

    ``*.sample`` files and other names with a dot (such as ``.orig`` backups) are not hooks
    git runs and are left out.
    """
    shipped = shipped_hooks()
    folder = Path(repo_path) / "hooks"
    names = set(shipped)
    try:
        names.update(p.name for p in folder.iterdir() if "." not in p.name and (p.is_file() or p.is_symlink()))
    except OSError:
        pass
    out = []
    for name in sorted(names):
        path = folder / name
        installed = path.is_file()
        origin = None
        if installed:
            try:
                data = path.read_bytes()
            except OSError:
                data = None
            origin = "own" if name not in shipped else "shipped" if data == shipped[name] else "modified"
        out.append(HookStatus(name, path, installed, executable_hook(Path(repo_path), name) is not None,
                              origin, name in COMMIT_HOOKS))
    return out


@writes_to(lambda repo_path, *args, **kwargs: repo_path)
def install_hooks(repo_path: Path, names: list[str] | None = None, force: bool = False, *,
                  secret_patterns: Mapping[str, str]) -> list[tuple[str, str, str | None]]:
    """Copy shipped hooks into ``<repo>/hooks/`` and make them executable.

    With ``pre-commit`` it (re)writes :data:`SECRET_PATTERNS_FILE` next to it, before the hook,
    so the hook always finds the patterns of the gitsessions that installed it.

    Args:
        repo_path: the (existing) session repo.
        names: the hooks to install (None or empty: all shipped hooks).
        force: replace a hook that differs from the shipped one (it is kept as
            ``<name>.orig``, or ``<name>.orig.<n>`` when that is taken).
        secret_patterns: the credential shapes the ``pre-commit`` hook checks, name -> Python
            regex (compiled with ``re.DOTALL``, as :class:`~gitsessions.secrets.redact.Redactor` does).

    Returns:
        ``(name, what, backup)`` per hook: ``what`` is ``installed``, ``replaced`` (the old
        file was renamed to ``backup``), ``enabled`` (it was there but not executable) or
        ``unchanged``; ``backup`` is None unless replaced.

    Raises:
        KeyError: a name that is not a shipped hook.
        HookExists: a hook differs and ``force`` is False (nothing is installed then).
    """
    shipped = shipped_hooks()
    wanted = list(dict.fromkeys(names)) if names else list(shipped)
    unknown = [n for n in wanted if n not in shipped]
    if unknown:
        raise KeyError(", ".join(unknown))
    folder = Path(repo_path) / "hooks"
    folder.mkdir(parents=True, exist_ok=True)
    differ = []
    for name in wanted:
        path = folder / name
        if path.exists() or path.is_symlink():
            try:
                same = path.is_file() and path.read_bytes() == shipped[name]
            except OSError:
                same = False
            if not same:
                differ.append(name)
    if differ and not force:
        raise HookExists(differ, str(folder))
    if "pre-commit" in wanted:
        _write(folder / SECRET_PATTERNS_FILE, secret_patterns_file(secret_patterns))
    done = []
    for name in wanted:
        path = folder / name
        what, backup = "installed", None
        if name in differ:
            backup_path, n = folder / f"{name}.orig", 0
            while backup_path.exists() or backup_path.is_symlink():
                n += 1
                backup_path = folder / f"{name}.orig.{n}"
            os.replace(path, backup_path)
            what, backup = "replaced", str(backup_path)
        elif path.exists():
            what = "unchanged" if executable_hook(folder.parent, name) else "enabled"
        if what in ("installed", "replaced"):
            _write(path, shipped[name])
        mode = os.stat(path).st_mode & 0o7777
        os.chmod(path, mode | (mode & 0o444) >> 2)  # chmod +x for whoever may read it (store/privacy.py)
        done.append((name, what, backup))
    return done


def backup_remote(repo_path: Path) -> tuple[str, str | None]:
    """Return the remote the shipped post-commit pushes to and its URL (None: not configured).

    The name is ``git config gitsessions.backupRemote``, default ``backup``.
    """
    from dulwich.config import ConfigFile

    try:
        config = ConfigFile.from_path(str(Path(repo_path) / "config"))
    except (OSError, ValueError):
        return "backup", None
    try:
        name = config.get((b"gitsessions",), b"backupRemote").decode("utf-8", "replace") or "backup"
    except KeyError:
        name = "backup"
    try:
        url = config.get((b"remote", name.encode()), b"url").decode("utf-8", "replace")
    except KeyError:
        url = None
    return name, url
