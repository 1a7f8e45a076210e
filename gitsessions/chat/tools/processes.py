"""A command's processes: all of them found, killed together, and the ones left named.

A command runs as the leader of a session (and process group) of its own, but a process
may leave both: ``setsid``, a daemon that forks twice. While a command runs, gs is the
*child subreaper* of everything it starts (Linux ``prctl(PR_SET_CHILD_SUBREAPER)``): a
process whose parent ends is handed to gs instead of init, so none is lost from the tree.
The command's processes are then read from ``/proc``: the leader's session and group, the
children gs gained while the command ran, and every descendant of those. Where there is no
``/proc`` (or no subreaper) less can be seen, and :attr:`Family.sees_all` says so.

One command at a time per gs process holds this (:func:`watching`): the children gs gains
while one runs are that command's.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ...text import plural

#: ``prctl`` options (linux/prctl.h).
_PR_SET_CHILD_SUBREAPER = 36
_PR_GET_CHILD_SUBREAPER = 37
#: Seconds :meth:`Family.kill` waits for killed processes to end (one in uninterruptible
#: sleep, on a dead NFS server, may never), and between its looks at ``/proc``.
KILL_WAIT_S = 2.0
_KILL_POLL_S = 0.01
#: Most processes named in a message; the rest are counted.
NAMED = 8

_ONE_AT_A_TIME = threading.Lock()
#: Processes a finished command left running that gs adopted: reaped once they end.
_left_running: set[int] = set()


@dataclass(frozen=True)
class Proc:
    """One process as ``/proc/PID/stat`` shows it.

    Attributes:
        pid: its id.
        ppid: its parent's.
        group: its process group.
        session: its session.
        state: its state letter (``Z`` a zombie, ``X`` dead; both have ended).
        start: when it started, in clock ticks since boot (a pid used again starts later).
        name: its command name (``comm``, at most 15 characters).
    """

    pid: int
    ppid: int
    group: int
    session: int
    state: str
    start: int
    name: str

    @property
    def ended(self) -> bool:
        """True once it has exited (a zombie waiting to be reaped has)."""
        return self.state in "ZX"


def table() -> dict[int, Proc] | None:
    """Every process ``/proc`` shows, by pid; None where there is no ``/proc``."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    procs: dict[int, Proc] = {}
    for name in names:
        if name.isdigit():
            proc = _read(int(name))
            if proc is not None:
                procs[proc.pid] = proc
    return procs or None


def _read(pid: int) -> Proc | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode("utf-8", "replace")
    except OSError:  # it ended meanwhile
        return None
    name, _, rest = stat.partition(" (")[2].rpartition(")")  # the name may hold spaces and ")"
    fields = rest.split()
    try:
        return Proc(pid, int(fields[1]), int(fields[2]), int(fields[3]), fields[0], int(fields[19]), name)
    except (IndexError, ValueError):
        return None


def _subreaper(on: bool) -> bool | None:
    """Make gs the child subreaper of its descendants (or stop being it).

    Returns:
        True when this call made it so, False when it was so already, None where it cannot
        be done (not Linux).
    """
    try:
        import ctypes  # here: only a command pays for it

        prctl = ctypes.CDLL(None, use_errno=True).prctl
        was = ctypes.c_int(0)
        if prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(was), 0, 0, 0) != 0:
            return None
        if bool(was.value) == on:
            return False
        return True if prctl(_PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) == 0 else None
    except (OSError, AttributeError):  # no libc to load, or no prctl in it
        return None


def _children(procs: dict[int, Proc]) -> set[tuple[int, int]]:
    me = os.getpid()
    return {(p.pid, p.start) for p in procs.values() if p.ppid == me}


def _reap(pids: Iterable[int]) -> set[int]:
    """Reap those of ``pids`` that are gs's children and have ended; return the ones that have not."""
    waiting = set()
    for pid in pids:
        try:
            if os.waitpid(pid, os.WNOHANG) == (0, 0):
                waiting.add(pid)
        except ChildProcessError:  # not gs's child (any more)
            pass
    return waiting


@dataclass(frozen=True)
class Stopped:
    """What :meth:`Family.kill` did.

    Attributes:
        killed: the processes it killed.
        left: those still running after it (one it may not signal, one that does not end).
        sees_all: False when processes that left the command's session could not be seen.
        looked: False where no process could be seen (no ``/proc``): only its group was killed.
    """

    killed: tuple[Proc, ...]
    left: tuple[Proc, ...]
    sees_all: bool
    looked: bool = True

    def said(self) -> str:
        """What the model is told: ``(3 processes killed: sh, sleep, sleep)``, and what may still run."""
        if not self.looked:
            return "(its process group was killed; processes that left it cannot be seen here and may still run)"
        parts = [f"{count(self.killed)} killed: {names(self.killed)}" if self.killed else "nothing left to kill"]
        if self.left:
            parts.append(f"{count(self.left)} could not be stopped and may still run: {pids(self.left)}")
        if not self.sees_all:
            parts.append("processes that left its session cannot be seen here and may still run")
        return "(" + "; ".join(parts) + ")"


def count(procs: tuple[Proc, ...] | list[Proc]) -> str:
    """``1 process``, ``3 processes``."""
    return plural(len(procs), "process", "processes")


