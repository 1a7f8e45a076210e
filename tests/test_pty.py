"""``gs chat`` in a real pseudo-terminal (pexpect): streaming, Ctrl+C, Ctrl+D, slash commands.

The child runs in the isolated environment of conftest, talks to the fake API and sees a
24x100 xterm. ``PROMPT_TOOLKIT_NO_CPR=1`` tells prompt_toolkit not to wait for cursor
position reports, which a pty (unlike a terminal emulator) never answers; without it
prompt_toolkit prints a warning after a delay and the output depends on timing.
"""

from __future__ import annotations

import os
import shlex
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pexpect
import pytest
from conftest import GS
from fakeapi import FakeChatServer, text, validate_messages

#: What the REPL prints before each input line. prompt_toolkit draws the trailing space of
#: ``demo › `` as a cursor move, so only the visible part is matched.
PROMPT = "demo ›"
TIMEOUT = 10


@pytest.fixture
def chat_env(fake_api: FakeChatServer) -> dict[str, str]:
    """The isolated environment (conftest) plus the fake API and a plain xterm."""
    env = dict(os.environ)
    env.update(
        OPENAI_BASE_URL=fake_api.base_url,
        OPENAI_API_KEY="test-key",
        TERM="xterm",
        PROMPT_TOOLKIT_NO_CPR="1",
        COLUMNS="100",
        LINES="24",
    )
    return env


@contextmanager
def _children(env: dict[str, str]) -> Iterator[Callable[..., pexpect.spawn]]:
    """``start(*args)`` runs ``gs <args>`` in a 24x100 pty; every child is reaped when the block ends."""
    children: list[pexpect.spawn] = []

    def start(*args: str) -> pexpect.spawn:
        child = pexpect.spawn(GS[0], [*GS[1:], *args], env=env,
                              dimensions=(24, 100), encoding="utf-8", codec_errors="replace",
                              timeout=TIMEOUT)
        children.append(child)
        return child

    try:
        yield start
    finally:
        for child in children:
            if child.isalive():
                child.terminate(force=True)
            child.close()


@pytest.fixture
def spawn_gs(chat_env: dict[str, str]):
    """Start ``gs <args>`` in a pty (``spawn_gs("chat", "-r")``); every child is reaped at teardown."""
    with _children(chat_env) as start:
        yield start


@pytest.fixture
def spawn_chat(chat_env: dict[str, str]):
    """Start ``gs chat <session>`` in a pty and wait for its prompt; every child is reaped at teardown."""
    with _children(chat_env) as start:

        def spawn(session: str = "demo") -> pexpect.spawn:
            child = start("chat", session)
            child.expect(PROMPT)
            return child

        yield spawn


@contextmanager
def chat_in_a_shell(env: dict[str, str]) -> Iterator[pexpect.spawn]:
    """``gs chat demo`` started by a job-control shell (bash), as a user runs it; yields the shell at the prompt.

    When the block ends the chat is left with ``/exit`` and the shell with ``exit``.
    """
    shell = pexpect.spawn("bash", ["--norc", "--noprofile", "-i"], env={**env, "PS1": "sh$ "},
                          dimensions=(24, 100), encoding="utf-8", codec_errors="replace", timeout=TIMEOUT)
    try:
        shell.expect_exact("sh$ ")
        shell.sendline(shlex.join([*GS, "chat", "demo"]))
        shell.expect(PROMPT)
        yield shell
        shell.sendline("/exit")
        shell.expect_exact("resume with: gs chat demo")
        shell.expect_exact("sh$ ")
        shell.sendline("exit $?")
        shell.expect(pexpect.EOF)
    finally:
        shell.close(force=True)


def finish(child: pexpect.spawn) -> str:
    """Wait for the child to exit; return everything it printed after the last expect."""
    child.expect(pexpect.EOF)
    tail = child.before
    child.close()
    return tail


def turn_events(events: list[dict], turn: int) -> list[dict]:
    """The events of turn ``turn`` (from its ``turn/start`` up to the next one)."""
    out, current = [], None
    for ev in events:
        if ev["type"] == "turn/start":
            current = ev["data"]["turn"]
        if current == turn:
            out.append(ev)
    return out


