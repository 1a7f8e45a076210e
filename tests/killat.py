"""Run a real ``gs`` command in a process of its own, stop it at a chosen step, and ``kill -9`` it there.

The step is a git lock the command takes (the moment dulwich has made ``<file>.lock``, before
it writes it) or a call it makes (just before or after a function of gs or dulwich runs,
when its arguments match). The process says where it stopped on a pipe of its own, then
waits to be killed; what the kill leaves is exactly what a kill at that moment leaves.

As a script (what :func:`stopped_at` starts): ``python killat.py ARGS...`` (gs's) with the step in
``KILLAT_LOCK`` (a regular expression of the lock file's path), or ``KILLAT_CALL``
(``before|after:module:qualified.name``) and ``KILLAT_MATCH`` (a regular expression the
call's arguments must match), and the pipe's descriptor in ``KILLAT_FD`` (or a file's name in
``KILLAT_FILE``, for a gs that another gs starts: :func:`as_python`).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import re
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

#: How long a step may take before the test gives up (a safety net, no figure of speed).
TIMEOUT = 60


@dataclass
class Stopped:
    """A gs command stopped at a step, alive until :meth:`kill`.

    Attributes:
        at: what the process said where it stopped (the lock file, or the call).
        proc: the process.
    """

    at: str
    proc: subprocess.Popen

    def kill(self) -> str:
        """``kill -9`` it (where it stopped); return what it had said on stderr."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(TIMEOUT)
        assert self.proc.returncode == -signal.SIGKILL, self.proc.returncode
        assert self.proc.stderr is not None
        with self.proc.stderr:
            return self.proc.stderr.read().decode("utf-8", "replace")


@contextlib.contextmanager
def stopped_at(*args: str, lock: str | None = None, call: str | None = None, match: str = "",
               env: dict[str, str] | None = None) -> Iterator[Stopped]:
    """Run ``gs ARGS`` until the step and keep it stopped there for the block; it is killed after (``kill -9``).

    The test fails when the command ends without getting to the step.

    Args:
        args: the gs command line.
        lock: stop when a git lock whose path matches this regular expression is made.
        call: stop at a call, ``before|after:module:qualified.name``.
        match: what the call's arguments (their repr) must match.
        env: more environment.
    """
    read, write = os.pipe()
    steps = {"KILLAT_FD": str(write), "KILLAT_LOCK": lock or "", "KILLAT_CALL": call or "", "KILLAT_MATCH": match}
    proc = subprocess.Popen([sys.executable, __file__, *args], env={**os.environ, **(env or {}), **steps},
                            pass_fds=(write,), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    os.close(write)
    stopped = Stopped("", proc)
    try:
        with open(read, "rb") as pipe:  # the line, or nothing when it ended first
            ready, _, _ = select.select([pipe], [], [], TIMEOUT)
            said = pipe.readline().decode() if ready else ""
        if not said.startswith("stopped "):
            proc.kill()
            proc.wait(TIMEOUT)
            err = proc.stderr.read().decode("utf-8", "replace") if proc.stderr else ""
            raise AssertionError(f"gs {' '.join(args)} never got to the step (exit {proc.returncode}): {err}")
        stopped.at = said.split(" ", 2)[2].strip()
        yield stopped
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait(TIMEOUT)
        if proc.stderr is not None and not proc.stderr.closed:
            proc.stderr.close()


def kill_at(*args: str, lock: str | None = None, call: str | None = None, match: str = "",
            env: dict[str, str] | None = None) -> str:
    """Run ``gs ARGS`` until the step, then ``kill -9`` it there; return where it stopped (see :func:`stopped_at`)."""
    with stopped_at(*args, lock=lock, call=call, match=match, env=env) as stopped:
        stopped.kill()
    return stopped.at


def as_python(folder: Path, lock: str, said: Path) -> tuple[str, dict[str, str]]:
    """A program to stand for ``python`` where gs starts ``python -m gitsessions ARGS`` (in the background).

    It runs those ARGS here, stopped at the git lock whose path matches ``lock``; where it
    stopped goes to the file ``said`` (``stopped <pid> <lock>``).

    Args:
        folder: where to write the program.
        lock: a regular expression of the lock file's path.
        said: the file the stop is told in.

    Returns:
        The program, and the environment it needs.
    """
    program = folder / "python-killat"
    program.write_text(f'#!/bin/sh\nshift 2\nexec {sys.executable} {__file__} "$@"\n')  # drops "-m gitsessions"
    program.chmod(0o755)
    return str(program), {"KILLAT_FILE": str(said), "KILLAT_LOCK": lock, "KILLAT_CALL": "", "KILLAT_MATCH": ""}


def _stop(fd: int, at: str) -> None:
    os.write(fd, f"stopped {os.getpid()} {at}\n".encode())
    while True:
        time.sleep(3600)  # until the kill


def _stop_at_lock(fd: int, pattern: re.Pattern[str]) -> None:
    from dulwich import file

    made = file._GitFile.__init__

    @functools.wraps(made)
    def init(self, *args, **kwargs):
        made(self, *args, **kwargs)
        lockfile = os.fsdecode(self._lockfilename)
        if pattern.search(lockfile):
            _stop(fd, lockfile)

    file._GitFile.__init__ = init


def _stop_at_call(fd: int, call: str, pattern: re.Pattern[str]) -> None:
    when, module, name = call.split(":")
    owner = importlib.import_module(module)
    *path, attr = name.split(".")
    for part in path:
        owner = getattr(owner, part)
    function = getattr(owner, attr)

    @functools.wraps(function)
    def stopping(*args, **kwargs):
        hit = pattern.search(repr((args, kwargs)))
        if hit and when == "before":
            _stop(fd, name)
        result = function(*args, **kwargs)
        if hit and when == "after":
            _stop(fd, name)
        return result

    setattr(owner, attr, stopping)


def main() -> int:
    """Run gs with the step set up (see the module's docstring)."""
    said = os.environ.pop("KILLAT_FILE", "")  # a gs another gs starts (in the background) says it in a file
    fd = os.open(said, os.O_WRONLY | os.O_CREAT | os.O_APPEND) if said else int(os.environ.pop("KILLAT_FD"))
    lock, call = os.environ.pop("KILLAT_LOCK"), os.environ.pop("KILLAT_CALL")
    pattern = re.compile(os.environ.pop("KILLAT_MATCH"))
    if lock:
        _stop_at_lock(fd, re.compile(lock))
    if call:
        _stop_at_call(fd, call, pattern)
    from gitsessions import cli

    return cli.run(sys.argv[1:], prog_name="gs")


if __name__ == "__main__":
    sys.exit(main())
