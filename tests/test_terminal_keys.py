"""The chat's keys and prompt in a real pseudo-terminal.

As bash and python have them: Ctrl+C clears a half-typed line and leaves on an empty one;
Alt+Enter (Esc Enter) starts a new line; a bracketed paste of several lines is one prompt;
Up walks this session's prompts first; Tab completes a session id; Ctrl+Z mid-reply
suspends and fg lets the reply finish. Resuming shows the last exchange, and a fork's
prompt says where it came from. Driven with pexpect as tests/test_pty.py drives
``gs chat``; what was sent is read from the fake API's requests.
"""

from __future__ import annotations

from fakeapi import text
from test_pty import PROMPT, chat_env, chat_in_a_shell, finish, spawn_chat, spawn_gs

__all__ = ["chat_env", "spawn_chat", "spawn_gs"]  # fixtures shared with test_pty

ALT_ENTER = "\x1b\r"
#: The recap's label of a prompt, styled as gs show styles it (then the prompt).
_YOU = r"you ›(\x1b\[[0-9;]*m)* "
PASTE_START, PASTE_END = "\x1b[200~", "\x1b[201~"  # what a terminal sends around a paste


def _sent(fake_api) -> list[str]:
    """The prompt of each request the fake API received."""
    return [r["messages"][-1]["content"] for r in fake_api.requests]


def test_ctrl_c_clears_a_half_typed_line_and_the_chat_goes_on(fake_api, spawn_chat):
    child = spawn_chat()
    child.send("half a thought")
    child.expect_exact("half a thought")
    child.sendintr()
    child.send("a whole one\r")
    child.expect_exact("echo: a whole one")
    child.expect(PROMPT)
    child.send("more text")
    child.expect_exact("more text")
    child.sendintr()  # clears the line
    child.sendintr()  # on the empty line: leaves
    tail = finish(child)
    assert child.exitstatus == 0, tail
    assert "resume with: gs chat demo" in tail
    assert _sent(fake_api) == ["a whole one"]


def test_ctrl_d_on_the_line_a_ctrl_c_cleared_leaves(fake_api, spawn_chat):
    child = spawn_chat()
    child.send("never sent")
    child.expect_exact("never sent")
    child.sendintr()
    child.send("/sessions\r")  # the chat is still there
    child.expect_exact("demo  0 messages")
    child.expect(PROMPT)
    child.send("again")
    child.expect_exact("again")
    child.sendintr()
    child.sendcontrol("d")
    tail = finish(child)
    assert child.exitstatus == 0, tail
    assert "nothing was saved" in tail
    assert fake_api.requests == []


def test_alt_enter_and_esc_enter_start_a_new_line(fake_api, spawn_chat):
    child = spawn_chat()
    child.send("line one" + ALT_ENTER + "line two" + ALT_ENTER + "line three\r")
    child.expect_exact("echo: line one")
    child.expect(PROMPT)
    child.sendline("/exit")
    assert finish(child) and child.exitstatus == 0
    assert _sent(fake_api) == ["line one\nline two\nline three"]


def test_a_bracketed_paste_of_several_lines_is_one_prompt(fake_api, spawn_chat):
    child = spawn_chat()
    child.send("look: " + PASTE_START + "def f():\r\n    return 1\r\n" + PASTE_END)
    child.send(" ok?\r")
    child.expect_exact("echo: look:")
    child.expect(PROMPT)
    child.sendline("/exit")
    assert finish(child) and child.exitstatus == 0
    assert _sent(fake_api) == ["look: def f():\n    return 1\n ok?"]


def test_a_paste_and_alt_enter_while_a_reply_streams_stay_one_draft(fake_api, spawn_chat):
    """Between prompts the terminal is in its usual mode, where Enter becomes a line feed and a
    paste arrives unmarked unless the chat asks for marks: each line was sent on its own."""
    fake_api.script(text("a slow reply, word by word", chunk_size=3, delay=0.15),
                    text("another slow one, word by word", chunk_size=3, delay=0.15))
    child = spawn_chat()
    child.send("first\r")
    child.expect_exact("\x1b[?2004h")  # the chat asks the terminal to mark a paste while it streams
    child.send(PASTE_START + "pasteA\rpasteB\rpasteC" + PASTE_END)  # as a terminal sends it, marked
    child.expect_exact("word by word")
    child.expect(PROMPT)
    child.send("\r")
    child.expect_exact("another slow")
    child.send("draft one" + ALT_ENTER + "draft two")  # typed while the second reply streams
    child.expect_exact("word by word")
    child.expect(PROMPT)
    child.send("\r")
    child.expect_exact("echo: draft one")
    child.expect(PROMPT)
    child.sendline("/exit")
    assert finish(child) and child.exitstatus == 0
    assert _sent(fake_api) == ["first", "pasteA\npasteB\npasteC", "draft one\ndraft two"]


