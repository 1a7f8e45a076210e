"""``run_command``: one shell command in the working directory, with a timeout and an output cap."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Mapping
from pathlib import Path

from .files import ToolFailed

#: Seconds a command may run when the model names no timeout, and the most it may name.
DEFAULT_TIMEOUT_S = 30.0
MAX_TIMEOUT_S = 600.0
#: Most characters of output returned: the first and last halves are kept around a cut note.
OUTPUT_CHARS = 16_000


def _capped(text: str, limit: int = OUTPUT_CHARS) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters cut ...]\n{text[-half:]}"


def run_command(root: Path, command: str, timeout: float | None = None, env: Mapping[str, str] | None = None) -> str:
    """Run ``command`` with ``sh -c`` in ``root``; return its exit status and output (stdout and stderr as one).

    The command gets no input (stdin is ``/dev/null``) and runs in a process group of its
    own, so a timeout ends what it started too, and the terminal's Ctrl+C goes to the chat.
    Its environment is ``env`` alone, never gs's own (that holds the API key).

    Args:
        root: the working directory.
        command: the shell command.
        timeout: seconds it may run (default :data:`DEFAULT_TIMEOUT_S`, at most :data:`MAX_TIMEOUT_S`).
        env: the command's environment variables (None: none; ``sh`` then searches its default ``PATH``).

    Returns:
        ``exit status N`` and the output, cut to :data:`OUTPUT_CHARS`.

    Raises:
        ToolFailed: an empty command, a bad timeout, a timeout reached (with what it printed),
            or a command that could not be started.
    """
    if not isinstance(command, str) or not command.strip():
        raise ToolFailed("a command is needed")
    try:
        limit = DEFAULT_TIMEOUT_S if timeout is None else float(timeout)
    except (TypeError, ValueError):
        raise ToolFailed(f"timeout must be a number of seconds, not {timeout!r}") from None
    if not 0 < limit <= MAX_TIMEOUT_S:
        raise ToolFailed(f"timeout must be above 0 and at most {MAX_TIMEOUT_S:g} seconds")
    try:
        proc = subprocess.Popen(["/bin/sh", "-c", command], cwd=root, env=dict(env or {}), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    except OSError as exc:
        raise ToolFailed(f"the command could not start: {exc.strerror or exc}") from None
    try:
        out, _ = proc.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        try:
            out, _ = proc.communicate(timeout=1.0)
        except subprocess.TimeoutExpired:  # a process that left the group still holds the pipe
            proc.wait()
            out = b""
        printed = out.decode("utf-8", errors="replace")
        raise ToolFailed(f"timed out after {limit:g} s and was stopped" +
                         (f"; it printed:\n{_capped(printed)}" if printed else "")) from None
    except BaseException:  # Ctrl+C while it runs: nothing is left running behind the chat
        _kill_group(proc)
        proc.wait()
        raise
    return f"exit status {proc.returncode}\n{_capped(out.decode('utf-8', errors='replace'))}"


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
