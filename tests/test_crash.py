"""``kill -9`` of ``gs ask`` at awkward moments loses no committed turn and no sent prompt.

Each test runs real ``gs`` processes against the fake API, SIGKILLs one of them (before the
first reply chunk, mid-stream, between the steps of a tool-using turn, at start-up, and at
seeded random moments), then checks what the next reader sees: ``gs show`` works and closes
the orphaned turn from the journal (reason ``interrupted``), every earlier event is still
there unchanged, the journal is gone, ``git fsck --strict`` passes, and the next ``gs ask``
sends a transcript the fake server accepts.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest
from conftest import GS
from fakeapi import FakeChatServer, Reply, text, tool_calls, validate_messages

SID = "work"
#: A reply long enough to be killed in the middle of: 40 pieces of 9 characters.
SLOW = "".join(f"chunk{i:02d}. " for i in range(40))
#: How much streamed text a kill may lose: at most a fraction of a second's.
LOSS_WINDOW_S = 0.25
#: How long a step may take before the test gives up (a safety net: a loaded machine starts a
#: process slowly; no figure of speed is judged by it).
TIMEOUT = 30


# --------------------------------------------------------------------------- helpers


class Ask:
    """A running ``gs ask SESSION PROMPT`` whose stdout is collected with arrival times."""

    def __init__(self, prompt: str, session: str = SID):
        self.prompt = prompt
        self.proc = subprocess.Popen([*GS, "ask", "-S", session, prompt], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.started = time.monotonic()
        self._chunks: list[tuple[float, bytes]] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        fd = self.proc.stdout.fileno()
        while True:
            data = os.read(fd, 4096)
            if not data:
                return
            with self._lock:
                self._chunks.append((time.monotonic(), data))

    def text(self, before: float | None = None) -> str:
        """Stdout so far (only what had arrived at monotonic time ``before``, if given)."""
        with self._lock:
            data = b"".join(d for t, d in self._chunks if before is None or t <= before)
        return data.decode("utf-8", "replace")

    def wait_text(self, n: int) -> None:
        """Wait until stdout holds at least ``n`` characters."""
        deadline = time.monotonic() + TIMEOUT
        while len(self.text()) < n:
            assert self.proc.poll() is None, f"gs ask ended early: {self.stderr()}"
            assert time.monotonic() < deadline, f"no reply text after {TIMEOUT} s"
            time.sleep(0.01)

    def kill(self) -> float:
        """SIGKILL the process (if still running); return the monotonic time of the kill."""
        at = time.monotonic()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(TIMEOUT)
        self._reader.join(TIMEOUT)
        return at

    def stderr(self) -> str:
        if self.proc.poll() is None:
            return "(still running)"
        return self.proc.stderr.read().decode("utf-8", "replace")

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(TIMEOUT)
        self.proc.stdout.close()
        self.proc.stderr.close()


class Gate:
    """Holds the ``n``-th chat request (counted from now) at the fake server until released.

    The request is recorded (``fake_api.requests``) and validated before it waits, so a
    process killed while the gate is shut has sent its prompt but received no reply chunk.
    """

    def __init__(self, server: FakeChatServer, monkeypatch: pytest.MonkeyPatch, n: int = 1):
        self.arrived = threading.Event()
        self.released = threading.Event()
        self._count = 0
        original = server._next_reply

        def next_reply(messages: list[dict]) -> Reply:
            self._count += 1
            if self._count == n:
                self.arrived.set()
                self.released.wait(TIMEOUT)
            return original(messages)

        monkeypatch.setattr(server, "_next_reply", next_reply)

    def wait(self) -> None:
        assert self.arrived.wait(TIMEOUT), "the request never reached the fake server"

    def release(self) -> None:
        self.released.set()


@pytest.fixture
def asks():
    """Start ``Ask`` processes; kill and reap every one at teardown."""
    started: list[Ask] = []

    def start(prompt: str, session: str = SID) -> Ask:
        ask = Ask(prompt, session)
        started.append(ask)
        return ask

    yield start
    for ask in started:
        ask.close()


@pytest.fixture
def gates(fake_api: FakeChatServer, monkeypatch: pytest.MonkeyPatch):
    """Make ``Gate``s; all are released at teardown so no server thread waits on."""
    made: list[Gate] = []

    def make(n: int = 1) -> Gate:
        gate = Gate(fake_api, monkeypatch, n)
        made.append(gate)
        return gate

    yield make
    for gate in made:
        gate.release()


def show(gs) -> dict:
    r = gs("show", SID, "--format", "json")
    assert r.code == 0, r.err
    return r.json()


def ask_ok(gs, prompt: str) -> None:
    r = gs("ask", "-S", SID, prompt)
    assert r.code == 0, r.err
    assert r.out == f"echo: {prompt}\n"


def turns(events: list[dict]) -> list[list[dict]]:
    """Split events into turns (each from its ``turn/start``)."""
    out: list[list[dict]] = []
    for ev in events:
        if ev["type"] == "turn/start":
            out.append([])
        if out:
            out[-1].append(ev)
    return out


def check_after_kill(gs, git, repo_path: Path, before: list[dict]) -> dict:
    """The checks every kill must pass; return the ``gs show --format json`` object.

    ``before`` holds the events committed before the kill: they must all still be there,
    unchanged and in place. Every turn must be closed and the derived transcript valid.
    """
    obj = show(gs)
    events = obj["events"]
    assert events[: len(before)] == before, "a committed event was lost or changed"
    assert [e["seq"] for e in events] == list(range(len(events)))
    for turn in turns(events):
        assert turn[-1]["type"] == "turn/end", f"turn left open: {turn[0]}"
    if obj["messages"]:
        assert validate_messages(obj["messages"]) is None
    assert not (repo_path / "gs" / "journal" / f"{SID}.jsonl").exists()
    git("fsck", "--strict")
    return obj


def check_next_ask_works(gs, fake_api: FakeChatServer, obj: dict) -> None:
    """A following ``gs ask`` succeeds and sends the recovered transcript plus its prompt."""
    fake_api.reset()
    ask_ok(gs, "next")
    assert len(fake_api.requests) == 1
    messages = fake_api.requests[0]["messages"]
    assert validate_messages(messages) is None
    assert messages == [*obj["messages"], {"role": "user", "content": "next"}]


def last_turn(obj: dict) -> list[dict]:
    return turns(obj["events"])[-1]


def of_type(turn: list[dict], type_: str) -> list[dict]:
    return [e["data"] for e in turn if e["type"] == type_]


# --------------------------------------------------------------------------- fixed points


def test_kill_before_the_first_chunk_keeps_the_prompt(gs, git, repo_path, fake_api, asks,
                                                      gates):
    ask_ok(gs, "first")
    ask_ok(gs, "second")
    before = show(gs)["events"]
    gate = gates()
    ask = asks("killed before any reply")
    gate.wait()
    ask.kill()
    gate.release()

    obj = check_after_kill(gs, git, repo_path, before)
    turn = last_turn(obj)
    assert of_type(turn, "user/message") == [{"content": "killed before any reply"}]
    assert of_type(turn, "assistant/message") == []
    assert turn[-1]["data"] == {"turn": 3, "reason": "interrupted"}
    assert git("log", "--format=%s", SID).splitlines() == [
        "turn 3: killed before any reply", "turn 2: second", "turn 1: first"]
    check_next_ask_works(gs, fake_api, obj)


def test_kill_mid_stream_keeps_the_text_received(gs, git, repo_path, fake_api, asks):
    ask_ok(gs, "first")
    before = show(gs)["events"]
    fake_api.script(text(SLOW, chunk_size=9, delay=0.05))
    ask = asks("killed mid-stream")
    ask.wait_text(120)
    killed_at = ask.kill()
    seen = ask.text(before=killed_at - LOSS_WINDOW_S)

    obj = check_after_kill(gs, git, repo_path, before)
    turn = last_turn(obj)
    assert of_type(turn, "user/message") == [{"content": "killed mid-stream"}]
    [reply] = of_type(turn, "assistant/message")
    assert reply["interrupted"] is True
    assert reply["content"] and SLOW.startswith(reply["content"])
    assert reply["content"].startswith(seen)
    assert turn[-1]["data"] == {"turn": 2, "reason": "interrupted"}
    assert {"role": "assistant", "content": reply["content"]} in obj["messages"]
    check_next_ask_works(gs, fake_api, obj)


def test_kill_mid_stream_after_tool_calls(gs, git, repo_path, fake_api, asks, tmp_path):
    (tmp_path / "config.yaml").write_text("tools: [time]\n")  # the clock, opt-in
    ask_ok(gs, "first")
    before = show(gs)["events"]
    fake_api.script(
        tool_calls(("get_current_time", '{"timezone": "UTC"}'), ("get_current_time", "{}")),
        text(SLOW, chunk_size=9, delay=0.05),
    )
    ask = asks("what time is it, slowly")
    ask.wait_text(80)
    killed_at = ask.kill()
    seen = ask.text(before=killed_at - LOSS_WINDOW_S)

    obj = check_after_kill(gs, git, repo_path, before)
    turn = last_turn(obj)
    calls, partial = of_type(turn, "assistant/message")
    assert len(calls["tool_calls"]) == 2 and calls["interrupted"] is False
    results = of_type(turn, "tool/result")
    assert [r["id"] for r in results] == [c["id"] for c in calls["tool_calls"]]
    assert not any(r["is_error"] for r in results)
    assert partial["interrupted"] is True
    assert partial["content"] and SLOW.startswith(partial["content"])
    assert partial["content"].startswith(seen)
    assert turn[-1]["data"]["reason"] == "interrupted"
    roles = [m["role"] for m in obj["messages"]]
    assert roles[-4:] == ["assistant", "tool", "tool", "assistant"]
    check_next_ask_works(gs, fake_api, obj)


def test_kill_between_steps_of_a_tool_turn(gs, git, repo_path, fake_api, asks, gates, tmp_path):
    (tmp_path / "config.yaml").write_text("tools: [time]\n")
    for prompt in ("one", "two", "three"):
        ask_ok(gs, prompt)
    before = show(gs)["events"]
    fake_api.script(tool_calls(("get_current_time", "{}")))
    gate = gates(2)  # the request after the tool ran waits until the process is dead
    ask = asks("killed between steps")
    gate.wait()
    ask.kill()
    gate.release()

    obj = check_after_kill(gs, git, repo_path, before)
    assert [t[1]["data"]["content"] for t in turns(obj["events"])] == [
        "one", "two", "three", "killed between steps"]
    turn = last_turn(obj)
    [calls] = of_type(turn, "assistant/message")
    [result] = of_type(turn, "tool/result")
    assert result["id"] == calls["tool_calls"][0]["id"] and result["is_error"] is False
    assert len(of_type(turn, "step/start")) == 2 == len(of_type(turn, "step/end"))
    assert turn[-1]["data"] == {"turn": 4, "reason": "interrupted"}
    check_next_ask_works(gs, fake_api, obj)


def test_kill_at_start_up_between_turns_changes_nothing(gs, git, repo_path, fake_api, asks):
    ask_ok(gs, "one")
    ask_ok(gs, "two")
    before = show(gs)
    tip = git("rev-parse", SID)
    ask = asks("never sent")
    time.sleep(0.1)  # python is still importing: nothing of the turn exists yet
    ask.kill()

    obj = check_after_kill(gs, git, repo_path, before["events"])
    assert obj == before
    assert git("rev-parse", SID) == tip
    assert not any(m["content"] == "never sent" for r in fake_api.requests
                   for m in r["messages"])
    check_next_ask_works(gs, fake_api, obj)


# --------------------------------------------------------------------------- random points


def random_script(rng: random.Random) -> tuple[list[Reply], float]:
    """Replies for one turn (plain, one tool step, or two tool steps) and the stream time."""
    chunk, delay = rng.randint(3, 9), rng.uniform(0.01, 0.03)
    body = "".join(f"r{rng.randint(0, 999):03d} " for _ in range(rng.randint(10, 30)))
    replies: list[Reply] = []
    kind = rng.choice(["text", "tools", "tools2"])
    if kind in ("tools", "tools2"):
        replies.append(tool_calls(("get_current_time", "{}"),
                                  ("get_current_time", '{"timezone": "Nowhere/Else"}')))
    if kind == "tools2":
        replies.append(tool_calls(("get_current_time", '{"timezone": "UTC"}'),
                                  content="Let me check again. "))
    replies.append(text(body, chunk_size=chunk, delay=delay))
    return replies, len(body) / chunk * delay


def test_random_kills_lose_nothing_committed_or_sent(gs, git, repo_path, fake_api, asks, tmp_path):
    (tmp_path / "config.yaml").write_text("tools: [time]\n")
    rng = random.Random(20240611)
    ask_ok(gs, "seed turn")
    before = show(gs)["events"]
    prompts_sent = ["seed turn"]
    for i in range(15):
        fake_api.reset()
        replies, stream_s = random_script(rng)
        fake_api.script(*replies)
        prompt = f"prompt {i}"
        ask = asks(prompt)
        if rng.random() < 0.2:
            time.sleep(rng.uniform(0.0, 0.8))  # anywhere in start-up
        else:
            deadline = time.monotonic() + TIMEOUT
            while not fake_api.requests and ask.proc.poll() is None:
                assert time.monotonic() < deadline
                time.sleep(0.005)
            time.sleep(rng.uniform(0.0, stream_s * 1.3 + 0.1))
        ask.kill()
        exit_code = ask.proc.returncode
        sent = any(m.get("content") == prompt for r in fake_api.requests for m in r["messages"])

        obj = check_after_kill(gs, git, repo_path, before)
        where = f"iteration {i} ({len(replies)} replies)"
        prompts = [e["data"]["content"] for e in obj["events"] if e["type"] == "user/message"]
        assert prompts[: len(prompts_sent)] == prompts_sent, where
        new = prompts[len(prompts_sent):]
        # A prompt that reached the server is kept; one killed before the request went out
        # may be kept too (it was journaled first).
        assert (new == [prompt]) if sent else (new in ([], [prompt])), where
        prompts_sent += new
        if exit_code == 0:  # finished before the kill landed
            assert last_turn(obj)[-1]["data"]["reason"] == "completed", where
        if new:
            scripted = [r.content for r in replies]
            for reply in of_type(last_turn(obj), "assistant/message"):
                if reply.get("interrupted"):
                    assert reply["content"], where
                    assert any(c.startswith(reply["content"]) for c in scripted), where
        before = obj["events"]

    check_next_ask_works(gs, fake_api, show(gs))


# --------------------------------------------------------------------------- object locks


def test_object_lock_left_by_a_kill_during_the_save_does_not_block_the_session(
        gs, git, repo_path, fake_api):
    """A kill while dulwich writes a loose object leaves ``objects/xx/<sha>.lock``.

    The journal of that turn already held ``turn/end``, so recovery saves byte-identical
    events: the same blob and tree, whose lock file is still there (dulwich then raised
    FileLocked on every later save: the session could never be saved again; found by the
    random kills below). Rebuilt here exactly:
    the repo as the killed save left it (branch at the previous commit, turn in the journal,
    the blob's ``.lock`` and no blob), the lock a minute old.
    """
    ask_ok(gs, "one")
    ask_ok(gs, "two")
    after = show(gs)
    parent, commit = git("rev-parse", f"{SID}^", SID).split()
    blob = git("rev-parse", f"{SID}:session.jsonl").strip()
    tree = git("rev-parse", f"{SID}^{{tree}}").strip()
    old_lines = git("cat-file", "blob", f"{parent}:session.jsonl").splitlines(keepends=True)
    new_lines = git("cat-file", "blob", f"{SID}:session.jsonl").splitlines(keepends=True)

    # Undo the last save: branch and reflog back at the parent, its objects gone.
    git("update-ref", "--no-deref", f"refs/heads/{SID}", parent, commit)
    for reflog in (repo_path / "logs" / "refs" / "heads" / SID, repo_path / "logs" / "HEAD"):
        if reflog.exists():
            kept = [line for line in reflog.read_text().splitlines(keepends=True)
                    if commit not in line]
            reflog.write_text("".join(kept))
    for sha in (commit, tree, blob):
        (repo_path / "objects" / sha[:2] / sha[2:]).unlink()
    lock = repo_path / "objects" / blob[:2] / f"{blob[2:]}.lock"
    lock.write_bytes(b"x\x9c")  # the start of a zlib stream, then the kill
    os.utime(lock, (time.time() - 60, time.time() - 60))
    journal = repo_path / "gs" / "journal" / f"{SID}.jsonl"
    journal.write_text(f'{{"journal": 1, "base": "{parent}", "header": null}}\n'
                       + "".join(new_lines[len(old_lines):]))

    obj = check_after_kill(gs, git, repo_path, after["events"][: len(old_lines) - 1])
    assert obj["events"] == after["events"]
    assert git("rev-parse", f"{SID}:session.jsonl").strip() == blob
    check_next_ask_works(gs, fake_api, obj)