def test_prompt_streams_reply_lists_sessions_and_saves(fake_api, spawn_chat, git):
    reply = "A ref is a name for a commit; branches are refs under refs/heads/."
    fake_api.script(text(reply, chunk_size=6, delay=0.1))  # 12 pieces, ~1.1 s
    child = spawn_chat()

    child.sendline("What is a git ref?")
    child.expect_exact("A ref is")
    first_seen = time.monotonic()
    child.expect_exact("refs/heads/.")
    last_seen = time.monotonic()
    # The text arrived piece by piece, not all at once at the end of the reply.
    assert last_seen - first_seen > 0.3
    child.expect(PROMPT)

    child.sendline("/sessions")
    child.expect(r"\* demo +2 messages")
    child.expect(PROMPT)

    child.sendline("/exit")
    tail = finish(child)
    assert child.exitstatus == 0, tail
    assert "resume with: gs chat demo" in tail

    assert git("log", "--format=%s", "demo").splitlines() == ["turn 1: What is a git ref?"]
    assert fake_api.requests[0]["messages"][-1] == {"role": "user", "content": "What is a git ref?"}


def test_ctrl_c_cancels_the_reply_keeps_partial_text_and_goes_on(fake_api, spawn_chat, gs):
    slow = "".join(f"word{i:02d} " for i in range(40))  # 40 pieces of 7 chars, 0.1 s apart
    fake_api.script(text(slow, chunk_size=7, delay=0.1))
    child = spawn_chat()

    child.sendline("tell me a long story")
    child.expect_exact("word03 ")
    child.sendintr()
    child.expect_exact("(reply cancelled")
    child.expect(PROMPT)

    child.sendline("second prompt")
    child.expect_exact("echo: second prompt")
    child.expect(PROMPT)
    child.sendline("/exit")
    tail = finish(child)
    assert child.exitstatus == 0, tail
    assert "Traceback" not in tail

    shown = gs("show", "demo", "--format", "json")  # read back in-process: the chat was the process
    assert shown.code == 0, shown.err
    events = shown.json()["events"]
    first = turn_events(events, 1)
    replies = [e["data"] for e in first if e["type"] == "assistant/message"]
    assert len(replies) == 1
    partial = replies[0]["content"]
    assert partial.startswith("word00 word01 word02 word03 ")
    assert slow.startswith(partial) and partial != slow
    assert replies[0]["interrupted"] is True
    assert first[-1]["type"] == "turn/end" and first[-1]["data"]["reason"] == "aborted"

    second = turn_events(events, 2)
    assert second[-1]["type"] == "turn/end" and second[-1]["data"]["reason"] == "completed"
    assert [e["data"]["content"] for e in second if e["type"] == "assistant/message"] == [
        "echo: second prompt"
    ]

    # The second request carried a valid transcript holding the partial reply.
    assert len(fake_api.requests) == 2
    messages = fake_api.requests[1]["messages"]
    assert validate_messages(messages) is None
    assert {"role": "assistant", "content": partial} in messages
    assert messages[-1] == {"role": "user", "content": "second prompt"}


@pytest.mark.parametrize("key", ["d", "c"], ids=["ctrl-d", "ctrl-c"])
def test_ctrl_d_or_ctrl_c_at_empty_prompt_leaves_cleanly(fake_api, spawn_chat, key, repo_path):
    child = spawn_chat()
    child.sendcontrol(key)
    tail = finish(child)
    assert child.exitstatus == 0, tail
    assert "Traceback" not in tail
    assert "nothing was saved" in tail
    assert fake_api.requests == []
    assert not (repo_path / "gs" / "journal" / "demo.jsonl").exists()


def test_line_history_is_kept_and_redacted(fake_api, spawn_chat, repo_path):
    """Up-arrow history lives in the session repo and, like the log, never holds a secret."""
    secret = "sk-proj-" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6"
    child = spawn_chat()
    child.sendline(f"my key {secret} ok")
    child.expect(PROMPT)
    child.sendline("/exit")
    finish(child)
    history = (repo_path / "gs" / "prompt-history").read_text()
    assert "my key [REDACTED:api-key] ok" in history and secret not in history
