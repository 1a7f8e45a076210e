"""``run_command``: one shell command in the working directory, with a timeout and an output cap.

The output is read as it comes, never kept whole: the first and the last characters within
:data:`OUTPUT_CHARS` are kept, what comes between is only counted, and the model is told
how much was left out. The command's processes — the ones that left its session too — end
with it on a timeout or Ctrl+C (:mod:`.processes`), and the model is told which were killed,
and which a command that ended left running.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path

from . import processes
from .files import ToolFailed, ToolInterrupted

#: Seconds a command may run when the model names no timeout, and the most it may name.
DEFAULT_TIMEOUT_S = 30.0
MAX_TIMEOUT_S = 600.0
#: Most characters of output returned: the first and last halves are kept around a note of what was left out.
OUTPUT_CHARS = 16_000
#: Bytes read from the command's output at a time (a pipe holds 64 KiB on Linux).
_READ_BYTES = 65_536
#: Most bytes read after the command was killed (a process that could not be may go on writing).
_DRAIN_BYTES = 1 << 20


class Kept:
    """A command's output as it comes: its first and last characters within a cap, the rest only counted.

    Memory stays within a few times the cap, however much is added.

    Args:
        limit: most characters :meth:`text` returns besides its note (half from the start, half from the end).

    Attributes:
        bytes: bytes added so far.
        lines: line ends among them.
    """

    def __init__(self, limit: int = OUTPUT_CHARS):
        self._half = limit // 2
        self._room = 4 * self._half + 4  # bytes: a UTF-8 character is at most 4 (and one may be cut)
        self._head = bytearray()
        self._tail = bytearray()
        self._dropped = False
        self.bytes = 0
        self.lines = 0

    def add(self, data: bytes) -> None:
        """Take the next piece of output."""
        self.bytes += len(data)
        self.lines += data.count(b"\n")
        room = self._room - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if data:
            self._tail += data
            if len(self._tail) > 2 * self._room:  # trimmed now and then, not at every piece
                del self._tail[:len(self._tail) - self._room]
                self._dropped = True

    def text(self) -> str:
        """The output as the model reads it (UTF-8; bytes that are not become U+FFFD).

        Returns:
            All of it when it is within the cap; else its start, a line saying how many
            bytes and lines were left out, and its end.
        """
        if not self._dropped:
            whole = bytes(self._head + self._tail).decode("utf-8", "replace")
            if len(whole) <= 2 * self._half:
                return whole
            head, tail = whole[:self._half], whole[-self._half:]
        else:
            head = self._head.decode("utf-8", "replace")[:self._half]
            tail = self._tail.decode("utf-8", "replace")[-self._half:]
        left = self.bytes - len(head.encode()) - len(tail.encode())
        lines = self.lines - head.count("\n") - tail.count("\n")
        return f"{head}\n[... {left:,} bytes ({lines:,} lines) of output left out ...]\n{tail}"

    def printed(self) -> str:
        """``; it printed:`` and the :meth:`text`, or "" when nothing was."""
        return f"; it printed:\n{self.text()}" if self.bytes else ""


def run_command(root: Path, command: str, timeout: float | None = None, env: Mapping[str, str] | None = None) -> str:
    """Run ``command`` with ``sh -c`` in ``root``; return its exit status and output (stdout and stderr as one).

    The command gets no input (stdin is ``/dev/null``) and runs in a session of its own, so
    the terminal's Ctrl+C goes to the chat; on a timeout or Ctrl+C every process it started
    is killed, those that left its session too. Its environment is ``env`` alone, never gs's
    own (that holds the API key).

    Args:
        root: the working directory.
        command: the shell command.
        timeout: seconds it may run (default :data:`DEFAULT_TIMEOUT_S`, at most :data:`MAX_TIMEOUT_S`).
        env: the command's environment variables (None: none; ``sh`` then searches its default ``PATH``).

    Returns:
        ``exit status N`` (and the processes it left running, if any), then the output
        within :data:`OUTPUT_CHARS` (see :class:`Kept`).

    Raises:
        ToolFailed: an empty command, a bad timeout, a timeout reached (with what was killed
            and what it printed), or a command that could not be started.
        ToolInterrupted: Ctrl+C while it ran (with what was killed and what it printed).
    """
    if not isinstance(command, str) or not command.strip():
        raise ToolFailed("a command is needed")
    limit = _seconds(timeout)
    out = Kept()
    with processes.watching() as family:
        began = time.monotonic()
        proc: subprocess.Popen[bytes] | None = None
        try:  # from before the start: a Ctrl+C as it starts (the command may run already) stops it too
            proc = _start(root, command, env)
            family.started(proc.pid)
            if not _read(proc, out, began + limit):
                stopped = _stop(proc, family, out)
                raise ToolFailed(f"timed out after {limit:g} s " + ("" if stopped.left else "and was stopped ")
                                 + stopped.said() + out.printed())
            left = family.running()
            family.leave(left)
            code = proc.wait()
        except ToolFailed:
            raise
        except BaseException as exc:  # Ctrl+C while it runs: nothing is left running behind the chat
            stopped = _stop(proc, family, out)
            if isinstance(exc, KeyboardInterrupt):
                raise ToolInterrupted(f"stopped by the user (Ctrl+C) after {time.monotonic() - began:.1f} s "
                                      f"{stopped.said()}{out.printed()}") from None
            raise
        finally:
            if proc is not None and proc.stdout is not None:
                proc.stdout.close()
    return f"exit status {code}{_left_note(left)}\n{out.text()}"


def _start(root: Path, command: str, env: Mapping[str, str] | None) -> subprocess.Popen[bytes]:
    """Start ``sh -c command`` as the leader of a session of its own, its output (stderr too) in one pipe."""
    try:
        return subprocess.Popen(["/bin/sh", "-c", command], cwd=root, env=dict(env or {}), stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    except OSError as exc:
        raise ToolFailed(f"the command could not start: {exc.strerror or exc}") from None


def _seconds(timeout: object) -> float:
    try:
        limit = DEFAULT_TIMEOUT_S if timeout is None else float(timeout)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ToolFailed(f"timeout must be a number of seconds, not {timeout!r}") from None
    if not 0 < limit <= MAX_TIMEOUT_S:
        raise ToolFailed(f"timeout must be above 0 and at most {MAX_TIMEOUT_S:g} seconds")
    return limit


def _read(proc: subprocess.Popen[bytes], out: Kept, deadline: float) -> bool:
    """Read the output into ``out`` until it closes and the command ends; False when ``deadline`` comes first.

    The command's first process is left unreaped (its pid, session and group stay its own).
    """
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    with selectors.DefaultSelector() as ready:
        ready.register(fd, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            if ready.select(left):
                data = os.read(fd, _READ_BYTES)
                if not data:
                    break
                out.add(data)
    return _ended(proc, deadline)


def _ended(proc: subprocess.Popen[bytes], deadline: float) -> bool:
    """Wait until ``proc`` ended, without reaping it; False when ``deadline`` comes first."""
    if not hasattr(os, "waitid"):
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
            return True
        except subprocess.TimeoutExpired:
            return False
    pause = 0.001
    while True:
        try:
            if os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                return True
        except ChildProcessError:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(pause)  # the output closed: the command is ending, or closed it and goes on
        pause = min(2 * pause, 0.05)


def _stop(proc: subprocess.Popen[bytes] | None, family: processes.Family, out: Kept) -> processes.Stopped:
    """Kill the command's processes, reap its first one, and keep what was still in the pipe.

    Args:
        proc: the command's first process (None: Ctrl+C came while it was being started).
        family: its processes.
        out: what it printed.
    """
    stopped = family.kill()
    if proc is None:
        return stopped
    proc.wait()
    if proc.stdout is None or proc.stdout.closed:
        return stopped
    fd, drained = proc.stdout.fileno(), 0
    with selectors.DefaultSelector() as ready:
        ready.register(fd, selectors.EVENT_READ)
        while drained < _DRAIN_BYTES and ready.select(0):
            data = os.read(fd, _READ_BYTES)
            if not data:
                break
            out.add(data)
            drained += len(data)
    return stopped


def _left_note(left: list[processes.Proc]) -> str:
    if not left:
        return ""
    return (f"; {processes.count(left)} it started still run{'s' if len(left) == 1 else ''} in the "
            f"background: {processes.pids(left)}")
