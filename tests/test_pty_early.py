"""The chat's early prompt (cli/display/early.py) in a pty: drawn first, keys typed meanwhile kept, the
mode given back."""

from __future__ import annotations

import shlex

import pexpect
import pytest
from conftest import GS
from fakeapi import text
from test_pty import TIMEOUT, chat_env, spawn_gs

from gitsessions.cli.display import early

__all__ = ["chat_env", "spawn_gs"]  # fixtures shared with test_pty

EARLY = "early › "


def answered_then_left(child: pexpect.spawn, fake_api, line: str) -> None:
    """The reply ("got it") to ``line``, sent, then the prompt again, and ``/exit``: the chat ends well."""
    child.expect_exact("got it")
    child.expect_exact(EARLY.strip())
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert fake_api.requests[0]["messages"][-1] == {"role": "user", "content": line}


def test_the_prompt_is_drawn_first_and_prompt_toolkit_draws_it_again_in_place(fake_api, spawn_gs):
    fake_api.script(text("got it"))
    child = spawn_gs("chat", "early")
    child.expect_exact(EARLY)
    assert child.before == ""  # the prompt is the first thing on the screen: drawn before the imports
    child.expect_exact(EARLY.strip())  # prompt_toolkit's, drawn over the first
    assert "\n" not in child.before and "\r" in child.before  # on the same line: one prompt
    child.expect_exact("session early")  # the banner, above the prompt once the session is open
    child.send("hello there\r")
    answered_then_left(child, fake_api, "hello there")


def test_typed_ahead_keys_are_the_first_line_below_the_banner_and_the_prompt_is_drawn_once(fake_api, spawn_gs):
    # A line typed ahead ended the first prompt before the session was open: its banner came
    # below the line. The session now opens first: the early prompt is erased, the banner
    # written where it was, and the prompt drawn below it with the line.
    fake_api.script(text("got it"))
    child = spawn_gs("chat", "early")
    child.expect_exact(EARLY)
    child.send("hello there\r")  # before prompt_toolkit runs (it is imported after this draw)
    child.expect_exact("session early")
    assert "hello" not in child.before and EARLY.strip() not in child.before
    assert "\r\x1b[K" in child.before  # (it is erased: the banner is written where it was)
    child.expect_exact(EARLY.strip())  # prompt_toolkit's, below the banner: the only prompt on the screen
    child.expect_exact("hello there")
    answered_then_left(child, fake_api, "hello there")


def test_a_paste_while_the_prompt_is_held_is_one_line(fake_api, spawn_gs):
    # The terminal marks a paste only when asked to: the early prompt asks, as prompt_toolkit does,
    # so a pasted block is one message, not a turn per line.
    fake_api.script(text("one turn"))
    child = spawn_gs("chat", "early")
    child.expect_exact(EARLY)
    child.expect_exact("\x1b[?2004h")
    assert child.before == ""  # asked with the early prompt, not only once prompt_toolkit drew its own
    child.send("\x1b[200~first line\rsecond line\x1b[201~\r")  # what the terminal sends for a paste
    child.expect_exact("one turn")
    child.expect_exact(EARLY.strip())
    child.sendline("/exit")
    child.expect(pexpect.EOF)
    child.close()
    assert len(fake_api.requests) == 1
    assert fake_api.requests[0]["messages"][-1] == {"role": "user", "content": "first line\nsecond line"}


def test_a_new_session_shows_the_id_it_gets(fake_api, spawn_gs):
    fake_api.script(text("fine"))
    child = spawn_gs("chat")
    child.expect(r"^([0-9a-f]{8}) › ")
    sid = child.match.group(1)
    child.send("hi\r")
    child.expect_exact("fine")
    child.sendline("/exit")
    child.expect_exact(f"resume with: gs chat {sid}")
    child.expect(pexpect.EOF)


