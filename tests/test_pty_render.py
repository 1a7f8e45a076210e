"""Rendered output and the pager in a real pseudo-terminal (pexpect).

A markdown reply is styled on a terminal and printed as the model wrote it with
``NO_COLOR=1``, ``--raw`` or through a pipe; the text stored is always the model's. A long
``gs log`` goes through the pager (a script standing in for less, which notes that it ran),
a short one does not; neither when stdout is a pipe.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pexpect
import pytest
from conftest import GS
from fakeapi import text, tool_calls
from test_pty import PROMPT, TIMEOUT, chat_env, finish
from test_startup import _AT_PROMPT

__all__ = ["chat_env"]  # a fixture shared with test_pty

REPLY = "# Heading\n\nSome **bold** text and `code`.\n\n- one\n- two\n\n```python\nx = 1\n```\n\nThe end."
BOLD = re.compile(r"\x1b\[1m(\x1b\[[0-9;]*m)*bold")  # bold on, then (maybe more styles and) the word


def unstyled(shown: str) -> str:
    """``shown`` without escape sequences (styles, cursor moves)."""
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown)


@pytest.fixture
def start(chat_env):
    """``start(*args, **env)`` runs ``gs <args>`` in a 24x100 pty with ``env`` added; every child is reaped."""
    children: list[pexpect.spawn] = []

    def run(*args: str, **env: str) -> pexpect.spawn:
        child = pexpect.spawn(GS[0], [*GS[1:], *args], env={**chat_env, **env}, dimensions=(24, 100),
                              encoding="utf-8", codec_errors="replace", timeout=TIMEOUT)
        children.append(child)
        return child

    yield run
    for child in children:
        if child.isalive():
            child.terminate(force=True)
        child.close()


def chat_once(start, *args: str, **env: str) -> str:
    """``gs chat demo`` in a pty: send one prompt, return what was printed up to the next prompt."""
    child = start("chat", "demo", *args, **env)
    child.expect(PROMPT)
    child.sendline("show me markdown")
    child.expect_exact("The end.")
    shown = child.before
    child.expect(PROMPT)
    child.sendline("/exit")
    assert "resume with" in finish(child)
    return shown


def test_a_markdown_reply_is_rendered_on_a_terminal_and_stored_as_written(fake_api, start, gs):
    fake_api.script(text(REPLY, chunk_size=4, delay=0.01))
    shown = chat_once(start)
    assert BOLD.search(shown), shown
    words = unstyled(shown)
    assert "• one" in words and "**bold**" not in words and "# Heading" not in words and "```" not in words
    assert gs("show", "demo", "--format", "json").json()["messages"][1]["content"] == REPLY


def test_a_dim_ellipsis_waits_for_the_first_token_and_a_tool_is_one_dim_line(fake_api, start):
    fake_api.script(tool_calls(("get_current_time", "{}")), text("It is **late**.", chunk_size=3, delay=0.3))
    child = start("chat", "demo", "--tools", "time")
    child.expect(PROMPT)
    child.sendline("what time is it?")
    child.expect_exact("\x1b[2m…")  # dim, before any text
    child.expect(r"\x1b\[2m⚙ get_current_time\(\{\}\) → \d{4}-")  # the tool's line, dim
    child.expect(r"\x1b\[1m(\x1b\[[0-9;]*m)*late")
    child.expect(PROMPT)
    child.sendline("/exit")
    finish(child)


@pytest.mark.parametrize("how", ["NO_COLOR", "--raw", "render: false"])
def test_without_colour_or_rendering_the_reply_is_the_text_as_written(fake_api, start, how, tmp_path):
    fake_api.script(text(REPLY, chunk_size=4, delay=0.01))
    if how == "NO_COLOR":
        shown = chat_once(start, NO_COLOR="1")
    elif how == "--raw":
        shown = chat_once(start, "--raw")
    else:
        (tmp_path / "config.yaml").write_text("render: false\n")
        shown = chat_once(start)
    assert "Some **bold** text and `code`." in shown.replace("\r\n", "\n") and not BOLD.search(shown)
    assert "- one\r\n- two" in shown and "```python" in shown


def test_a_pipe_gets_the_text_as_written(fake_api, gs_proc):
    fake_api.script(text(REPLY), text(REPLY))
    r = gs_proc("chat", "demo", input="show me markdown\n")
    assert r.code == 0 and REPLY in r.out and "\x1b" not in r.out, r.err
    r = gs_proc("ask", "-S", "demo", "again")
    assert r.code == 0 and r.out == REPLY + "\n", r.err


def test_ask_and_show_render_on_a_terminal(fake_api, start):
    fake_api.script(text(REPLY))
    child = start("ask", "-S", "demo", "show me markdown")
    out = finish(child)
    assert child.exitstatus == 0 and BOLD.search(out) and "• one" in unstyled(out), out
    child = start("show", "demo")
    out = finish(child)
    assert child.exitstatus == 0 and BOLD.search(out) and "you › show me markdown" in unstyled(out), out
    child = start("log", "-p", "demo")
    out = finish(child)
    assert child.exitstatus == 0 and BOLD.search(out) and "\x1b[33mcommit " in out, out
    child = start("--no-color", "show", "demo")
    out = finish(child)
    assert "Some **bold** text" in out and "\x1b[" not in out, out


def test_the_recap_of_a_resumed_session_is_rendered_as_gs_show_renders_it(fake_api, start, gs):
    fake_api.script(text(REPLY), text("Over **there**."))
    assert gs("ask", "-S", "demo", "show me markdown").code == 0
    assert gs("ask", "-S", "other", "and there?").code == 0
    child = start("chat", "demo")
    child.expect(PROMPT)  # drawn first: the recap comes above it once the session is open
    child.expect_exact("The end.")
    shown = child.before + "The end."
    child.expect(PROMPT)
    assert BOLD.search(shown), shown
    words = unstyled(shown)
    assert "you › show me markdown" in words and "• one" in words and "The end." in words
    assert "**bold**" not in words and "# Heading" not in words and "```" not in words
    child.sendline("/open other")
    child.expect("other ›")
    assert re.search(r"\x1b\[1m(\x1b\[[0-9;]*m)*there", child.before) and "**there**" not in child.before
    child.sendline("/exit")
    finish(child)
    child = start("chat", "demo", NO_COLOR="1")
    child.expect(PROMPT)
    child.expect_exact("- two")
    assert "Some **bold** text and `code`." in child.before and "- one\r\n" in child.before
    child.expect(PROMPT)
    assert not BOLD.search(child.before)
    child.sendline("/exit")
    finish(child)


def _imported_at_prompt(chat_env, *args: str) -> list[str]:
    """The rich, pygments and markdown-it modules ``gs chat ARGS`` imported when its first prompt is asked for."""
    probe = _AT_PROMPT.replace("m.startswith(('gitsessions', 'dulwich', 'rich'))",
                               "m.split('.')[0] in ('rich', 'pygments', 'markdown_it')")
    child = pexpect.spawn(sys.executable, ["-c", probe, "chat", *args], env=chat_env, dimensions=(24, 100),
                          encoding="utf-8", codec_errors="replace", timeout=TIMEOUT)
    child.expect(r"IMPORTED (\[.*?\])")
    modules = eval(child.match.group(1))  # a list literal printed by the child
    child.expect("›")
    child.sendcontrol("d")
    child.expect(pexpect.EOF)
    return modules


def test_rich_is_imported_after_the_chats_first_prompt_even_when_a_recap_is_rendered(chat_env, gs):
    gs("ask", "-S", "demo", "hi")
    assert _imported_at_prompt(chat_env, "fresh") == []  # a new session: nothing to recap
    assert _imported_at_prompt(chat_env, "demo", "--recap", "0") == []
    assert _imported_at_prompt(chat_env, "demo") == []  # its last exchange, rendered behind the prompt


@pytest.fixture
def pager(tmp_path: Path) -> tuple[str, Path]:
    """A pager that notes each run in a file, then shows its input (``cat``)."""
    mark = tmp_path / "pager-ran"
    script = tmp_path / "fake-pager"
    script.write_text(f"#!/bin/sh\necho \"LESS=$LESS\" >> '{mark}'\nexec cat\n")
    script.chmod(0o755)
    return str(script), mark


def test_a_long_log_goes_through_the_pager_and_a_short_one_does_not(fake_api, start, gs, gs_proc, pager):
    command, mark = pager
    gs("ask", "-S", "short", "only one turn")
    child = start("log", "short", GS_PAGER=command)
    assert "turn 1: only one turn" in finish(child) and child.exitstatus == 0
    assert not mark.exists()  # it fits on the screen: no pager

    for i in range(6):  # 6 commits of 7 lines: more than the 24 rows
        gs("ask", "-S", "long", f"prompt {i}")
    child = start("log", "long", GS_PAGER=command)
    out = finish(child)
    assert child.exitstatus == 0 and "turn 1: prompt 0" in out and "turn 6: prompt 5" in out
    assert mark.read_text() == "LESS=FRX\n"  # git's default for less

    child = start("--no-pager", "log", "long", GS_PAGER=command)
    assert "turn 1: prompt 0" in finish(child)
    child = start("log", "long", GS_PAGER="cat", PAGER=command)  # GS_PAGER wins; cat is no pager
    assert "turn 1: prompt 0" in finish(child)
    assert gs_proc("log", "long", env={"GS_PAGER": command}).code == 0  # a pipe: never paged
    assert mark.read_text() == "LESS=FRX\n"

    child = start("log", "long", PAGER=command, LESS="R")
    finish(child)
    assert mark.read_text().splitlines() == ["LESS=FRX", "LESS=R"]  # the user's LESS is kept


def test_a_pager_that_quits_early_is_no_error(gs, start, tmp_path):
    for i in range(6):
        gs("ask", "-S", "long", f"prompt {i}")
    child = start("log", "long", GS_PAGER="head -n 2")
    out = finish(child)
    assert child.exitstatus == 0 and "Traceback" not in out and "gs:" not in out, out
    assert unstyled(out).splitlines()[1].startswith("Date:") and "turn 6" not in out  # its 2 lines, no more
    child = start("log", "long", GS_PAGER="no-such-pager-here")
    out = finish(child)
    assert child.exitstatus == 0 and "the pager 'no-such-pager-here' was not found" in out and "turn 1:" in out
