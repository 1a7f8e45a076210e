"""Git's commit hooks for the commits gs builds by hand.

dulwich runs hooks only inside ``porcelain.commit``, and its hook classes take
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
Installing the hooks gitsessions ships is :mod:`.hook_install`.
"""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..errors import HookRefused

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


class CommitHooks:
    """Runs the commit hooks of one repository; the caller builds it and hands it to the store.

    The hooks are looked up at every commit (one ``stat`` per hook name), so a hook installed
    or disabled while a chat runs counts from the next save. A failed ``post-commit`` cannot
    undo the save: its warning is returned and appended to :attr:`warnings` for whoever
    built the runner to show.

    Args:
        repo_path: the (bare) repository.
        base_env: the environment hooks run in, before gs adds its variables (the CLI passes
            its own); None gives them only gs's variables and a standard ``PATH``.
        warnings: where warnings go (the CLI passes the list it prints); default a new list.
    """

    def __init__(self, repo_path: str | os.PathLike, base_env: Mapping[str, str] | None = None,
                 warnings: list[str] | None = None):
        self.repo_path = Path(repo_path)
        self.base_env = base_env
        #: Warnings of failed ``post-commit`` hooks, in order.
        self.warnings: list[str] = warnings if warnings is not None else []

    @property
    def found(self) -> dict[str, Path | None]:
        """Each commit hook name -> its executable file, or None (looked up now)."""
        return {name: executable_hook(self.repo_path, name) for name in COMMIT_HOOKS}

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
        pre, msg = executable_hook(self.repo_path, "pre-commit"), executable_hook(self.repo_path, "commit-msg")
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
        """Run ``post-commit`` (the branch has moved); return a warning when it failed (also kept).

        Args:
            session_id: the session saved.
            commit: the commit made.

        Returns:
            None when the hook is absent or succeeded, else a one-line warning.
        """
        post = executable_hook(self.repo_path, "post-commit")
        if post is None:
            return None
        run = run_hook("post-commit", post, [], self._env(GS_SESSION=session_id, GS_COMMIT=commit),
                       self.repo_path)
        if run.ok:
            return None
        lines = [line.strip() for line in run.output.splitlines() if line.strip()]
        why = " | ".join(lines[-3:]) if lines else "it printed nothing"
        how = f"exit status {run.status}" if run.status is not None else "it could not be run"
        warning = (f"the post-commit hook failed ({how}): {why}; the save itself is done "
                   f"({session_id} at {commit[:7]}); fix the hook or disable it with: chmod -x {post}")
        self.warnings.append(warning)
        return warning