@pytest.mark.parametrize("key", ["c", "d"], ids=["ctrl-c", "ctrl-d"])
def test_an_early_ctrl_c_or_ctrl_d_leaves_as_at_the_prompt_and_the_mode_comes_back(fake_api, chat_env, key):
    shell = pexpect.spawn("bash", ["--norc", "--noprofile", "-i"], env={**chat_env, "PS1": "sh$ "},
                          dimensions=(24, 100), encoding="utf-8", codec_errors="replace", timeout=TIMEOUT)
    try:
        shell.expect_exact("sh$ ")
        shell.sendline("stty -g; echo MODE-END")
        shell.expect_exact("MODE-END\r\n")
        shell.expect_exact("MODE-END")
        before = shell.before.strip()
        shell.sendline(shlex.join([*GS, "chat", "early"]) + "; echo STATUS=$?")
        shell.expect_exact(EARLY)
        shell.sendcontrol(key)  # while the prompt is held: a byte to prompt_toolkit, no signal
        shell.expect_exact("nothing was saved")
        shell.expect(r"STATUS=(\d+)")
        assert shell.match.group(1) == "0"
        shell.expect_exact("sh$ ")
        shell.sendline("stty -g; echo MODE-END")
        shell.expect_exact("MODE-END\r\n")
        shell.expect_exact("MODE-END")
        assert shell.before.strip() == before
        assert fake_api.requests == []
    finally:
        shell.close(force=True)


def test_the_mode_comes_back_when_the_chat_is_killed_before_the_hand_over(chat_env):
    shell = pexpect.spawn("bash", ["--norc", "--noprofile", "-i"], env={**chat_env, "PS1": "sh$ "},
                          dimensions=(24, 100), encoding="utf-8", codec_errors="replace", timeout=TIMEOUT)
    try:
        shell.expect_exact("sh$ ")
        shell.sendline("stty -g; echo MODE-END")
        shell.expect_exact("MODE-END\r\n")
        shell.expect_exact("MODE-END")
        before = shell.before.strip()
        # killed as soon as its prompt is drawn: before prompt_toolkit takes the terminal
        shell.sendline(shlex.join([*GS, "chat", "early"]) + " & sleep 0.02; kill -TERM $!; wait; echo GONE")
        shell.expect_exact("GONE\r\n")
        shell.expect_exact("sh$ ")
        shell.sendline("stty -g; echo MODE-END")
        shell.expect_exact("MODE-END\r\n")
        shell.expect_exact("MODE-END")
        assert shell.before.strip() == before
    finally:
        shell.close(force=True)


@pytest.mark.parametrize("args", [("chat", "early", "--raw"), ("--no-color", "chat", "early"),
                                  ("chat", "early", "--recap", "2"), ("chat", "-c")])
def test_options_take_the_usual_way(fake_api, spawn_gs, gs, args):
    gs("ask", "-S", "early", "first")  # something to continue
    child = spawn_gs(*args)
    child.expect_exact("›")
    assert child.before != "" and not child.before.startswith("early")  # prompt_toolkit's escapes came first
    child.sendcontrol("d")
    child.expect(pexpect.EOF)


def test_piped_stdin_takes_the_usual_way(fake_api, chat_env):
    fake_api.script(text("piped reply"))
    cmd = "echo hello | " + shlex.join([*GS, "chat", "early"])
    out = pexpect.run(f"bash -c {shlex.quote(cmd)}", env=chat_env, encoding="utf-8", timeout=TIMEOUT)
    assert "piped reply" in out
    assert EARLY not in out
    assert fake_api.requests[0]["messages"][-1]["content"] == "hello"


def test_a_tab_typed_ahead_completes_the_line_that_is_sent(fake_api, spawn_gs):
    # prompt_toolkit's Tab completed in a task of its own, after the Enter typed with it: the
    # line shown was /help, the line sent /he.
    child = spawn_gs("chat", "early")
    child.expect_exact(EARLY)
    child.send("/he\t\r")  # before prompt_toolkit runs: read with the Enter, in one go
    child.expect_exact("/exit")  # /help's list
    child.expect_exact(EARLY.strip())
    assert "unknown command" not in child.before
    child.send("/exit\r")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    assert fake_api.requests == []


