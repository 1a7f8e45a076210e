"""Session: journaled turns become commits; orphaned journals are recovered (real git repos)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from fakeapi import validate_messages

from gitsessions.errors import SessionLocked, SessionNotFound
from gitsessions.log.events import make_header
from gitsessions.log.transcript import CANCELLED, NOT_STARTED, OUTCOME_UNKNOWN, open_turn
from gitsessions.store import GitStore
from gitsessions.writer.opening import open_revision, open_session, try_recover
from gitsessions.writer.session import Session

ROOT = Path(__file__).resolve().parents[1]
SID = "work"


@pytest.fixture
def store(repo_path: Path):
    with GitStore(repo_path) as s:
        yield s


def new_session(store: GitStore, sid: str = SID) -> Session:
    return open_session(store, sid, new_header=make_header(sid, created=1, cwd="/w"))


def full_turn(s: Session, prompt: str, reply: str = "done") -> str | None:
    """A completed turn with one tool call, as the chat loop writes it."""
    n = s.next_turn
    s.append("turn/start", {"turn": n})
    s.append("user/message", {"content": prompt})
    s.append("step/start", {"step": 1})
    s.delta("Let me ")
    s.append("assistant/message", {"content": "Let me look.", "finish_reason": "tool_calls",
                                   "model": "fake-model",
                                   "tool_calls": [{"id": f"t{n}", "name": "read_file", "arguments": "{}"}]})
    s.append("tool/call", {"id": f"t{n}", "name": "read_file"})
    s.append("tool/result", {"id": f"t{n}", "name": "read_file", "content": "file text", "is_error": False})
    s.append("step/end", {"step": 1})
    s.append("step/start", {"step": 2})
    s.delta(reply[:2])
    s.append("assistant/message", {"content": reply, "tool_calls": [], "finish_reason": "stop",
                                   "model": "fake-model"})
    s.append("step/end", {"step": 2})
    return s.end_turn("completed")


def crash_turn(s: Session, prompt: str) -> None:
    """A turn cut short: two tool calls requested, one started, some reply text streamed."""
    n = s.next_turn
    s.append("turn/start", {"turn": n})
    s.append("user/message", {"content": prompt})
    s.append("step/start", {"step": 1})
    s.append("assistant/message", {"content": None, "finish_reason": "tool_calls", "model": "fake-model",
                                   "tool_calls": [{"id": "ca", "name": "write_file", "arguments": "{}"},
                                                  {"id": "cb", "name": "list_dir", "arguments": "{}"}]})
    s.append("tool/call", {"id": "ca", "name": "write_file"})
    s.delta("partial te")
    s.delta("xt")


def abandon(s: Session) -> None:
    """Drop a session without closing it: only the OS resources go, as when a process dies."""
    s._journal.close()
    s._lock.release()


def crashed_after(store, earlier_turns: int) -> str | None:
    """A new session with ``earlier_turns`` saved, then a turn cut by a crash; returns the tip before it."""
    s = new_session(store)
    for i in range(earlier_turns):
        full_turn(s, f"earlier {i}")
    before = store.tip(SID)
    crash_turn(s, "Please fix the build")
    abandon(s)
    return before


def check_recovered(store: GitStore, git, commit: str, prompt: str, turn: int) -> None:
    assert store.tip(SID) == commit
    assert git("log", "-1", "--format=%s", SID).strip() == f"turn {turn}: {prompt}"
    snap = store.load(SID)
    events = snap.events
    assert [e.seq for e in events] == list(range(len(events)))
    start = max(i for i, e in enumerate(events) if e.type == "turn/start")
    turn_evs = events[start:]
    assert turn_evs[0].data == {"turn": turn}
    assert [e.data["content"] for e in turn_evs if e.type == "user/message"] == [prompt]
    codes = {e.data["id"]: e.data["error_code"] for e in turn_evs if e.type == "tool/result"}
    assert codes == {"ca": OUTCOME_UNKNOWN, "cb": NOT_STARTED}
    partial = [e for e in turn_evs if e.type == "assistant/message" and e.data.get("interrupted")]
    assert [e.data["content"] for e in partial] == ["partial text"]
    assert [e.type for e in turn_evs[-2:]] == ["step/end", "turn/end"]
    assert turn_evs[-1].data["reason"] == "interrupted"
    assert open_turn(events) is None
    messages = open_session(store, SID)
    try:
        msgs = messages.messages()
    finally:
        messages.close()
    assert validate_messages(msgs) is None, validate_messages(msgs)
    tool = {m["tool_call_id"]: m["content"] for m in msgs if m["role"] == "tool"}
    assert "unknown" in tool["ca"] and "never run" in tool["cb"]
    assert msgs[-1] == {"role": "assistant", "content": "partial text"}
    assert not store.journal(SID).exists()
    git("fsck", "--strict")


# -- normal saving ----------------------------------------------------------------------------


def test_turns_become_commits(store: GitStore, git, repo_path: Path):
    s = new_session(store)
    assert s.tip is None and s.recovered is None and s.next_turn == 1
    c1 = full_turn(s, "How do I parse YAML?\nmore detail")
    assert c1 and s.tip == c1 and not s.in_turn
    assert not store.journal(SID).exists()
    s.append("session/title", {"title": "YAML"})
    assert store.journal(SID).exists()
    c2 = full_turn(s, "and JSON?")
    assert s.next_turn == 3
    s.close()
    assert git("log", "--format=%s", SID).splitlines() == ["turn 2: and JSON?",
                                                           "turn 1: How do I parse YAML?"]
    assert git("rev-parse", f"{c2}^").strip() == c1
    trailers = git("log", "-1", "--format=%(trailers:only,unfold)", SID).splitlines()
    assert "Session: work" in trailers and "Turn: 2" in trailers and "Model: fake-model" in trailers
    assert "Title: YAML" in trailers and "Messages: 8" in trailers
    assert "Events: 11-22" in trailers  # the title event rode along with turn 2
    assert git("log", "-1", "--format=%(trailers:key=Events,valueonly)", c1).strip() == "0-10"
    snap = store.load(SID)
    assert snap.raw == subprocess.run(["git", "-C", str(repo_path), "show", f"{SID}:session.jsonl"],
                                      capture_output=True, check=True).stdout
    assert [e.type for e in snap.events].count("turn/end") == 2
    reopened = open_session(store, SID)
    try:
        assert reopened.recovered is None and reopened.tip == c2
        assert reopened.events == snap.events
        msgs = reopened.messages()
        assert validate_messages(msgs) is None
        assert [m["role"] for m in msgs] == ["user", "assistant", "tool", "assistant"] * 2
    finally:
        reopened.close()
    assert store.tip(SID) == c2  # closing with nothing pending made no commit
    git("fsck", "--strict")


def test_end_turn_with_nothing_open_or_pending(store: GitStore):
    s = new_session(store)
    try:
        assert s.end_turn("completed") is None
        assert s.save() is None
        assert store.tip(SID) is None
    finally:
        s.close()
    assert store.list_sessions() == []


def test_missing_session_needs_a_header(store: GitStore):
    with pytest.raises(SessionNotFound):
        open_session(store, SID)
    # The failed open did not keep the lock.
    s = new_session(store)
    s.close()


def test_second_writer_is_locked_out(store: GitStore, repo_path: Path):
    s = new_session(store)
    try:
        with pytest.raises(SessionLocked) as exc:
            open_session(GitStore(repo_path), SID, new_header=make_header(SID))
        assert f"pid {os.getpid()}" in str(exc.value)
        other = new_session(store, "other")  # other sessions are not blocked
        other.close()
    finally:
        s.close()
    again = open_session(store, SID, new_header=make_header(SID))
    again.close()


def test_close_mid_turn_saves_it_as_aborted(store: GitStore, git):
    s = new_session(store)
    full_turn(s, "first")
    crash_turn(s, "second")
    s.close()
    events = store.load(SID).events
    assert events[-1].type == "turn/end" and events[-1].data["reason"] == "aborted"
    codes = {e.data["id"]: e.data["error_code"] for e in events if e.data.get("error_code")}
    assert codes == {"ca": OUTCOME_UNKNOWN, "cb": CANCELLED}
    assert git("log", "-1", "--format=%s", SID).strip() == "turn 2: second"
    assert not store.journal(SID).exists()


# -- recovering an orphaned journal -----------------------------------------------------------


@pytest.mark.parametrize("how", ["open", "try_recover"])
@pytest.mark.parametrize("earlier_turns", [0, 1])
def test_orphaned_journal_is_recovered(store: GitStore, repo_path: Path, git, how, earlier_turns):
    before = crashed_after(store, earlier_turns)
    assert store.journal(SID).exists()
    assert store.tip(SID) == before
    with GitStore(repo_path) as fresh:  # a new process
        if how == "open":
            s2 = open_session(fresh, SID)
            commit = s2.recovered
            assert commit and s2.tip == commit and not s2.in_turn
            assert s2.next_turn == earlier_turns + 2
            s2.close()
        else:
            commit = try_recover(fresh, SID)
            assert commit
            assert try_recover(fresh, SID) is None  # nothing left to do
        assert commit is not None
        parents = git("log", "-1", "--format=%P", commit).split()
        assert parents == ([before] if before else [])
        check_recovered(fresh, git, commit, "Please fix the build", earlier_turns + 1)
    assert len(git("log", "--format=%H", SID).split()) == earlier_turns + 1


RECOVER_CHILD = """
import sys, time
from gitsessions.log.events import make_header
from gitsessions.writer.opening import open_session
from gitsessions.store import GitStore
store = GitStore(sys.argv[1])
s = open_session(store, "work", new_header=make_header("work", created=1))
s.append("turn/start", {"turn": 1})
s.append("user/message", {"content": "Please fix the build"})
s.append("step/start", {"step": 1})
s.append("assistant/message", {"content": None, "tool_calls": [
    {"id": "ca", "name": "write_file", "arguments": "{}"},
    {"id": "cb", "name": "list_dir", "arguments": "{}"}]})
