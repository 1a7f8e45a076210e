"""Who may read the session repo: its owner only, unless the repo says it is shared.

Conversations are as sensitive as ``~/.ssh``: what gs writes in the repo is
created readable by its owner only (directories ``700``, files ``600``, objects ``400``),
whatever the umask. A repo that opts into sharing with git's own setting
(``git config core.sharedRepository group``) is honoured as git honours it: the group (or
everybody, for ``all``) gets what git gives it. The rule lives here; the command line
applies :func:`umask_for` to the process, so every file gs and the libraries under it
create follows it, and the store creates the repo's folder ``700`` itself.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from .layout import is_repo

if TYPE_CHECKING:  # dulwich is imported when a repo is read, not by the command line's start
    from dulwich.file import SharedPerm
    from dulwich.repo import Repo

#: The umask of a repo that is not shared: nothing for the group or others.
PRIVATE_UMASK = 0o077


def sharing(repo_path: Path) -> SharedPerm | None:
    """Return the repo's ``core.sharedRepository`` as dulwich parses it (None: not shared).

    A repo not created yet, or whose config cannot be read, is not shared.

    Raises:
        RepoError: a mode that leaves the owner unable to read and write (``0006``), which git
            refuses too ("the owner of files must always have read and write permissions").
    """
    try:
        text = (repo_path / "config").read_bytes().lower()
    except OSError:
        return None
    if b"sharedrepository" not in text and b"include" not in text:
        return None  # nothing to parse: the usual repo, read without importing dulwich (the chat's start)
    from dulwich.config import ConfigFile
    from dulwich.repo import parse_shared_repository

    from ..errors import RepoError

    try:
        value = ConfigFile.from_path(str(repo_path / "config")).get((b"core",), b"sharedRepository")
    except (KeyError, OSError, ValueError):
        return None
    perm = parse_shared_repository(value)
    if perm is not None and perm.replace and perm.tweak & 0o600 != 0o600:
        raise RepoError(str(repo_path), f"its core.sharedRepository={value.decode(errors='replace')} leaves "
                        "the owner unable to read and write (git refuses it too); set one git accepts: "
                        "git config core.sharedRepository group")
    return perm


def foreign_owner(repo_path: Path) -> str | None:
    """The account that owns the repo's folder when it is not this process's (None: ours, or no repo yet).

    gs writes there and runs the repo's hooks as this account, so a repo another account
    owns (or made ready for one: an empty folder of theirs) is refused, as git refuses a
    repository of "dubious ownership".
    """
    try:
        uid = repo_path.stat().st_uid
    except OSError:
        return None
    if uid == os.geteuid():
        return None
    try:
        import pwd

        return pwd.getpwuid(uid).pw_name
    except (ImportError, KeyError):
        return f"uid {uid}"


def allowed_bits(perm: SharedPerm | None) -> int:
    """The permission bits the group and others may have under ``perm`` (0 when not shared).

    git's rule (``calc_shared_perm``): the setting's bits, with read giving execute on
    folders.
    """
    if perm is None:
        return 0
    return (perm.tweak | (perm.tweak & 0o444) >> 2) & 0o077


def new_file_mode(mode: int = 0o666) -> int:
    """The mode ``os.open(path, flags, mode)`` gives a new file under this process's umask.

    Read from ``/proc/self/status`` where there is one: setting the umask to read it back
    would change it for every thread meanwhile (a file another thread makes then gets it).
    """
    try:
        with open("/proc/self/status", "rb") as f:
            umask = next(int(line.split()[1], 8) for line in f if line.startswith(b"Umask:"))
    except (OSError, StopIteration, ValueError, IndexError):
        umask = os.umask(0o077)
        os.umask(umask)
    return mode & ~umask


def umask_for(perm: SharedPerm | None) -> int:
    """The umask that gives new files and folders exactly what ``perm`` allows the group and others."""
    return PRIVATE_UMASK & ~allowed_bits(perm)


@dataclass(frozen=True)
class Exposed:
    """Paths under a repo that the group or others may use beyond what its sharing allows.

    Attributes:
        paths: the paths, folders first as found.
        allowed: the group and other bits the repo's sharing allows.
        unshared: of a shared repo, the paths that lack what git's sharing gives the group
            (made before the repo was shared).
        perm: the repo's sharing.
    """

    paths: tuple[Path, ...]
    allowed: int
    unshared: tuple[Path, ...] = ()
    perm: SharedPerm | None = None


#: A path as a string or a Path: what :func:`_stats` and :func:`_over` take, and give back.
_P = TypeVar("_P", str, Path)


def _stats(paths: Iterable[_P]) -> Iterator[tuple[_P, os.stat_result]]:
    """Each of ``paths`` that is there and no symbolic link, with its ``lstat``."""
    for path in paths:
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISLNK(st.st_mode):
            yield path, st


def _over(paths: Iterable[_P], allowed: int) -> list[_P]:
    """The ``paths`` whose group or other bits go beyond ``allowed`` (symbolic links skipped)."""
    return [path for path, st in _stats(paths) if stat.S_IMODE(st.st_mode) & 0o077 & ~allowed]


def exposed(repo_path: Path, perm: SharedPerm | None, *, walk: bool = True) -> Exposed:
    """Find what under ``repo_path`` others may read or write beyond ``perm``.

    Args:
        repo_path: the session repo (absent, or a folder that is no repo: nothing is exposed).
        perm: its sharing (:func:`sharing`).
        walk: look at every file and folder; False looks only at the repo's folder and the
            folders that hold the conversations (``objects``, ``refs``, ``logs``, ``gs``), a
            few stats, for the check on every run.

    Returns:
        What is exposed.
    """
    allowed = allowed_bits(perm)
    repo_path = repo_path.resolve()  # a repo reached through a symbolic link: its own folder counts
    if not is_repo(repo_path):  # none yet, or a folder of other things, which gs never touches
        return Exposed((), allowed, perm=perm)
    paths: list[Path]
    if walk:
        paths = [Path(root, name) for root, _dirs, files in os.walk(repo_path) for name in ("", *files)]
    else:
        paths = [repo_path, *(repo_path / name for name in ("objects", "refs", "logs", "gs"))]
    unshared = tuple(_under(paths, perm)) if perm is not None and walk else ()
    return Exposed(tuple(_over(paths, allowed)), allowed, unshared, perm)


def links_out(repo_path: Path) -> list[tuple[Path, Path]]:
    """The symbolic links under ``repo_path`` that lead out of it, as ``(link, where it leads)``.

    What gs writes through one (the prompt history, the journal) lands where the link
    leads, as private as that place is: :func:`exposed` cannot vouch for it.
    """
    root = repo_path.resolve()
    if not is_repo(root):
        return []
    found = []
    for folder, dirs, files in os.walk(root):
        for name in (*dirs, *files):
            path = Path(folder, name)
            if path.is_symlink():
                target = path.resolve()
                if not target.is_relative_to(root):
                    found.append((path, target))
    return found


def _shared_mode(mode: int, is_dir: bool, perm: SharedPerm) -> int:
    """The mode git's sharing gives a path of ``mode`` (dulwich's ``adjust_shared_perm``, computed)."""
    from dulwich.file import calc_shared_perm

    new = calc_shared_perm(mode, perm)
    if is_dir:
        new |= (new & 0o444) >> 2
        if new & 0o060:
            new |= stat.S_ISGID
    return new


def _under(paths: Iterable[Path], perm: SharedPerm) -> list[Path]:
    """The ``paths`` lacking bits git's sharing ``perm`` gives them (symbolic links skipped)."""
    return [path for path, st in _stats(paths)
            if _shared_mode(stat.S_IMODE(st.st_mode), stat.S_ISDIR(st.st_mode), perm) & ~stat.S_IMODE(st.st_mode)]


