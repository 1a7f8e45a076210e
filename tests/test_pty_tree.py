"""The conversation tree in a real pseudo-terminal (issue 12): ``/retry``, ``/edit``, ``/tree``
and the session picker of ``gs chat -r``, driven with pexpect as tests/test_pty.py drives
``gs chat``; what they wrote is read back with the real git CLI."""

from __future__ import annotations

import pexpect
import pytest
from conftest import GS
from test_pty import TIMEOUT, chat_env, finish  # noqa: F401 - chat_env is a fixture used here

UP, DOWN, ESC, ALT_ENTER = "\x1b[A", "\x1b[B", "\x1b", "\x1b\r"


@pytest.fixture
def spawn(chat_env: dict[str, str]):  # noqa: F811 - the fixture imported above
    """Start ``gs <args>`` in a 24x100 pty; every child is reaped at teardown."""
    children: list[pexpect.spawn] = []

    def start(*args: str) -> pexpect.spawn:
        child = pexpect.spawn(GS[0], [*GS[1:], *args], env=chat_env, dimensions=(24, 100),
                              encoding="utf-8", codec_errors="replace", timeout=TIMEOUT)
        children.append(child)
        return child

    yield start
    for child in children:
        if child.isalive():
            child.terminate(force=True)
        child.close()


def heads(git) -> dict[str, str]:
    refs = git("for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads").split("\n")
    return dict(line.split() for line in refs if line)


def prompts(gs, sid: str) -> list[str]:
    """The user prompts the model sees in ``sid``."""
    shown = gs("show", sid, "--format", "json")
    assert shown.code == 0, shown.err
    return [m["content"] for m in shown.json()["messages"] if m["role"] == "user"]


def test_resume_picker_filters_by_title_and_prompt(gs, spawn):
    for sid, *asked in (("alpha", "apples"), ("beta", "bananas"), ("gamma", "cherries", "durian pie")):
        for prompt in asked:
            assert gs("ask", sid, prompt).code == 0
    child = spawn("chat", "-r")
    child.expect_exact("Open which session?")
    child.expect_exact("3/3")  # gamma, newest, first: Enter alone would open it
    child.send("banan\r")  # beta's title (its first prompt)
    child.expect_exact("beta ›")
    child.sendline("/exit")
    assert "resume with: gs chat beta" in finish(child)

    child = spawn("chat", "-r")
    child.expect_exact("3/3")
    child.send("durian\r")  # in no title: found through the search index
    child.expect_exact("gamma ›")
    child.sendline("/open")  # the same picker in the chat; Esc goes back to the prompt
    child.expect_exact("Open which session?")
    child.send(ESC)
    child.expect_exact("(nothing opened)")
    child.expect_exact("gamma ›")
    child.sendline("/exit")
    finish(child)

    child = spawn("chat", "-r")
    child.expect_exact("3/3")
    child.send(ESC)
    tail = finish(child)
    assert child.exitstatus == 0 and "nothing opened" in tail


def test_edit_in_place_keeps_several_lines(gs, spawn, git):
    assert gs("ask", "work", "first").code == 0
    child = spawn("chat", "work")
    child.expect_exact("work ›")
    child.sendline("/edit")
    child.expect_exact("edit turn 1 › first")
    child.send(" line" + ALT_ENTER + "second line\r")
    child.expect_exact("turn 1 again in work-1")
    child.expect_exact("echo: first line")
    child.expect_exact("work-1 ›")
    child.sendline("/edit 1")
    child.expect_exact("edit turn 1 ›")
    child.sendcontrol("c")  # cancels the edit, not the chat
    child.expect_exact("(edit cancelled: nothing was sent)")
    child.sendline("/exit")
    finish(child)
    assert prompts(gs, "work-1") == ["first line\nsecond line"]
    assert sorted(heads(git)) == ["work", "work-1"]


def test_edit_in_the_editor(gs, spawn, git, chat_env, tmp_path):  # noqa: F811
    assert gs("ask", "work", "first").code == 0
    editor = tmp_path / "editor.sh"
    editor.write_text('#!/bin/sh\nsed -i "s/first/from the editor/" "$1"\n')
    editor.chmod(0o755)
    chat_env["EDITOR"] = str(editor)
    child = spawn("chat", "work")
    child.expect_exact("work ›")
    child.sendline("/edit 1 --editor")
    child.expect_exact("echo: from the editor")
    child.expect_exact("work-1 ›")
    child.sendline("/exit")
    finish(child)
    assert prompts(gs, "work-1") == ["from the editor"]