UP = "\x1b[A"


def test_up_walks_this_sessions_prompts_first_then_other_chats_lines(fake_api, spawn_chat, spawn_gs, gs):
    child = spawn_gs("chat", "other")
    child.expect_exact("other ›")
    child.sendline("typed in other")
    child.expect_exact("echo: typed in other")
    child.expect_exact("other ›")
    child.sendline("/exit")
    finish(child)
    for prompt in ("first in demo", "second in demo"):  # not typed at a prompt: in no line history
        assert gs("ask", "-S", "demo", prompt).code == 0

    child = spawn_chat()
    child.send(UP + UP)
    child.expect_exact("first in demo")
    child.send("\r")
    child.expect_exact("echo: first in demo")
    child.expect(PROMPT)
    child.send(UP * 4)  # first in demo (sent again: one step), second in demo, other's /exit, typed in other
    child.expect_exact("typed in other")
    child.send("\r")
    child.expect_exact("echo: typed in other")
    child.expect(PROMPT)
    child.sendline("/exit")
    assert finish(child) and child.exitstatus == 0
    assert _sent(fake_api)[-2:] == ["first in demo", "typed in other"]


def test_tab_completes_a_session_id_to_open(fake_api, spawn_chat, gs):
    assert gs("ask", "-S", "alpha-notes", "apples").code == 0
    child = spawn_chat()
    child.send("/op")
    child.expect_exact("/op")
    child.send("\t")
    child.expect_exact("en")  # drawn after what was typed: the completion
    child.send(" alp")
    child.expect_exact("alp")
    child.send("\t")
    child.expect_exact("ha-notes")
    child.send("\r")
    child.expect_exact("(opened alpha-notes: 2 messages)")
    child.expect_exact("alpha-notes ›")
    child.sendline("/exit")
    assert finish(child) and child.exitstatus == 0


def test_resuming_shows_the_last_exchange_and_recap_n_more(fake_api, spawn_gs, gs):
    for prompt in ("the first question", "the second question"):
        assert gs("ask", "-S", "demo", prompt).code == 0
    child = spawn_gs("chat", "demo")
    child.expect_exact("/help for commands")
    child.expect_exact("── turn 2 ──")
    child.expect(_YOU + "the second question")
    child.expect_exact("echo: the second question")
    child.expect(PROMPT)
    assert "the first question" not in child.before
    child.sendline("/exit")
    finish(child)

    child = spawn_gs("chat", "demo", "--recap", "2")
    child.expect_exact("── turn 1 ──")
    child.expect(_YOU + "the first question")
    child.expect_exact("── turn 2 ──")
    child.expect(PROMPT)
    child.sendline("/exit")
    finish(child)


def test_the_prompt_of_a_fork_says_where_it_came_from(fake_api, spawn_gs, gs, git):
    for prompt in ("one", "two"):
        assert gs("ask", "-S", "work", prompt).code == 0
    at = git("rev-parse", "--short=7", "work~1").strip()
    child = spawn_gs("chat", "work~1")  # a past revision: what is sent goes to the fork work-1
    child.expect_exact("work-1 ›")
    child.expect_exact(f"forked from work at {at}")
    child.sendline("three")
    child.expect_exact("echo: three")
    child.expect_exact("work-1 ›")
    child.expect_exact(f"forked from work at {at}")
    child.sendline("/exit")
    finish(child)

    child = spawn_gs("chat", "work-1")
    child.expect_exact("work-1 ›")
    child.expect_exact(f"forked from work at {at}")
    child.sendline("/open work")
    child.expect_exact("work ›")
    child.sendline("/exit")
    assert "forked from" not in finish(child)


def test_ctrl_z_during_a_reply_suspends_and_fg_lets_it_finish(fake_api, chat_env, gs):
    """Between prompts the kernel turns Ctrl+Z into a stop; the reply streams on after fg."""
    words = "".join(f"word{i:02d} " for i in range(20))
    fake_api.script(text(words, chunk_size=7, delay=0.1))
    with chat_in_a_shell(chat_env) as shell:
        shell.sendline("a story")
        shell.expect_exact("word02 ")
        shell.sendcontrol("z")
        shell.expect("Stopped")
        shell.expect_exact("sh$ ")
        shell.sendline("fg")
        shell.expect_exact("word19")
        shell.expect(PROMPT)
    shown = gs("show", "demo", "--format", "json").json()
    assert [m["content"] for m in shown["messages"] if m["role"] == "assistant"] == [words]
