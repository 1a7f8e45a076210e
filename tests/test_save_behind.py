"""A turn committed behind the prompt: the chat goes on while git writes.

The commit of turn N runs in a thread while the next line is read; the journal holds the
turn until the commit lands, and the next turn is journaled after it meanwhile. A real
``pre-commit`` hook that waits while a file exists holds a commit in flight for as long as a
test needs: the next turn is written, a second writer knocks, the process is killed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from scripted import ScriptedProvider, scripted_env

from gitsessions.cli.repl.repl import Repl
from gitsessions.errors import HookRefused, SessionLocked
from gitsessions.log.events import make_header
from gitsessions.store import GitStore
from gitsessions.store.hooks import CommitHooks
from gitsessions.store.lock import LockWait
from gitsessions.writer.opening import open_session
from gitsessions.writer.session import Session

ROOT = Path(__file__).resolve().parents[1]
SID = "work"
TIMEOUT = 10
#: Waits while $HOLD exists (a commit held in flight); refuses once when $REFUSE exists.
PRE_COMMIT = """#!/bin/sh
while [ -e "$HOLD" ]; do sleep 0.01; done
if [ -e "$REFUSE" ]; then rm "$REFUSE"; echo "not now" >&2; exit 1; fi
exit 0
"""


@pytest.fixture
def gates(tmp_path: Path, repo_path: Path) -> dict[str, Path]:
    """The hook's two files (absent: commits go through) and its environment, with the hook installed."""
    hook = repo_path / "hooks" / "pre-commit"
    hook.parent.mkdir(parents=True)
    hook.write_text(PRE_COMMIT)
    hook.chmod(0o755)
    return {"HOLD": tmp_path / "hold", "REFUSE": tmp_path / "refuse"}


def hooked_store(repo_path: Path, gates: dict[str, Path]) -> GitStore:
    env = dict(os.environ, HOLD=str(gates["HOLD"]), REFUSE=str(gates["REFUSE"]))
    return GitStore(repo_path, hooks=CommitHooks(repo_path, env))


def turn(s: Session, prompt: str, reply: str = "done") -> str | None:
    """One finished turn as the chat loop writes it; what end_turn returns."""
    n = s.next_turn
    s.append("turn/start", {"turn": n})
    s.append("user/message", {"content": prompt})
    s.append("step/start", {"step": 1})
    s.delta(reply[:2])
    s.append("assistant/message", {"content": reply, "tool_calls": [], "finish_reason": "stop"})
    s.append("step/end", {"step": 1})
    return s.end_turn("completed")


def prompts(store: GitStore, sid: str = SID) -> list[str]:
    return [e.data["content"] for e in store.load(sid).events if e.type == "user/message"]


def ends(store: GitStore) -> list[str]:
    return [e.data["reason"] for e in store.load(SID).events if e.type == "turn/end"]


def wait_until(check, what: str) -> None:
    deadline = time.monotonic() + TIMEOUT
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def tip_now(repo_path: Path) -> str | None:
    with GitStore(repo_path) as fresh:
        return fresh.tip(SID)


def test_a_turn_committed_behind_lands_and_its_journal_goes(repo_path: Path, git):
    with GitStore(repo_path) as store:
        s = open_session(store, SID, new_header=make_header(SID, created=1))
        s.saves_behind = True
        assert turn(s, "one") is None  # being made
        commit = s.wait_saved()
        assert commit is not None and store.tip(SID) == commit == s.tip
        assert not store.journal(SID).exists()
        assert turn(s, "two") is None
        s.close()  # waits for it
        assert prompts(store) == ["one", "two"]
    assert git("log", "--format=%s", SID).splitlines() == ["turn 2: two", "turn 1: one"]
    git("fsck", "--strict")


def test_the_next_turn_is_journaled_while_a_commit_is_in_flight(repo_path: Path, gates, git):
    with hooked_store(repo_path, gates) as store:
        s = open_session(store, SID, new_header=make_header(SID, created=1))
        s.saves_behind = True
        turn(s, "one")
        first = s.wait_saved()
        gates["HOLD"].touch()
        turn(s, "two")  # held in the hook
        s.append("turn/start", {"turn": 3})
        s.append("user/message", {"content": "three"})
        held = store.journal(SID).read()
        assert held is not None and held.base == first
        assert [e.data["content"] for e in held.events if e.type == "user/message"] == ["two", "three"]
        assert tip_now(repo_path) == first
        with GitStore(repo_path) as other, pytest.raises(SessionLocked):
            open_session(other, SID)  # two writers still serialize: the lock is held meanwhile
        gates["HOLD"].unlink()
        s.append("step/start", {"step": 1})
        s.append("assistant/message", {"content": "3", "tool_calls": [], "finish_reason": "stop"})
        s.append("step/end", {"step": 1})
        s.end_turn("completed")  # waits for turn 2's commit, then makes its own
        s.close()
        assert prompts(store) == ["one", "two", "three"]
        assert not store.journal(SID).exists()
    assert git("log", "--format=%s", SID).splitlines() == ["turn 3: three", "turn 2: two", "turn 1: one"]
    git("fsck", "--strict")