def names(procs: Iterable[Proc]) -> str:
    """The processes' names, at most :data:`NAMED` of them, then how many more."""
    procs = list(procs)
    more = f" and {len(procs) - NAMED} more" if len(procs) > NAMED else ""
    return ", ".join(p.name for p in procs[:NAMED]) + more


def pids(procs: Iterable[Proc]) -> str:
    """The processes as ``pid 12 (sleep), pid 13 (sh)``, at most :data:`NAMED` of them."""
    procs = list(procs)
    more = f" and {len(procs) - NAMED} more" if len(procs) > NAMED else ""
    return ", ".join(f"pid {p.pid} ({p.name})" for p in procs[:NAMED]) + more


class Family:
    """The processes of one command: its leader and all it started.

    Made by :func:`watching`; :meth:`started` names the leader once it runs.

    Args:
        before: gs's children before the command started, as ``(pid, start)``.
        subreaper: gs is the subreaper of the command's processes (an orphan comes to gs).
    """

    def __init__(self, before: set[tuple[int, int]], subreaper: bool):
        self._before = before
        self._subreaper = subreaper
        self.leader: int | None = None

    def started(self, leader: int) -> None:
        """Name the command's first process: the leader of its own session and group."""
        self.leader = leader

    @property
    def sees_all(self) -> bool:
        """True when every process of the command can be found (``/proc`` and the subreaper)."""
        return self._subreaper and os.path.isdir("/proc/self")

    def members(self, procs: dict[int, Proc]) -> list[Proc]:
        """The command's processes in ``procs`` (ended ones too, the leader first).

        Call it before the leader is reaped: until then no other process can take its pid,
        its session's or its group's. A child gs gained while the command ran is the
        command's unless it is in gs's own session (an orphan of a process gs started
        itself: none of the command's can join that session).
        """
        me, mine, leader = os.getpid(), os.getsid(0), self.leader
        roots = {p.pid for p in procs.values()
                 if (leader is not None and leader in (p.pid, p.session, p.group))
                 or (p.ppid == me and p.session != mine and (p.pid, p.start) not in self._before)}
        below: dict[int, list[int]] = {}
        for p in procs.values():
            below.setdefault(p.ppid, []).append(p.pid)
        found, todo = set(), list(roots - {me})
        while todo:
            pid = todo.pop()
            if pid not in found and pid != me:
                found.add(pid)
                todo.extend(below.get(pid, ()))
        return sorted((procs[pid] for pid in found), key=lambda p: (p.pid != leader, p.start, p.pid))

    def running(self) -> list[Proc]:
        """The command's processes still running; those gs adopted that have ended are reaped.

        Call it once the leader has ended, before it is reaped.
        """
        procs = table()
        if procs is None:
            return []
        family = self.members(procs)
        self._reap_ended(family)
        return [p for p in family if not p.ended]

    def _reap_ended(self, family: list[Proc]) -> None:
        me = os.getpid()
        _reap(p.pid for p in family if p.ended and p.ppid == me and p.pid != self.leader)

    def kill(self) -> Stopped:
        """Kill every process of the command (``SIGKILL``), looking again until none is left.

        A process forked while the others were killed is found at the next look; gs's own
        children among them are reaped (the leader is not: its ``Popen`` reaps it). Waits
        at most :data:`KILL_WAIT_S` for the killed to end. Without a leader (the command was
        being started) the children gs gained are what is killed.

        Returns:
            What was killed and what may still run.
        """
        killed: dict[int, Proc] = {}
        refused: set[int] = set()
        deadline = time.monotonic() + KILL_WAIT_S
        while True:
            procs = table()
            if self.leader is not None:
                with contextlib.suppress(OSError):  # the group too: one forked since the look is in it
                    os.killpg(self.leader, signal.SIGKILL)
            if procs is None:  # the group is all there is to kill
                return Stopped((), (), False, looked=False)
            family = self.members(procs)
            self._reap_ended(family)
            live = [p for p in family if not p.ended]
            for p in live:
                if p.pid not in refused:
                    try:
                        os.kill(p.pid, signal.SIGKILL)
                        killed.setdefault(p.pid, p)
                    except PermissionError:  # another user's (a set-user-id program): it stays
                        refused.add(p.pid)
                    except ProcessLookupError:
                        pass
            if all(p.pid in refused for p in live) or time.monotonic() >= deadline:
                return Stopped(tuple(killed.values()), tuple(live), self.sees_all)
            time.sleep(_KILL_POLL_S)

    def leave(self, procs: Iterable[Proc]) -> None:
        """Let ``procs`` run on after the command ended; those gs adopted are reaped when they end."""
        me = os.getpid()
        _left_running.update(p.pid for p in procs if p.ppid == me and p.pid != self.leader)


@contextlib.contextmanager
def watching() -> Iterator[Family]:
    """Watch one command's processes from before it starts until it ended and was reaped.

    gs is the child subreaper meanwhile (where the system allows), and no other command of
    this process runs.

    Yields:
        The :class:`Family`, to be told its leader (:meth:`Family.started`).
    """
    with _ONE_AT_A_TIME:
        _left_running.intersection_update(_reap(_left_running))
        procs = table()
        before = _children(procs) if procs is not None else set()
        made = _subreaper(True)
        try:
            yield Family(before, made is not None)
        finally:
            if made:
                _subreaper(False)