s.append("tool/call", {"id": "ca", "name": "write_file"})
s.delta("partial te")
s.delta("xt")
print("ready", flush=True)
time.sleep(120)
"""


def test_journal_of_a_killed_process_is_recovered(store: GitStore, repo_path: Path, git):
    child = subprocess.Popen([sys.executable, "-c", RECOVER_CHILD, str(repo_path)],
                             stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        # While it lives, read-only commands leave its journal alone.
        assert try_recover(store, SID) is None
        assert store.journal(SID).exists() and store.tip(SID) is None
        with pytest.raises(SessionLocked):
            open_session(store, SID)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    s = open_session(store, SID)
    try:
        assert s.recovered is not None
    finally:
        s.close()
    commit = store.tip(SID)
    assert commit == s.recovered
    check_recovered(store, git, commit, "Please fix the build", 1)
    assert store.load(SID).header["id"] == SID


def test_journal_already_committed_is_just_removed(store: GitStore, repo_path: Path, git):
    s = new_session(store)
    full_turn(s, "one")
    # Keep a copy of the journal of turn 2 as it is just before its commit lands.
    journal = store.journal(SID)
    n = s.next_turn
    s.append("turn/start", {"turn": n})
    s.append("user/message", {"content": "two"})
    s.append("step/start", {"step": 1})
    s.append("assistant/message", {"content": "answer", "tool_calls": []})
    s.append("step/end", {"step": 1})
    s.append("turn/end", {"turn": n, "reason": "completed"})
    copy = journal.path.read_bytes()
    tip = s.save()
    s.close()
    assert not journal.exists()
    journal.path.write_bytes(copy)  # the crash came between commit and journal removal
    with GitStore(repo_path) as fresh:
        s2 = open_session(fresh, SID)
        try:
            assert s2.recovered is None and s2.tip == tip
        finally:
            s2.close()
    assert not journal.exists()
    assert store.tip(SID) == tip
    assert len(git("log", "--format=%H", SID).split()) == 2
    # Same through try_recover.
    journal.path.write_bytes(copy)
    assert try_recover(store, SID) is None
    assert not journal.exists() and store.tip(SID) == tip


def test_journal_with_torn_last_line(store: GitStore, git):
    s = new_session(store)
    s.append("turn/start", {"turn": 1})
    s.append("user/message", {"content": "keep me"})
    abandon(s)
    with open(store.journal(SID).path, "ab") as f:
        f.write(b'{"seq":2,"time":1,"type":"step/st')  # the write the kill cut short
    commit = try_recover(store, SID)
    assert commit is not None
    events = store.load(SID).events
    assert [e.type for e in events] == ["turn/start", "user/message", "turn/end"]
    assert events[1].data["content"] == "keep me"
    assert events[-1].data["reason"] == "interrupted"
    git("fsck", "--strict")


def test_journal_with_only_its_first_line_is_dropped(store: GitStore):
    s = new_session(store)
    s._journal.begin(None, s.header)
    abandon(s)
    assert store.journal(SID).exists()
    assert try_recover(store, SID) is None
    assert not store.journal(SID).exists() and store.tip(SID) is None


@pytest.mark.parametrize(
    "bad_line",
    [
        b'{"seq":2,"time":1,"type":"future/kind","data":{}}\n',  # a newer gs, not ignorable
        b'{"seq":2,"time":1,"type":"step/start","data":[1]}\n',  # data not an object
        b'{"seq":2,"time":"x","type":"step/start","data":{}}\n',  # time not an integer
        b"5\n",  # valid JSON, not a record
        b'["delta"]\n',
    ],
    ids=["unknown-type", "list-data", "str-time", "number", "list"],
)
def test_damaged_journal_record_does_not_block_the_session(store: GitStore, git, bad_line):
    s = new_session(store)
    s.append("turn/start", {"turn": 1})
    s.append("user/message", {"content": "keep me \ud800"})
    abandon(s)
    with open(store.journal(SID).path, "ab") as f:
        f.write(bad_line)
        f.write(b'{"seq":3,"time":1,"type":"step/start","data":{"step":1}}\n')
    s2 = open_session(store, SID)  # must not raise, now or on any later open
    try:
        assert s2.recovered is not None
        assert [e.type for e in s2.events] == ["turn/start", "user/message", "turn/end"]
        assert s2.events[1].data["content"] == "keep me \ufffd"
        full_turn(s2, "next")
    finally:
        s2.close()
    assert not store.journal(SID).exists()
    assert len(git("log", "--format=%H", SID).split()) == 2
    git("fsck", "--strict")


def test_journal_event_with_escaped_surrogate_is_cleaned(store: GitStore):
    s = new_session(store)
    s.append("turn/start", {"turn": 1})
    abandon(s)
    with open(store.journal(SID).path, "ab") as f:
        f.write(b'{"seq":1,"time":1,"type":"user/message","data":{"content":"a\\ud800b"}}\n')
    commit = try_recover(store, SID)
    assert commit is not None
    assert store.load(SID).events[1].data["content"] == "a\ufffdb"


def test_orphaned_turn_survives_when_the_branch_moved_on(tmp_path):
    """A journal built on a commit that is no longer the tip (the branch was moved by a pull or
    another tool) is kept as a session of its own, grown from that commit; nothing is dropped."""
    from gitsessions.log.commits import CommitMessage
    from gitsessions.log.events import make_event, make_header
    from gitsessions.store import GitStore
    from gitsessions.writer.opening import open_session
    from gitsessions.writer.recovery import recover_journal

    store = GitStore(tmp_path / "r.git")
    s = open_session(store, "w", new_header=make_header("w"))
    s.append("turn/start", {"turn": 1})
    s.append("user/message", {"content": "first"})
    s.end_turn("completed")
    base = s.tip
    s.append("turn/start", {"turn": 2})
    s.append("user/message", {"content": "typed before the move"})
    # the process dies here; then the branch moves elsewhere (as a pull would move it)
    s._lock.release()
    n = len(store.load("w").events)
    moved = [make_event(n, "turn/start", {"turn": 2}), make_event(n + 1, "user/message", {"content": "elsewhere"}),
             make_event(n + 2, "turn/end", {"turn": 2, "reason": "completed"})]
    store.append("w", moved, CommitMessage("turn 2: elsewhere"), expected_tip=base)
    assert store.journal("w").exists()
    warnings: list[str] = []
    with store.lock("w"):
        commit = recover_journal(store, "w", warnings=warnings)
    assert commit is not None
    assert not store.journal("w").exists()
    assert store.load("w").events[-2].data.get("content") == "elsewhere"
    kept = store.load("w-recovered-1")
    assert [e.data["content"] for e in kept.events if e.type == "user/message"] == ["first", "typed before the move"]
    assert kept.events[-1].type == "turn/end" and kept.events[-1].data["reason"] == "interrupted"
    assert store.log("w-recovered-1")[-1].commit == store.log("w")[-1].commit  # grown from w's history
    assert base in [c.commit for c in store.log("w-recovered-1")]
    assert any("w-recovered-1" in w for w in warnings)


# -- the same on every store: git and memory --------------------------------------------------


def test_turns_a_title_and_an_undo_are_saves_on_any_store(any_store):
    store = any_store.store
    s = new_session(store)
    first = full_turn(s, "How do I parse YAML?")
    second = full_turn(s, "and JSON?")
    titled = s.set_title("  Parsing   formats ")
    assert s.undo() == 2
    s.close()
    log = store.log(SID)
    assert [c.message.subject for c in log] == ["undo: turn 2", "title: Parsing formats", "turn 2: and JSON?",
                                                "turn 1: How do I parse YAML?"]
    assert [c.commit for c in log[1:]] == [titled, second, first]
    assert [c.message.fields.turn for c in log] == [2, 2, 2, 1]
    assert log[3].message.fields.events == (0, 10) and log[2].message.fields.events == (11, 21)
    assert log[1].message.fields.title == "Parsing formats"
    with any_store.again() as fresh:
        again = open_session(fresh, SID)
        try:
            assert again.next_turn == 3 and again.tip == log[0].commit
            msgs = again.messages()
        finally:
            again.close()
    assert validate_messages(msgs) is None, validate_messages(msgs)
    assert [m["content"] for m in msgs if m["role"] == "user"] == ["How do I parse YAML?"]  # turn 2 is undone


@pytest.mark.parametrize("earlier_turns", [0, 1])
def test_an_orphaned_journal_is_recovered_on_any_store(any_store, earlier_turns):
    before = crashed_after(any_store.store, earlier_turns)
    with any_store.again() as fresh:
        assert fresh.journal(SID).exists() and fresh.tip(SID) == before
        s2 = open_session(fresh, SID)
        try:
            commit = s2.recovered
            assert commit is not None and s2.tip == commit and not s2.in_turn
            msgs = s2.messages()
        finally:
            s2.close()
        info = fresh.commit_info(commit)
        assert info.parents == ([before] if before else [])
        assert info.message.subject == f"turn {earlier_turns + 1}: Please fix the build"
        events = fresh.load(SID).events
        assert [e.seq for e in events] == list(range(len(events)))
        assert events[-1].type == "turn/end" and events[-1].data["reason"] == "interrupted"
        codes = {e.data["id"]: e.data["error_code"] for e in events if e.type == "tool/result"
                 and e.data["id"] in ("ca", "cb")}
        assert codes == {"ca": OUTCOME_UNKNOWN, "cb": NOT_STARTED}
        assert not fresh.journal(SID).exists()
    assert validate_messages(msgs) is None, validate_messages(msgs)
    assert msgs[-1] == {"role": "assistant", "content": "partial text"}


def test_one_writer_at_a_time_on_any_store(any_store):
    store = any_store.store
    s = new_session(store)
    full_turn(s, "hi")
    with pytest.raises(SessionLocked):
        open_session(store, SID)
    s.close()
    open_session(store, SID).close()  # released: the next writer opens it


def test_writing_to_a_past_revision_forks_on_any_store(any_store):
    store = any_store.store
    s = new_session(store)
    first = full_turn(s, "first")
    full_turn(s, "second")
    s.close()
    past, note = open_revision(store, f"{SID}~1")
    try:
        assert note is not None and f"{SID}-1" in note
        assert store.tip(f"{SID}-1") is None  # opening the past writes nothing
        full_turn(past, "second, again")
    finally:
        past.close()
    again, fork_point, *below = store.log(f"{SID}-1")
    assert again.message.subject == "turn 2: second, again"
    assert fork_point.message.subject == f"fork: {SID}-1 from {SID} at {first[:7]}" and fork_point.parents == [first]
    assert [c.commit for c in below] == [first]  # the fork's history is the original's up to the fork point
    assert all(str(c.message.fields.forked_from) == f"{SID}@{first}" for c in (again, fork_point))
    assert [c.message.subject for c in store.log(SID)][0] == "turn 2: second"  # the original never moved