def tighten_packs(repo: Repo) -> None:
    """Take from the repo's packs what its sharing does not allow; call after writing a pack.

    dulwich makes every pack and index it writes ``0444`` whatever the umask (a fetch, a
    repack), where git gives ``0444`` less the umask: readable by every account.
    """
    store = repo.object_store
    folder = Path(store.pack_dir)
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return
    # Names joined as strings: a Path interns each of its parts, and a pack folder can be long.
    over = _over((os.path.join(folder, n) for n in names), allowed_bits(store.shared_perm))
    make_private(Exposed(tuple(map(Path, over)), allowed_bits(store.shared_perm)))


def make_private(found: Exposed) -> tuple[int, list[tuple[Path, str]]]:
    """Give the paths of ``found`` what the repo's sharing says: no more, and no less.

    Each of ``found.paths`` loses the group and other bits its sharing does not allow; each of
    ``found.unshared`` gains what the sharing gives it.

    A path that cannot be changed (another account's file, a read-only disk) is passed over
    and named, with why; the others are changed all the same.

    Returns:
        ``(changed, failed)``: how many paths were changed, and ``(path, reason)`` of each not.
    """
    changed, failed = 0, []
    for path in dict.fromkeys((*found.paths, *found.unshared)):
        try:
            st = os.lstat(path)
            mode = stat.S_IMODE(st.st_mode) & ~(0o077 & ~found.allowed)
            if found.perm is not None:  # and what a repo shared after its files were made lacks
                mode = _shared_mode(mode, stat.S_ISDIR(st.st_mode), found.perm) & ~(0o077 & ~found.allowed)
            os.chmod(path, mode)
            changed += 1
        except OSError as exc:
            failed.append((path, exc.strerror or str(exc)))
    return changed, failed


def fix_advice(repo_path: Path, perm: SharedPerm | None) -> str:
    """What to run to take the exposure away: ``gs doctor --fix``, or by hand the ``chmod`` it does."""
    if perm is None:
        return f"gs doctor --fix (or: chmod -R go-rwx {repo_path})"
    return "gs doctor --fix"
