"""Faults at the terminal and the process.

- Keys in a real pseudo-terminal: Ctrl+C pressed together with Enter cancels that request,
  Ctrl+C while a reply streams keeps what was typed ahead, Ctrl+Z suspends and ``fg``
  resumes with nothing of it stored.
- Two writers on one session: the second is refused at once, naming the holder and
  ``--wait``; with ``--wait`` it takes its turn when the first lets go (real processes).
- An unexpected error (a bug) has its own exit status, apart from usage errors (2).
"""

from __future__ import annotations

import os
import select
import subprocess
import time

import pytest
from conftest import GS
from fakeapi import stall, text
from test_pty import PROMPT, TIMEOUT, chat_env, chat_in_a_shell, finish, spawn_chat, turn_events

from gitsessions import cli

__all__ = ["chat_env", "spawn_chat"]  # fixtures shared with test_pty

def _events(gs) -> list[dict]:
    """The events of session ``demo``, read back in-process (the chat was the process)."""
    shown = gs("show", "demo", "--format", "json")
    assert shown.code == 0, shown.err
    return shown.json()["events"]


SLOW = "".join(f"word{i:02d} " for i in range(30))  # 30 pieces of 7 chars, 0.1 s apart


def _wait_for_request(fake_api, count: int = 1) -> None:
    """Return once the fake API has received ``count`` requests (bounded by TIMEOUT)."""
    deadline = time.monotonic() + TIMEOUT
    while len(fake_api.requests) < count:
        assert time.monotonic() < deadline, "the request never came"
        time.sleep(0.02)


# --------------------------------------------------------------------------- keys (item 12)


def test_ctrl_c_pressed_with_enter_cancels_that_request(fake_api, spawn_chat, gs):
    child = spawn_chat()  # the fake API echoes each prompt at once

    child.send("tell me a story\r\x03")  # one write: the terminal reads both keys at once
    child.expect_exact("(reply cancelled)")
    child.expect(PROMPT)
    child.sendline("next")
    child.expect_exact("echo: next")
    child.expect(PROMPT)
    child.sendline("/exit")
    tail = finish(child)
    assert child.exitstatus == 0, tail

    events = _events(gs)
    first = turn_events(events, 1)
    assert first[-1]["data"]["reason"] == "aborted"
    assert [e["data"]["content"] for e in first if e["type"] == "user/message"] == ["tell me a story"]
    assert all(e["data"]["interrupted"] for e in first if e["type"] == "assistant/message")
    assert turn_events(events, 2)[-1]["data"]["reason"] == "completed"


def test_ctrl_c_before_the_first_chunk_cancels_the_request(fake_api, spawn_chat, gs):
    fake_api.script(stall(seconds=TIMEOUT), text("second reply"))
    child = spawn_chat()

    child.sendline("hello?")
    _wait_for_request(fake_api)  # sent, and nothing has come back
    child.sendintr()
    child.expect_exact("(reply cancelled)")
    child.expect(PROMPT)
    child.sendline("/exit")
    tail = finish(child)
    assert child.exitstatus == 0, tail
    assert turn_events(_events(gs), 1)[-1]["data"]["reason"] == "aborted"


def test_ctrl_c_while_streaming_keeps_the_text_typed_ahead(fake_api, spawn_chat, gs):
    fake_api.script(text(SLOW, chunk_size=7, delay=0.1), text("second reply"))
    child = spawn_chat()

    child.sendline("tell me a story")
    child.expect_exact("word02 ")
    child.send("and then")  # typed while the reply streams, no Enter yet
    child.sendintr()
    child.expect_exact("(reply cancelled")
    child.expect(PROMPT)
    child.send("?\r")  # the next prompt holds what was typed ahead
    child.expect_exact("second reply")
    child.expect(PROMPT)
    child.sendline("/exit")
    tail = finish(child)
    assert child.exitstatus == 0, tail

    assert fake_api.requests[1]["messages"][-1] == {"role": "user", "content": "and then?"}


def test_ctrl_z_suspends_and_fg_resumes_with_nothing_stored(fake_api, chat_env, repo_path, git):
    """Under a job-control shell, as a user runs it: Ctrl+Z stops gs, ``fg`` brings it back."""
    fake_api.script(text("echo back"))
    with chat_in_a_shell(chat_env) as shell:
        shell.send("ab")
        shell.sendcontrol("z")
        shell.expect("Stopped")
        shell.expect_exact("sh$ ")
        shell.sendline("fg")
        shell.expect(PROMPT)  # redrawn, holding what was typed before the suspend
        shell.send("c\r")
        shell.expect_exact("echo back")
        shell.expect(PROMPT)

    assert fake_api.requests[0]["messages"][-1] == {"role": "user", "content": "abc"}
    assert "\x1a" not in git("show", "demo:session.jsonl")
    assert "\\u001a" not in git("show", "demo:session.jsonl")
    assert "\x1a" not in (repo_path / "gs" / "prompt-history").read_text()


# --------------------------------------------------------------------------- exit status (item 13)


@pytest.fixture
def buggy_command():
    """A ``gs fail-like-a-bug`` command on the real app that fails as a bug does."""

    @cli.app.command("fail-like-a-bug")
    def fail_like_a_bug() -> None:
        raise RuntimeError("something nobody planned for")

    command = cli.app.registered_commands[-1]
    cli._command.cache_clear()  # typer's click command is built once per process
    yield
    cli.app.registered_commands.remove(command)
    cli._command.cache_clear()