@pytest.mark.parametrize("name", ["abcdefghijk", "abcdefghijklmnopq"], ids=["nearly-as-wide", "as-wide"])
def test_on_a_narrow_terminal_the_prompt_is_cut_to_fit_and_not_drawn_early(fake_api, chat_env, name):
    # 20 columns: a prompt as wide as the terminal was drawn as nothing by prompt_toolkit (the
    # whole chat with it), and one nearly as wide, drawn early too, wrapped a column a row.
    fake_api.script(text("narrow reply"))
    child = pexpect.spawn(GS[0], [*GS[1:], "chat", name], env={**chat_env, "COLUMNS": "20"}, dimensions=(24, 20),
                          encoding="utf-8", codec_errors="replace", timeout=TIMEOUT)
    try:
        child.expect_exact("abcdefgh… ›")  # 12 columns: 8 left for the line
        assert name not in child.before  # not drawn early, uncut
        child.send("hello\r")
        child.expect_exact("narrow reply")
        child.expect_exact("abcdefgh… ›")
        child.send("/exit\r")
        child.expect(rf"resume\s+with:\s+gs\s+chat\s+{name}")  # wrapped at words on 20 columns
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert fake_api.requests[0]["messages"][-1] == {"role": "user", "content": "hello"}


def test_a_prompt_is_cut_to_leave_room_for_the_line():
    assert early.fitted_prompt("work › ", 100) == "work › "
    assert early.fitted_prompt("abcdefghijklmnopq › ", 20) == "abcdefgh… › "
    assert early.fitted_prompt("abcdefghijklmnopq › ", 12) == "› "  # no room for a letter of the name
    assert all(early.fits(early.fitted_prompt("x" * n + " › ", 20), 20) for n in range(1, 40))


@pytest.mark.parametrize("term", ["dumb", "unknown"])
def test_a_dumb_terminal_gets_a_plain_prompt_after_the_banner_and_its_turn_is_answered(fake_api, chat_env, term):
    # prompt_toolkit writes a dumb terminal's prompt as text and runs no app of the chat's: the
    # work that waited for the prompt to be drawn (the session's opening) never started, and
    # Enter hung. Nothing is drawn early there; the session opens before the prompt.
    fake_api.script(text("plain reply"))
    child = pexpect.spawn(GS[0], [*GS[1:], "chat", "early"], env={**chat_env, "TERM": term}, dimensions=(24, 100),
                          encoding="utf-8", codec_errors="replace", timeout=TIMEOUT)
    try:
        child.expect_exact("session early")
        assert EARLY not in child.before  # the banner first: no prompt drawn early
        child.expect_exact(EARLY)
        child.send("hello\r")
        child.expect_exact("plain reply")
        assert "\x1b[?2004" not in child.before  # no bracketed paste asked of it: it would show the escape
        child.expect_exact(EARLY)
        child.send("/exit\r")
        child.expect_exact("resume with: gs chat early")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert fake_api.requests[0]["messages"][-1] == {"role": "user", "content": "hello"}


def test_prompt_toolkits_dumb_prompt_starts_what_waits_for_the_prompt(chat_env):
    # The chat's prompt on a dumb terminal, alone: on_shown is called although nothing renders.
    code = ("from prompt_toolkit.history import InMemoryHistory\n"
            "from gitsessions.cli.repl.prompt import prompt_io\n"
            "from gitsessions.cli.repl.terminal import ReplyKeys\n"
            "faces = prompt_io(InMemoryHistory(), str, str, ReplyKeys(), on_shown=lambda: print('SHOWN', flush=True))\n"
            "print('LINE', faces.read_line('p > '))\n")
    child = pexpect.spawn(GS[0], ["-c", code], env={**chat_env, "TERM": "dumb"}, dimensions=(24, 100),
                          encoding="utf-8", codec_errors="replace", timeout=TIMEOUT)
    try:
        child.expect_exact("SHOWN")
        child.send("typed\r")
        child.expect_exact("LINE typed")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)


def test_nothing_is_held_when_not_started_as_gs():
    assert early.hold(["chat", "early"]) is None  # this process is pytest
    assert early.held_session() is None
    early.hand_over(EARLY)  # nothing held: nothing done
