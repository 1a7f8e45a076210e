"""The conversation tree in a real pseudo-terminal: ``/retry``, ``/edit``, ``/tree``
and the session picker of ``gs chat -r``, driven with pexpect as tests/test_pty.py drives
``gs chat``; what they wrote is read back with the real git CLI."""

from __future__ import annotations

import test_pty
from test_pty import finish
from test_retry import heads

# tests/test_pty.py's fixtures: the isolated environment with the fake API, and gs in a pty
chat_env, spawn_gs = test_pty.chat_env, test_pty.spawn_gs

UP, DOWN, ESC, ALT_ENTER = "\x1b[A", "\x1b[B", "\x1b", "\x1b\r"


def prompts(gs, sid: str) -> list[str]:
    """The user prompts the model sees in ``sid``."""
    shown = gs("show", sid, "--format", "json")
    assert shown.code == 0, shown.err
    return [m["content"] for m in shown.json()["messages"] if m["role"] == "user"]


def test_resume_picker_filters_by_title_and_prompt(gs, spawn_gs):
    for sid, *asked in (("alpha", "apples"), ("beta", "bananas"), ("gamma", "cherries", "durian pie")):
        for prompt in asked:
            assert gs("ask", "-S", sid, prompt).code == 0
    child = spawn_gs("chat", "-r")
    child.expect_exact("Open which session?")
    child.expect_exact("3/3")  # gamma, newest, first: Enter alone would open it
    child.send("banan\r")  # beta's title (its first prompt)
    child.expect_exact("beta ›")
    child.sendline("/exit")
    assert "resume with: gs chat beta" in finish(child)

    child = spawn_gs("chat", "-r")
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

    child = spawn_gs("chat", "-r")
    child.expect_exact("3/3")
    child.send(ESC)
    tail = finish(child)
    assert child.exitstatus == 0 and "nothing opened" in tail


def test_edit_in_place_keeps_several_lines(gs, spawn_gs, git):
    assert gs("ask", "-S", "work", "first").code == 0
    child = spawn_gs("chat", "work")
    child.expect_exact("work ›")
    child.sendline("/edit")
    child.expect_exact("edit turn 1 › first")
    child.send(" line" + ALT_ENTER + "second line\r")
    child.expect_exact("turn 1 edited in work-1")
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


def test_edit_in_the_editor(gs, spawn_gs, git, chat_env, tmp_path):
    assert gs("ask", "-S", "work", "first").code == 0
    editor = tmp_path / "editor.sh"
    editor.write_text('#!/bin/sh\nsed -i "s/first/from the editor/" "$1"\n')
    editor.chmod(0o755)
    chat_env["EDITOR"] = str(editor)
    long = "first\n" + "".join(f"line {i}\n" for i in range(2, 16))  # 15 lines: more than 8 and half of 24
    assert gs("ask", "-S", "long", "-", input=long).code == 0
    child = spawn_gs("chat", "work")
    child.expect_exact("work ›")
    child.sendline("/edit 1 --editor")
    child.expect_exact("echo: from the editor")
    child.expect_exact("work-1 ›")
    child.sendline("/open long")
    child.expect_exact("long ›")
    child.sendline("/edit")  # long: in the editor without being asked
    child.expect_exact("echo: from the editor")
    child.expect_exact("long-1 ›")
    child.sendline("/exit")
    finish(child)
    assert prompts(gs, "work-1") == ["from the editor"]
    assert prompts(gs, "long-1") == [long.replace("first", "from the editor").rstrip("\n")]


def never_backwards(git, ref: str) -> None:
    """Every move of ``ref`` its reflog records went forward (each old value an ancestor of the new)."""
    moves = git("reflog", "show", "--format=%H", f"refs/heads/{ref}").split()[::-1]
    for old, new in zip(moves, moves[1:], strict=False):
        git("merge-base", "--is-ancestor", old, new)