def test_an_unexpected_error_has_its_own_exit_status(gs, buggy_command):
    r = gs("fail-like-a-bug")
    assert r.code == cli.EXIT_INTERNAL == 70
    assert r.err.strip() == ("gs: unexpected error: RuntimeError: something nobody planned for "
                             "(run with --debug for details)")
    with pytest.raises(RuntimeError):
        gs("--debug", "fail-like-a-bug")  # --debug shows the traceback instead


def test_usage_errors_keep_status_2(gs):
    assert gs("no-such-command").code == 2
    assert gs("ask").code == 2  # no prompt
    assert gs("ask", "-S", "work", "   ").code == 2  # an empty prompt


# --------------------------------------------------------------------------- two writers (item 11)


def _read_until(stream, wanted: str) -> str:
    """Read a child's pipe until ``wanted`` shows (bounded by TIMEOUT); return what came."""
    seen = b""
    deadline = time.monotonic() + TIMEOUT
    while wanted.encode() not in seen:
        left = deadline - time.monotonic()
        assert left > 0, f"never saw {wanted!r}; got {seen!r}"
        ready, _, _ = select.select([stream], [], [], left)
        chunk = os.read(stream.fileno(), 4096) if ready else b""
        assert chunk or not ready, f"the pipe closed before {wanted!r}; got {seen!r}"
        seen += chunk
    return seen.decode()


@pytest.fixture
def idle_chat(gs_env):
    """A ``gs chat demo`` process that saved one turn and now sits idle, holding the lock."""
    proc = subprocess.Popen([*GS, "chat", "demo"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        proc.stdin.write(b"hi\n")
        proc.stdin.flush()
        _read_until(proc.stdout, "echo: hi\n")  # the newline comes once the turn is saved
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def test_a_second_writer_is_refused_at_once_naming_the_holder_and_wait(gs, idle_chat, fake_api):
    for command in (["ask", "-S", "demo", "second"], ["chat", "demo"], ["title", "demo", "new title"],
                    ["rename", "demo", "other"], ["rm", "demo"]):
        r = gs(*command, input="also\n")
        assert r.code == 1, (command, r.err)
        assert f"session 'demo' is being written by pid {idle_chat.pid} on " in r.err, r.err
        assert "(since 20" in r.err and "--wait[=SECONDS]" in r.err, r.err
    assert len(fake_api.requests) == 1  # refused before the model was asked


def test_a_writer_that_waits_too_short_is_refused_saying_so(gs, idle_chat):
    for command in (["ask", "--wait=0.2", "-S", "demo", "second"], ["chat", "demo", "--wait=0.2"]):
        r = gs(*command, input="also\n")
        assert r.code == 1, (command, r.err)
        assert "gs: session 'demo' is being written by" in r.err and "waiting up to 0.2 s" in r.err
        assert f"is still being written by pid {idle_chat.pid}" in r.err and "after 0.2 s of waiting" in r.err


def test_a_writer_that_waits_takes_its_turn_when_the_holder_lets_go(gs_env, idle_chat, git):
    # A bare --wait takes no value from the next word: "demo" stays the session.
    second = subprocess.Popen([*GS, "ask", "--wait", "demo", "second"], stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        _read_until(second.stderr, f"is being written by pid {idle_chat.pid}")  # it waits
        idle_chat.stdin.close()  # end of input: the chat saves nothing more and leaves
        assert idle_chat.wait(TIMEOUT) == 0
        out, err = second.communicate(timeout=TIMEOUT)
    finally:
        if second.poll() is None:
            second.kill()
    assert second.returncode == 0, err
    assert out.decode().strip() == "echo: second"
    assert git("log", "--format=%s", "demo").splitlines() == ["turn 2: second", "turn 1: hi"]
    git("fsck", "--strict")


def _wait_readable(fd: int) -> None:
    assert select.select([fd], [], [], TIMEOUT)[0], "the terminal never got the keys"


def test_a_ctrl_c_waiting_in_the_terminal_after_enter_is_taken_and_the_rest_kept():
    """Keys that came while prompt_toolkit was leaving raw mode wait as bytes in the terminal."""
    from prompt_toolkit.input import create_input
    from prompt_toolkit.input.typeahead import get_typeahead

    from gitsessions.cli.repl.terminal import ReplyKeys

    main_fd, term_fd = os.openpty()
    try:
        with os.fdopen(os.dup(term_fd), "r") as term:
            input = create_input(term)
            with input.raw_mode():  # as while prompt_toolkit reads: keys come as bytes
                os.write(main_fd, b"ab\x03c")
                _wait_readable(term_fd)
            keys = ReplyKeys()  # the terminal is back in its usual mode, the bytes wait there
            keys.prompt_ended(input, term_fd)
            assert keys.pending
            assert [k.data for k in get_typeahead(input)] == ["a", "b", "c"]
            keys.prompt_starts()  # a Ctrl+C no request took is forgotten at the next prompt
            assert not keys.pending
    finally:
        os.close(main_fd)
        os.close(term_fd)


def test_ctrl_c_during_gs_ask_saves_the_turn_and_exits_130(fake_api, git, monkeypatch):
    """The README's exit status for Ctrl+C; a cancelled `gs ask` exited 1 like a refusal."""
    import signal

    monkeypatch.setenv("OPENAI_BASE_URL", fake_api.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    fake_api.script(text("a slow reply " * 20, chunk_size=4, delay=0.1))
    proc = subprocess.Popen([*GS, "ask", "-S", "work", "cancel me"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # as a shell starts it
    assert proc.stdout is not None
    assert proc.stdout.read(4)  # the reply is streaming
    proc.send_signal(signal.SIGINT)
    _out, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 130, err
    assert b"turn saved (aborted)" in err
    assert "cancel me" in git("show", "work:session.jsonl")
