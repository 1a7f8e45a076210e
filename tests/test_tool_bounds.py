"""Every tool input has a bound and every stuck tool ends: a flood of output, a command's
children that left its session (``setsid``), Ctrl+C while a command runs, a named pipe where
a file is read or searched, a huge (sparse) file, a folder tree 400 levels deep. Real
processes, real FIFOs and sockets, real big files; the memory bounds are held by
``RLIMIT_AS`` in a child process of their own, so the old way (everything kept, then cut)
fails there instead of passing slowly."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
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
from gitsessions.chat.tools import files, ignore, processes, shell
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
    content, is_error = run(ts, "run_command", command="echo first; yes; echo never", timeout=2)
    assert is_error and content.startswith("error: timed out after 2 s and was stopped")
    assert "it printed:\nfirst\ny\ny\n" in content and re.search(r"bytes \([\d,]+ lines\) of output left out", content)
    assert len(content) < shell.OUTPUT_CHARS + 500


# --------------------------------------------------------------------------- run_command's processes


def test_a_child_started_with_setsid_ends_with_the_timeout(work):
    ts = tools(work, "shell")
    content, is_error = run(ts, "run_command", timeout=3,  # long enough for both to start, on a busy machine
                            command="setsid sleep 60 & echo $! > child.pid; "  # its own session, sh its parent
                                    + DAEMON.format(out="") + "wait")  # the daemon holds the output too
    child, daemon = pid_in(work / "child.pid"), pid_in(work / "daemon.pid")
    assert gone(child) and gone(daemon)
    assert is_error and re.match(r"error: timed out after 3 s and was stopped \(\d+ processes killed: .*sleep", content)
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


def test_ctrl_c_as_the_command_starts_stops_it_too(work, monkeypatch):
    # the command may run before Popen returns in gs: a Ctrl+C then is as one while it runs
    leaders: list[int] = []
    named = processes.Family.started

    def started_then_ctrl_c(self: processes.Family, leader: int) -> None:
        named(self, leader)
        leaders.append(leader)
        os.kill(os.getpid(), signal.SIGINT)  # a real SIGINT: its handler raises here, in this thread

    monkeypatch.setattr(processes.Family, "started", started_then_ctrl_c)
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(ToolInterrupted, match=r"by the user \(Ctrl\+C\) after [\d.]+ s \(\d process(es)? killed"):
            shell.run_command(work, "sleep 60")
    finally:
        signal.signal(signal.SIGINT, old)
    assert gone(leaders[0])


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


def test_an_orphan_of_gs_s_own_that_comes_to_gs_meanwhile_is_not_the_command_s(work):
    # a process gs started itself (in gs's session, as a hook is) whose child is orphaned
    # while a command runs: the child comes to gs, the subreaper, and is left alone
    mine = subprocess.Popen(["/bin/sh", "-c", "sleep 60 & echo $! > orphan.pid; "
                             "while [ ! -e go ]; do sleep 0.01; done"], cwd=work)
    try:
        content = shell.run_command(work, "until [ -s orphan.pid ]; do :; done; touch go; "
                                          'until grep -q "^PPid:[[:space:]]*$PPID$" /proc/$(cat orphan.pid)/status; '
                                          "do :; done; echo adopted")
        orphan = pid_in(work / "orphan.pid")
        assert content == "exit status 0\nadopted\n" and running(orphan)
    finally:
        mine.wait()
        with contextlib.suppress(OSError):
            os.kill(pid_in(work / "orphan.pid"), signal.SIGKILL)
            os.waitpid(pid_in(work / "orphan.pid"), 0)


# --------------------------------------------------------------------------- file tools: what is not a file


def test_a_named_pipe_is_refused_by_every_file_tool_and_skipped_by_search(work):
    os.mkfifo(work / "pipe")
    (work / "notes.md").write_text("needle\n")
    ts = tools(work, "read", "write")

    def unblock() -> None:  # the old way waits in open() for a writer: be one
        with contextlib.suppress(OSError):
            os.close(os.open(work / "pipe", os.O_WRONLY | os.O_NONBLOCK))

    said = "error: pipe is a named pipe (FIFO), not a regular file; the file tools read regular files only"
    assert within(lambda: run(ts, "read_file", path="pipe"), unblock) == (said, True)
    assert within(lambda: run(ts, "edit_file", path="pipe", old_string="a", new_string="b"), unblock) == (said, True)
    assert within(lambda: run(ts, "search_files", pattern="needle", path="pipe"), unblock) == (said, True)
    assert within(lambda: run(ts, "search_files", pattern="needle"), unblock) == (
        "notes.md:1: needle\n[not searched: pipe (a named pipe)]", False)


def test_a_socket_is_refused_with_its_kind(work):
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(work / "sock"))
        assert run(tools(work, "read"), "read_file", path="sock") == (
            "error: sock is a socket, not a regular file; the file tools read regular files only", True)


# --------------------------------------------------------------------------- file tools: size


def test_a_huge_sparse_file_is_read_a_part_at_a_time(work):
    big = work / "big.txt"
    with open(big, "wb") as f:
        f.write(b"".join(b"line %d\n" % n for n in range(1, 20_001)))
        f.truncate(4 * 1024 ** 3)  # 4 GiB, a hole after the text: NULs, on one endless line
    out = json.loads(in_a_small_child(
        "import json\n"
        "from pathlib import Path\n"
        "from gitsessions.chat.tools.files import Workspace, read_file\n"
        "ws = Workspace(Path(sys.argv[1]))\n"
        "print(json.dumps([read_file(ws, 'big.txt'), read_file(ws, 'big.txt', 20_000, 1),"
        " read_file(ws, 'big.txt', 20_001)]))\n", str(work)))
    first, line_20000, endless = out
    shown, note = first.rsplit("\n[", 1)
    last = int(shown.splitlines()[-1].split()[1])
    assert shown.splitlines() == [f"line {n}" for n in range(1, last + 1)] and len(shown) <= files.READ_CHARS
    assert note == f"cut at {files.READ_CHARS:,} characters, after line {last:,}: read on with offset={last + 1}]"
    assert line_20000 == "line 20000\n"
    assert len(endless) < files.READ_CHARS + 300 and endless.startswith("\0\0") and endless.endswith(
        f"\n[line 20,001 goes on past {files.READ_CHARS:,} characters; the rest of it is not shown]")


def test_a_file_too_big_to_diff_is_not_written_over(work):
    big = work / "big.txt"
    with open(big, "wb") as f:
        f.write(b"text\n")
        f.truncate(files.EDIT_FILE_BYTES + 1)
    said = (f"error: big.txt is over {files.EDIT_FILE_BYTES:,} bytes, the most write_file and edit_file write over "
            "(its old text is read whole for the diff)")
    ts = tools(work, "write")
    assert run(ts, "edit_file", path="big.txt", old_string="text", new_string="words") == (said, True)
    assert run(ts, "write_file", path="big.txt", content="short\n") == (said, True)
    assert big.stat().st_size == files.EDIT_FILE_BYTES + 1


def test_offset_and_limit_read_on_where_the_cut_was_and_past_the_end_is_told(work):
    (work / "many.txt").write_text("".join(f"{n:06d} {'x' * 50}\n" for n in range(50_000)))
    ts = tools(work, "read")
    whole, offset = "", 1
    for _ in range(100):
        part = run(ts, "read_file", path="many.txt", offset=offset)[0]
        if "\n[cut at" not in part:
            whole += part
            break
        text, note = part.rsplit("\n[", 1)
        whole += text + "\n"
        offset = int(re.search(r"offset=(\d+)", note).group(1))
    assert whole == (work / "many.txt").read_text()
    assert run(ts, "read_file", path="many.txt", offset=60_000) == (
        "error: many.txt has 50000 lines; offset 60000 is past its end", True)
    assert run(ts, "read_file", path="many.txt", offset=0)[0] == "error: offset must be a line number from 1, not 0"
    assert run(ts, "read_file", path="many.txt", limit="all")[0] == (
        "error: limit must be a number of lines from 1, not 'all'")


def test_search_streams_lines_bounds_them_and_says_what_it_skipped(work, monkeypatch):
    (work / "long.txt").write_text("needle at the start " + "x" * (files.SEARCH_LINE_BYTES * 3) + " needle late\n"
                                   "needle on line two\n")
    (work / "late.txt").write_text("x" * (files.SEARCH_LINE_BYTES * 2) + " needle\n")
    big = work / "huge.log"
    with open(big, "wb") as f:
        f.write(b"needle\n")
        f.truncate(files.SEARCH_FILE_BYTES + 1)
    content, is_error = run(tools(work, "read"), "search_files", pattern="needle")
    lines = content.splitlines()
    assert not is_error and lines[0].startswith("long.txt:1: needle at the start xxx")
    assert len(lines[0]) == len("long.txt:1: ") + files.SEARCH_LINE_CHARS
    assert lines[1:] == ["long.txt:2: needle on line two",
                         f"[not searched: huge.log (over {files.SEARCH_FILE_BYTES:,} bytes)]",
                         f"[only the first {files.SEARCH_LINE_BYTES:,} bytes of 2 long lines were searched "
                         "(in late.txt, long.txt)]"]
    named = work / "named" / "big.txt"  # a file named is searched, on its first part
    named.parent.mkdir()
    named.write_text("x\n" * (files.SEARCH_FILE_BYTES // 2) + "needle\n")
    assert run(tools(work, "read"), "search_files", pattern="needle", path="named/big.txt") == (
        f"no match\n[not searched: named/big.txt (after its first {files.SEARCH_FILE_BYTES:,} bytes)]", False)
    monkeypatch.setattr(files, "FILE_TOOL_SECONDS", 0.0)  # no time at all: it stops before the first file
    assert run(tools(work, "read"), "search_files", pattern="needle") == (
        "no match\n[stopped after 0 s, 0 files searched: narrow the path or the pattern]", False)
    assert run(tools(work, "read"), "list_files") == (
        "huge.log\n[stopped after 0 s: the list may go on; list a subfolder]", False)


def test_a_list_says_it_was_cut_only_when_more_entries_follow(work, monkeypatch):
    monkeypatch.setattr(files, "LIST_ENTRIES", 2)
    (work / "a").write_text("")
    (work / "b").write_text("")
    assert run(tools(work, "read"), "list_files") == ("a\nb", False)
    (work / "c").write_text("")
    assert run(tools(work, "read"), "list_files") == (
        "a\nb\n[cut at 2 entries: more are not listed; list a subfolder]", False)


# --------------------------------------------------------------------------- file tools: deep trees


@pytest.fixture
def deep(work: Path) -> Path:
    folder = work
    for _ in range(400):
        folder = folder / "d"
    folder.mkdir(parents=True)
    (folder / "bottom.txt").write_text("needle\n")
    return work


def test_a_deep_tree_is_listed_to_a_bounded_depth_and_the_rest_named(deep, monkeypatch):
    ts = tools(deep, "read")
    scans: list[object] = []
    real = ignore.os.scandir
    monkeypatch.setattr(ignore.os, "scandir", lambda p: scans.append(p) or real(p))
    assert run(ts, "list_files") == ("d/", False)
    assert len(scans) == 1  # what is not listed is not walked
    listed, note = run(ts, "list_files", recursive=True)[0].rsplit("\n", 1)
    depth = files.WALK_DEPTH
    assert listed.splitlines() == ["/".join(["d"] * n) + "/" for n in range(1, depth + 1)]
    assert note == f"[not entered: 1 folder at depth {depth} ({'/'.join(['d'] * depth)}/); list it to see inside]"
    assert run(ts, "search_files", pattern="needle") == (
        f"no match\n[not entered: 1 folder at depth {depth} ({'/'.join(['d'] * depth)}/); search in it]", False)
    assert run(ts, "search_files", pattern="needle", path="/".join(["d"] * 395))[0] == (
        "d/" * 395 + "d/d/d/d/d/bottom.txt:1: needle")
