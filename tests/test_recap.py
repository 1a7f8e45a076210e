"""The recap a chat shows on opening a session with earlier turns.

:func:`gitsessions.cli.display.recap.recap_lines` over real sessions (made by ``gs ask`` and the chat
over a pipe, the model scripted by the fake API); the recap in a real terminal is in
tests/test_terminal_keys.py.
"""

from __future__ import annotations

from fakeapi import error, text

from gitsessions.cli.display.recap import RECAP_LINES, recap_lines
from gitsessions.store import GitStore


def _events(repo_path, sid: str):
    with GitStore(repo_path) as store:
        return list(store.load(sid).events)


def test_the_recap_is_the_last_turns_the_model_sees(gs, repo_path):
    for prompt in ("one", "two", "three"):
        assert gs("ask", "-S", "w", prompt).code == 0
    events = _events(repo_path, "w")
    assert recap_lines(events, 1) == ["── turn 3 ──", "you › three", "echo: three"]
    assert recap_lines(events, 2) == ["── turn 2 ──", "you › two", "echo: two",
                                      "── turn 3 ──", "you › three", "echo: three"]
    assert recap_lines(events, 9)[:3] == ["── turn 1 ──", "you › one", "echo: one"]
    assert recap_lines(events, 0) == []
    assert gs("chat", "w", input="/undo\n/exit\n").code == 0  # turn 3 dropped from what the model sees
    assert recap_lines(_events(repo_path, "w"), 1) == ["── turn 2 ──", "you › two", "echo: two"]


def test_a_long_reply_is_cut_and_a_turn_that_failed_says_so(gs, fake_api, repo_path):
    fake_api.script(text("\n".join(f"line {n}" for n in range(1, 31))), error(400, "the model refused"))
    assert gs("ask", "-S", "w", "long").code == 0
    lines = recap_lines(_events(repo_path, "w"), 1)
    assert lines[2:4] == ["line 1", "line 2"]
    assert lines[-1] == f"… ({30 - RECAP_LINES} more lines)"
    assert len(lines) == 2 + RECAP_LINES + 1
    assert gs("ask", "-S", "w", "again").code == 1
    lines = recap_lines(_events(repo_path, "w"), 1)
    assert lines[:2] == ["── turn 2 ──", "you › again"]
    assert lines[-1].startswith("(turn ended: error: ")


def test_a_piped_chat_shows_no_recap_unless_asked(gs):
    assert gs("ask", "-S", "w", "earlier").code == 0
    r = gs("chat", "w", input="/exit\n")
    assert r.code == 0 and "you › earlier" not in r.out
    r = gs("chat", "w", "--recap", "1", input="/exit\n")
    assert r.code == 0, r.err
    assert r.out.startswith("── turn 1 ──\nyou › earlier\necho: earlier\n")


def test_open_shows_the_recap_of_the_session_it_opens(gs):
    assert gs("ask", "-S", "other", "over there").code == 0
    r = gs("chat", "w", "--recap", "1", input="/open other\n/exit\n")
    assert r.code == 0, r.err
    assert "(opened other: 2 messages)\n── turn 1 ──\nyou › over there\necho: over there\n" in r.out