def test_retry_edit_tree_and_a_send_from_the_first_attempt(spawn_gs, git, gs):
    """The issue's scenario: two turns, /retry, /edit 1 changed, /tree back to the first attempt, a send."""
    child = spawn_gs("chat", "work")
    child.expect_exact("work ›")
    for prompt in ("first", "second"):
        child.sendline(prompt)
        child.expect_exact(f"echo: {prompt}")
        child.expect_exact("work ›")

    # Each tip is read once a slash command ran: a turn is committed behind the prompt, and a
    # command waits for that commit first.
    child.sendline("/retry")
    child.expect_exact("(turn 2 again in work-1, forked from work at ")
    work = git("rev-parse", "work").strip()
    child.expect_exact("the earlier attempt stays in work: /open work goes back)")
    child.expect_exact("echo: second")
    child.expect_exact("work-1 ›")

    child.sendline("/edit 1")
    child.expect_exact("edit turn 1 › first")  # prefilled
    work_1 = git("rev-parse", "work-1").strip()
    child.send(" changed\r")
    child.expect_exact("turn 1 edited in work-2")
    child.expect_exact("echo: first changed")
    child.expect_exact("work-2 ›")

    child.sendline("/tree")
    child.expect_exact("Jump where?")
    work_2 = git("rev-parse", "work-2").strip()
    child.expect_exact("turn 2: first changed")  # the family is drawn, work-2 selected
    child.send(UP * 4 + "\r")  # work-2, work-1's turn 2, work-1, work's turn 2: work's turn 1
    child.expect_exact("what you send goes to new session work-3, forked from work at "
                       + git("rev-parse", "--short=7", "work~1").strip())
    child.expect_exact("work-3 ›")
    assert sorted(heads(git)) == ["work", "work-1", "work-2"]  # a past turn opened: nothing written yet
    child.sendline("from the first attempt")
    child.expect_exact("echo: from the first attempt")
    child.expect_exact("work-3 ›")
    child.sendline("/exit")
    tail = finish(child)
    assert child.exitstatus == 0 and "Traceback" not in tail

    # exactly those branches, none of the earlier ones moved
    assert heads(git) == {"work": work, "work-1": work_1, "work-2": work_2, "work-3": heads(git)["work-3"]}
    graph = git("log", "--all", "--graph", "--format=%s%d")
    assert set(git("for-each-ref", "--format=%(refname)").split()) == {f"refs/heads/{b}" for b in heads(git)}
    for ref in heads(git):
        assert ref in graph
        never_backwards(git, ref)
    turn_1 = git("rev-parse", "work~1").strip()
    assert git("merge-base", "work", "work-1").strip() == turn_1
    assert git("merge-base", "work", "work-2").strip() == turn_1  # turn 1 is work's first save
    assert git("merge-base", "work", "work-3").strip() == turn_1
    git("fsck", "--strict")

    assert prompts(gs, "work") == ["first", "second"]
    assert prompts(gs, "work-1") == ["first", "second"]
    assert prompts(gs, "work-2") == ["first changed"]
    assert prompts(gs, "work-3") == ["first", "from the first attempt"]


def test_resume_picker_names_forks_by_their_own_prompt_says_why_nothing_matches_and_ctrl_c_is_130(gs, spawn_gs):
    assert gs("ask", "-S", "work", "first question about YAML").code == 0
    assert gs("ask", "-S", "work", "second").code == 0
    assert gs("ask", "-S", "work~1", "--fork", "alt", "in one line?").code == 0  # alt keeps work's title
    assert gs("ask", "-S", "solo", "only").code == 0
    child = spawn_gs("chat", "-r")
    child.expect_exact("3/3")
    child.expect_exact("2 turns  first question about YAML")  # work, the oldest: the last row
    rows = child.before
    assert "2 turns  in one line?" in rows  # alt: by its own first prompt, as gs tree names it
    assert "   1 turn  only" in rows  # solo
    child.send("q3")  # too short for the prompts' search: it says so
    child.expect_exact("(nothing matches; the prompts are searched from 3 characters on)")
    child.setwinsize(24, 50)
    child.expect(r"…(\x1b\[[0-9;?]*[A-Za-z])*  0/3")  # a narrow terminal cuts the title, not the count
    child.sendcontrol("c")
    finish(child)
    assert child.exitstatus == 130  # as Ctrl+C anywhere else in gs
