"""Git's commit hooks for the commits gs builds by hand.

dulwich runs hooks only inside ``porcelain.commit`` (design.md), and its hook classes take
no environment and do not capture output, so this module runs them itself, with git's
meaning (githooks(5)):

- ``pre-commit`` runs before the commit is made; a non-zero exit stops the commit.
- ``commit-msg`` gets the path of a file holding the message and may edit it (the edited
  message is used); a non-zero exit stops the commit.
- ``post-commit`` runs after the branch moved; its failure cannot undo anything, so it only
  yields a warning.

Only executable regular files run (like git; ``chmod -x`` disables a hook). Without hooks a
save costs one ``stat`` per hook name. Hooks run with cwd = the repository, stdin from
``/dev/null`` and ``GIT_DIR`` set; gs adds ``GS_SESSION`` (the session id),
``GS_SESSION_FILE`` / ``GS_NEW_EVENTS`` (files with the whole new ``session.jsonl`` and with
only its new lines; ``pre-commit`` and ``commit-msg``) and ``GS_COMMIT`` (``post-commit``).
Their output (stdout and stderr together) is captured into a file, not a pipe, so a hook
that starts a background job never makes a save wait for it.

Nothing here reads the environment: the caller passes the base environment hooks run in.
"""

from __future__ import annotations

import errno
import importlib.resources
import json
import os
import stat
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import HookExists, HookRefused

if TYPE_CHECKING:
    from importlib.abc import Traversable

#: The hooks gs runs around each commit, in git's order.
COMMIT_HOOKS = ("pre-commit", "commit-msg", "post-commit")
#: Lines of a hook's output kept for messages.
OUTPUT_LINES = 20
#: Bytes of a hook's output read back (the end of it).
_OUTPUT_TAIL = 64 * 1024
#: PATH for hooks when the caller passes no environment.
_FALLBACK_PATH = "/usr/local/bin:/usr/bin:/bin"


def executable_hook(repo_path: Path, name: str) -> Path | None:
    """Return ``<repo>/hooks/<name>`` when it is an executable regular file, else None."""
    path = repo_path / "hooks" / name
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or not os.access(path, os.X_OK):
        return None
    return path


@dataclass(frozen=True)
class HookRun:
    """One finished hook.

    Attributes:
        name: the hook's name.
        path: the hook file.
        status: exit status (negative: killed by that signal; None: it could not be started).
        output: the last :data:`OUTPUT_LINES` lines of its stdout and stderr.
    """

    name: str
    path: Path
    status: int | None
    output: str

    @property
    def ok(self) -> bool:
        """True when the hook exited with status 0."""
        return self.status == 0


def run_hook(name: str, path: Path, args: list[str], env: Mapping[str, str], cwd: Path) -> HookRun:
    """Run one hook and wait for it; never raises for what the hook does.

    A file without a ``#!`` line is run by ``/bin/sh``, as git does.
    """
    with tempfile.TemporaryFile() as out:
        status: int | None
        try:
            status = _call([str(path), *args], out, env, cwd)
        except OSError as exc:
            if exc.errno == errno.ENOEXEC:
                try:
                    status = _call(["/bin/sh", str(path), *args], out, env, cwd)
                except OSError as exc2:
                    status, note = None, f"cannot run {path}: {exc2.strerror or exc2}"
                    out.write(note.encode())
            else:
                status, note = None, f"cannot run {path}: {exc.strerror or exc}"
                out.write(note.encode())
        size = out.seek(0, os.SEEK_END)
        out.seek(max(0, size - _OUTPUT_TAIL))
        text = out.read().decode("utf-8", "replace")
    lines = text.splitlines()[-OUTPUT_LINES:]
    return HookRun(name, path, status, "\n".join(lines))


def _call(argv: list[str], out, env: Mapping[str, str], cwd: Path) -> int:
    proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                          env=dict(env), cwd=str(cwd))
    return proc.returncode


def clean_message(raw: bytes) -> bytes:
    """Tidy a message a ``commit-msg`` hook wrote, like git's ``--cleanup=whitespace``.

    Trailing whitespace is cut from every line, runs of blank lines become one, leading and
    trailing blank lines go, and the message ends with one newline (empty stays empty).
    """
    lines = [line.rstrip() for line in raw.replace(b"\r\n", b"\n").split(b"\n")]
    out: list[bytes] = []
    for line in lines:
        if not line and (not out or not out[-1]):
            continue
        out.append(line)
    while out and not out[-1]:
        out.pop()
    return b"\n".join(out) + b"\n" if out else b""