def test_a_crash_after_the_commit_landed_recovers_only_the_next_turn(repo_path: Path, gates, git):
    """The journal still holds the committed turn before the next one: that turn is passed over."""
    with hooked_store(repo_path, gates) as store:
        s = open_session(store, SID, new_header=make_header(SID, created=1))
        s.saves_behind = True
        turn(s, "one")
        first = s.wait_saved()
        gates["HOLD"].touch()
        turn(s, "two")
        s.append("turn/start", {"turn": 3})
        s.append("user/message", {"content": "three"})
        gates["HOLD"].unlink()
        wait_until(lambda: tip_now(repo_path) != first, "turn 2's commit never landed")
        s._journal.close()  # the process dies: the journal (turns 2 and 3) was never cleaned up
        s._lock.release()
    with GitStore(repo_path) as fresh:
        s2 = open_session(fresh, SID)
        try:
            assert s2.recovered is not None
        finally:
            s2.close()
        assert fresh.session_ids() == [SID]  # no session of its own for a turn the tip holds
        assert prompts(fresh) == ["one", "two", "three"]
        assert ends(fresh) == ["completed", "completed", "interrupted"]
    assert git("log", "--format=%s", SID).splitlines() == ["turn 3: three", "turn 2: two", "turn 1: one"]
    git("fsck", "--strict")


KILLED_CHILD = """
import os, sys, time
from gitsessions.log.events import make_header
from gitsessions.writer.opening import open_session
from gitsessions.store import GitStore
from gitsessions.store.hooks import CommitHooks
repo, hold = sys.argv[1], sys.argv[2]
store = GitStore(repo, hooks=CommitHooks(repo, dict(os.environ, HOLD=hold, REFUSE=hold + ".no")))
s = open_session(store, "work", new_header=make_header("work", created=1))
s.saves_behind = True
def turn(prompt):
    s.append("turn/start", {"turn": s.next_turn})
    s.append("user/message", {"content": prompt})
    s.append("step/start", {"step": 1})
    s.append("assistant/message", {"content": "done", "tool_calls": [], "finish_reason": "stop"})
    s.append("step/end", {"step": 1})
    return s.end_turn("completed")
turn("one")
s.wait_saved()
open(hold, "w").close()
turn("two")
s.append("turn/start", {"turn": 3})
s.append("user/message", {"content": "three"})
s.delta("a partial re")
print("ready", flush=True)
time.sleep(120)
"""


def test_kill_while_a_commit_is_in_flight_loses_nothing(repo_path: Path, gates, git):
    child = subprocess.Popen([sys.executable, "-c", KILLED_CHILD, str(repo_path), str(gates["HOLD"])],
                             stdout=subprocess.PIPE, text=True, cwd=ROOT, start_new_session=True)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        os.killpg(child.pid, signal.SIGKILL)  # gs and its waiting hook
        child.wait(timeout=TIMEOUT)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    gates["HOLD"].unlink()
    with GitStore(repo_path) as store:
        assert len(git("log", "--format=%H", SID).split()) == 1  # turn 2 never landed
        # The killed group's lock goes when the kernel has closed the last of its files: a loaded
        # machine may take a moment after the wait returns.
        s = open_session(store, SID, wait=LockWait(TIMEOUT))
        s.close()
        assert prompts(store) == ["one", "two", "three"]
        assert ends(store) == ["completed", "completed", "interrupted"]
        last = store.load(SID).events
        assert [e.data["content"] for e in last if e.type == "assistant/message"][-1] == "a partial re"
        assert not store.journal(SID).exists()
    git("fsck", "--strict")


def test_a_refused_commit_is_said_once_and_the_next_save_takes_its_turn(repo_path: Path, gates, git):
    with hooked_store(repo_path, gates) as store:
        s = open_session(store, SID, new_header=make_header(SID, created=1))
        s.saves_behind = True
        turn(s, "one")
        first = s.wait_saved()
        gates["REFUSE"].touch()
        turn(s, "two")
        with pytest.raises(HookRefused):
            s.wait_saved()
        assert s.wait_saved() == first  # said once; the turn waits in the journal
        assert store.journal(SID).exists()
        turn(s, "three")
        s.close()
        assert prompts(store) == ["one", "two", "three"]
        assert not store.journal(SID).exists()
    assert git("log", "--format=%s", SID).splitlines()[1:] == ["turn 1: one"]  # turns 2 and 3 in one commit
    git("fsck", "--strict")


def test_the_chat_says_a_refused_commit_when_the_next_line_is_sent(repo_path: Path, gates):
    gates["REFUSE"].touch()
    lines = iter(["one", "two", None])
    out: list[str] = []
    with hooked_store(repo_path, gates) as store:
        Repl(store, ScriptedProvider(), SID, scripted_env(lines, out, save_behind=True)).run()
        text = "".join(out)
        assert text.count("pre-commit hook") == 1, text
        assert text.index("echo: one") < text.index("pre-commit hook") < text.index("echo: two")
        assert prompts(store) == ["one", "two"]
