"""Every tool input has a bound and every stuck tool ends: a flood of output, a command's
children that left its session (``setsid``), Ctrl+C while a command runs. Real processes;
the memory bounds are held by ``RLIMIT_AS`` in a child process of their own, so the old way
(everything kept, then cut) fails there instead of passing slowly."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from scripted import ScriptedProvider, call
from test_loop_tools import _open, events, store  # noqa: F401 (store: a fixture)
from test_tools import run, running, tools

from gitsessions.chat.loop import run_turn
from gitsessions.chat.tools import shell
from gitsessions.chat.tools.files import ToolInterrupted, Workspace
from gitsessions.chat.tools.toolset import STOPPED, Toolset, expand
from gitsessions.log.calls import ToolCall

ROOT = Path(__file__).resolve().parent.parent
#: Seconds a test waits for a tool that should return at once before it calls it stuck.
STUCK_S = 60.0
#: The address space a child process of the memory tests may use, bytes: gs's tool modules
#: take ~20 MB; a flood of 1 GiB kept whole cannot fit.
ADDRESS_SPACE = 256 * 1024 * 1024


@pytest.fixture
def work(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    return root


def in_a_small_child(code: str, *args: str) -> str:
    """Run ``code`` in a Python of its own whose address space is :data:`ADDRESS_SPACE`; return what it printed."""
    prelude = ("import resource, sys\n"
               f"resource.setrlimit(resource.RLIMIT_AS, ({ADDRESS_SPACE}, {ADDRESS_SPACE}))\n")
    done = subprocess.run([sys.executable, "-c", prelude + code, *args], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def within(fn: Callable[[], object], unblock: Callable[[], None] = lambda: None) -> object:
    """``fn()``, failing the test if it has not returned after :data:`STUCK_S` (``unblock`` then frees it)."""
    out: list[object] = []
    thread = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    thread.start()
    thread.join(STUCK_S)
    if thread.is_alive():
        unblock()
        thread.join(STUCK_S)
        pytest.fail(f"the tool was still running after {STUCK_S:g} s")
    return out[0]


#: A daemon as ``setsid -f`` makes one (forked away at once, a session of its own): the command
#: goes on once it wrote its pid to ``daemon.pid`` and became ``sleep``.
DAEMON = ("setsid -f sh -c 'echo $$ > daemon.pid; exec sleep 60'{out}; "
          "until [ -s daemon.pid ] && [ \"$(cat /proc/$(cat daemon.pid)/comm)\" = sleep ]; do :; done; ")


def pid_in(path: Path) -> int:
    return int(path.read_text().split()[0])


def gone(pid: int) -> bool:
    return not running(pid)


@contextlib.contextmanager
def ctrl_c_once(started: Path) -> Iterator[None]:
    """Press Ctrl+C (a real SIGINT to this process) as soon as the command wrote ``started``."""
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    stop = threading.Event()

    def press() -> None:
        while not stop.wait(0.01):
            if started.exists() and started.read_text().strip():
                os.kill(os.getpid(), signal.SIGINT)
                return

    presser = threading.Thread(target=press, daemon=True)
    presser.start()
    try:
        yield
    finally:
        stop.set()
        presser.join()
        signal.signal(signal.SIGINT, old)


# --------------------------------------------------------------------------- run_command's output


def test_a_flood_of_output_is_read_as_it_comes_and_only_head_and_tail_are_kept(work):
    total = 1024 * 1024 * 1024  # "y\n" a line: 1 GiB, far more than the child may hold
    content = in_a_small_child(
        "import json\n"
        "from pathlib import Path\n"
        "from gitsessions.chat.tools import shell\n"
        f"print(json.dumps(shell.run_command(Path(sys.argv[1]), 'yes | head -c {total}')))\n", str(work))
    content = json.loads(content)
    head, note, tail = re.fullmatch(r"exit status 0\n(.*)\n\[\.\.\. ([\d,]+ bytes \([\d,]+ lines\)) of output left "
                                    r"out \.\.\.\]\n(.*)", content, re.S).groups()
    assert len(head) + len(tail) == shell.OUTPUT_CHARS and head.startswith("y\ny\n") and tail.endswith("y\ny\n")
    left_bytes = total - len(head) - len(tail)
    left_lines = total // 2 - head.count("\n") - tail.count("\n")
    assert note == f"{left_bytes:,} bytes ({left_lines:,} lines)"


def test_output_within_the_cap_is_whole_and_a_timeout_keeps_the_head_and_tail(work):
    ts = tools(work, "shell")
    printf = "printf 'caf\\303\\251 %s\\n' $(seq 3)"  # é: two bytes, one character
    assert run(ts, "run_command", command=printf) == ("exit status 0\ncafé 1\ncafé 2\ncafé 3\n", False)
    content, is_error = run(ts, "run_command", command="echo first; yes; echo never", timeout=1)
    assert is_error and content.startswith("error: timed out after 1 s and was stopped")
    assert "it printed:\nfirst\ny\ny\n" in content and re.search(r"bytes \([\d,]+ lines\) of output left out", content)
    assert len(content) < shell.OUTPUT_CHARS + 500


# --------------------------------------------------------------------------- run_command's processes


def test_a_child_started_with_setsid_ends_with_the_timeout(work):
    ts = tools(work, "shell")
    content, is_error = run(ts, "run_command", timeout=1,
                            command="setsid sleep 60 & echo $! > child.pid; "  # its own session, sh its parent
                                    + DAEMON.format(out="") + "wait")  # the daemon holds the output too
    child, daemon = pid_in(work / "child.pid"), pid_in(work / "daemon.pid")
    assert gone(child) and gone(daemon)
    assert is_error and re.match(r"error: timed out after 1 s and was stopped \(\d+ processes killed: .*sleep", content)
    assert "may still run" not in content


def test_ctrl_c_ends_a_command_and_its_setsid_child_and_says_so(work):
    ts = tools(work, "shell")
    ts.running = lambda: ctrl_c_once(work / "started")
    prepared = ts.prepare(ToolCall("c1", "run_command", json.dumps(
        {"command": DAEMON.format(out="") + "echo $$ > started; echo hi; sleep 60"})))
    with pytest.raises(ToolInterrupted) as stopped:
        ts.run(prepared)
    assert gone(pid_in(work / "daemon.pid")) and gone(pid_in(work / "started"))
    result = stopped.value.result
    assert result is not None and (result.call_id, result.is_error, result.error_code) == ("c1", True, STOPPED)
    assert re.match(r"error: stopped by the user \(Ctrl\+C\) after [\d.]+ s \(\d+ processes killed: .*\); it printed:"
                    r"\nhi\n$", result.content)


def test_the_loop_logs_what_ctrl_c_stopped_and_the_turn_is_cancelled(store, work):  # noqa: F811
    model = ScriptedProvider(call(("c1", "run_command", '{"command": "echo $$ > started; sleep 60"}')))
    toolset = Toolset(expand(["shell"]), Workspace(work), yes=True)
    toolset.running = lambda: ctrl_c_once(work / "started")
    session = _open(store)
    try:
        assert run_turn(session, model, "run it", toolset=toolset).reason == "aborted"
    finally:
        session.close()
    [result] = [d for t, d in events(store) if t == "tool/result"]
    assert result["error_code"] == STOPPED and result["content"].startswith("error: stopped by the user (Ctrl+C)")
    assert gone(pid_in(work / "started"))


def test_what_a_finished_command_leaves_running_is_named(work):
    ts = tools(work, "shell")
    content, is_error = run(ts, "run_command", command=DAEMON.format(out=" >/dev/null 2>&1") + "echo done")
    daemon = pid_in(work / "daemon.pid")
    try:
        assert not is_error and content == (f"exit status 0; 1 process it started still runs in the background: "
                                             f"pid {daemon} (sleep)\ndone\n")
    finally:
        os.kill(daemon, signal.SIGKILL)