def subject_of(message: bytes) -> str:
    """Return the first line of a commit message as text."""
    return message.split(b"\n", 1)[0].decode("utf-8", "replace")


class CommitHooks:
    """The commit hooks of one repository, found once per commit.

    Args:
        repo_path: the (bare) repository.
        base_env: the environment hooks run in, before gs adds its variables (the CLI passes
            its own); None gives them only gs's variables and a standard ``PATH``.
    """

    def __init__(self, repo_path: Path, base_env: Mapping[str, str] | None = None):
        self.repo_path = Path(repo_path)
        self.base_env = base_env
        self.found = {name: executable_hook(self.repo_path, name) for name in COMMIT_HOOKS}

    def _env(self, **extra: str) -> dict[str, str]:
        env = dict(self.base_env) if self.base_env is not None else {"PATH": _FALLBACK_PATH}
        env["GIT_DIR"] = str(self.repo_path)
        env.update(extra)
        return env

    def before(self, session_id: str, message: bytes, session_file: bytes | Callable[[], bytes],
               new_events: bytes, action: str = "save") -> bytes:
        """Run ``pre-commit`` then ``commit-msg``; return the message to commit.

        Args:
            session_id: the session being saved.
            message: the commit message gs built.
            session_file: the whole new ``session.jsonl`` (or a function returning it, called
                only when a hook will run).
            new_events: the lines this commit adds.
            action: ``save`` or ``fork`` (for the refusal's message).

        Raises:
            HookRefused: a hook exited non-zero, could not run, or left the message empty.
        """
        pre, msg = self.found["pre-commit"], self.found["commit-msg"]
        if pre is None and msg is None:
            return message
        tmp_root = self.repo_path / "gs" / "tmp"
        tmp_root.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix="hook-", dir=tmp_root) as tmp:
            folder = Path(tmp)
            full = session_file() if callable(session_file) else session_file
            (folder / "session.jsonl").write_bytes(full)
            (folder / "new-events.jsonl").write_bytes(new_events)
            env = self._env(GS_SESSION=session_id, GS_SESSION_FILE=str(folder / "session.jsonl"),
                            GS_NEW_EVENTS=str(folder / "new-events.jsonl"))
            if pre is not None:
                run = run_hook("pre-commit", pre, [], env, self.repo_path)
                if not run.ok:
                    raise HookRefused(run.name, str(pre), run.status, run.output, action)
            if msg is not None:
                msg_file = folder / "COMMIT_EDITMSG"
                msg_file.write_bytes(message)
                run = run_hook("commit-msg", msg, [str(msg_file)], env, self.repo_path)
                if not run.ok:
                    raise HookRefused(run.name, str(msg), run.status, run.output, action)
                try:
                    edited = clean_message(msg_file.read_bytes())
                except OSError as exc:
                    raise HookRefused("commit-msg", str(msg), run.status,
                                      f"the message file is gone ({exc.strerror})", action) from None
                if not edited:
                    raise HookRefused("commit-msg", str(msg), run.status,
                                      run.output + "\nthe hook left the commit message empty", action)
                message = edited
        return message

    def after(self, session_id: str, commit: str) -> str | None:
        """Run ``post-commit`` (the branch has moved); return a warning when it failed."""
        post = self.found["post-commit"]
        if post is None:
            return None
        run = run_hook("post-commit", post, [], self._env(GS_SESSION=session_id, GS_COMMIT=commit),
                       self.repo_path)
        if run.ok:
            return None
        lines = [line.strip() for line in run.output.splitlines() if line.strip()]
        why = " | ".join(lines[-3:]) if lines else "it printed nothing"
        how = f"exit status {run.status}" if run.status is not None else "it could not be run"
        return (f"the post-commit hook failed ({how}): {why}; the save itself is done "
                f"({session_id} at {commit[:7]}); fix the hook or disable it with: chmod -x {post}")


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
#: redactor's :data:`~gitsessions.redact.PATTERNS`), so the hook restates none of them and
#: needs no gitsessions to run.
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
            regex (compiled with ``re.DOTALL``, as :class:`~gitsessions.redact.Redactor` does).

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
        os.chmod(path, (os.stat(path).st_mode & 0o7777) | 0o755)
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
