"""The REPL in-process: ``Repl`` over a real store, driven by a list of input lines, its
output collected in a list, the model scripted (tests/scripted.py). The same loop runs
behind a pipe (tests/test_repl.py) and a terminal (tests/test_pty.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from fakeapi import validate_messages
from scripted import ScriptedProvider, call, cut, say

from gitsessions.chat.tools.toolset import Toolset
from gitsessions.cli.repl.environment import ChatEnvironment
from gitsessions.cli.repl.repl import Repl
from gitsessions.cli.repl.slash import HELP
from gitsessions.errors import ProviderError
from gitsessions.log.events import make_header
from gitsessions.store import GitStore
from gitsessions.writer.opening import open_session


@pytest.fixture
def store(repo_path: Path):
    with GitStore(repo_path) as s:
        yield s


class Script:
    """Input lines for ``read_line`` (then None: end of input), and everything written."""

    def __init__(self, *lines: str | BaseException):
        self.lines = list(lines)
        self.prompts: list[str] = []
        self.out: list[str] = []

    def read_line(self, prompt: str) -> str | None:
        self.prompts.append(prompt)
        if not self.lines:
            return None
        line = self.lines.pop(0)
        if isinstance(line, BaseException):
            raise line
        return line

    @property
    def text(self) -> str:
        return "".join(self.out)


def repl(store: GitStore, model: ScriptedProvider, script: Script, session: str = "work", **kw) -> Repl:
    env = ChatEnvironment(read_line=script.read_line, write=script.out.append,
                          new_header=lambda sid: make_header(sid, created=1), **kw)
    return Repl(store, model, session, env)


def run(store: GitStore, *lines: str | BaseException, model: ScriptedProvider | None = None,
        session: str = "work", **kw) -> tuple[Repl, Script]:
    script = Script(*lines)
    r = repl(store, model or ScriptedProvider(), script, session, **kw)
    r.run()
    return r, script


def subjects(store: GitStore, sid: str) -> list[str]:
    return [info.message.subject for info in store.log(sid)]


def test_prompts_become_turns_and_exit_stops_reading(store):
    model = ScriptedProvider(say("first reply"))
    r, script = run(store, "hello", "   ", "second", "/exit", "never sent", model=model)
    assert script.lines == ["never sent"]  # nothing read after /exit
    assert script.prompts == ["work › "] * 4
    assert "first reply" in script.text and "echo: second" in script.text
    assert subjects(store, "work") == ["turn 2: second", "turn 1: hello"]
    assert r.visited == ["work"] and r.failed_turns == 0
    assert [m["content"] for m in model.requests[-1][0]] == ["hello", "first reply", "second"]


@pytest.mark.parametrize("leave", [None, EOFError(), KeyboardInterrupt()], ids=["end", "ctrl-d", "ctrl-c"])
def test_leaving_at_the_prompt_releases_the_session(store, leave):
    lines = ["one"] + ([leave] if leave is not None else [])
    _r, script = run(store, *lines)
    if leave is not None:
        assert script.out[-1] == "\n"  # the prompt line is ended
    assert subjects(store, "work") == ["turn 1: one"]
    open_session(store, "work").close()  # the lock is free again


def test_session_commands(store):
    _r, script = run(store, "/help", "/sessions", "/save", "/log", "/fork copy", "hello",
                     "/new other", "in other", "/new other", "/new", "/open nosuch", "/open", "/open work",
                     "/sessions", "/bogus", "/quit", "never read")
    out = script.text
    assert HELP in out
    assert "* work  0 messages" in out  # not saved yet, listed all the same
    assert "(nothing to save yet: the session has no turns)" in out
    assert "(no saves yet)" in out
    assert "error: nothing to fork yet: the session has no saved turns" in out
    assert "(new session other)" in out
    assert "error: session 'other' already exists; use /open other" in out
    assert "error: no session 'nosuch'" in out
    assert "usage: /open <id>" in out
    assert "(opened work: 2 messages)" in out
    assert re.search(r"^  other  2 messages  \d+ seconds? ago +in other\n"
                     r"\* work   2 messages  \d+ seconds? ago +hello\n", out, re.M)  # columns, titles
    assert "unknown command /bogus; /help lists the commands" in out
    assert script.lines == ["never read"]
    fresh = script.prompts[10]  # /new without an id: 8 hex digits
    assert len(fresh) == len("12345678 › ") and int(fresh[:8], 16) >= 0
    assert script.prompts == ["work › "] * 7 + ["other › "] * 3 + [fresh] * 3 + ["work › "] * 3
    assert subjects(store, "other") == ["turn 1: in other"]
    assert store.tip(fresh[:8]) is None  # never saved: no branch


def test_history_commands(store):
    run(store, "one", "two")
    model = ScriptedProvider()
    r, script = run(store, "/fork copy", "/log", "/title  Café ☕\n notes ", "/title", "/undo",
                    "after undo", "/save", "/fork", "/fork work", model=model)
    out = script.text
    assert "(forked work into copy; now in copy)" in out
    log = store.log("copy")
    assert f"{log[-1].commit[:7]} turn 1: one\n" in out  # /log, newest first
    assert "(title: Café ☕ notes)" in out and "usage: /title <text>" in out
    assert "(turn 2 dropped from what the model sees; the log keeps it)" in out
    assert f"(saved: copy at {store.tip('copy')[:7]})" in out
    assert "usage: /fork <new id>" in out and "already exists" in out
    assert r.visited == ["work", "copy"]
    assert [m["content"] for m in model.requests[-1][0] if m["role"] == "user"] == ["one", "after undo"]
    assert subjects(store, "copy")[:3] == ["turn 3: after undo", "undo: turn 2", "title: Café ☕ notes"]
    assert subjects(store, "work") == ["turn 2: two", "turn 1: one"]  # untouched


def test_undo_with_nothing_to_undo(store):
    _r, script = run(store, "/undo")
    assert "error: there is no turn to undo\n" == script.text


def test_a_past_revision_is_forked_on_the_first_message_only(store):
    run(store, "one", "two")
    tip = store.tip("work")
    _r, script = run(store, "/exit", session="work~1")
    base = store.log("work")[1].commit[:7]
    assert script.text == (f"(work~1 is not the tip of work: what you send goes to new session work-1, "
                           f"forked from work at {base})\n")
    assert store.tip("work-1") is None  # nothing sent: nothing forked
    r, script = run(store, "branching", session="work~1")
    assert r.session.id == "work-1" and store.tip("work") == tip
    assert subjects(store, "work-1")[0] == "turn 2: branching"


def test_a_cancelled_reply_keeps_its_text_and_the_loop_goes_on(store):
    model = ScriptedProvider(cut("word1 word2 ", KeyboardInterrupt(), chunk=6))
    _r, script = run(store, "long story", "next", model=model)
    assert "word1 word2 \n(reply cancelled; the partial text is kept)\n" in script.text
    assert "echo: next" in script.text
    messages = model.requests[-1][0]
    assert validate_messages(messages) is None
    assert {"role": "assistant", "content": "word1 word2 "} in messages


def test_a_failed_turn_is_counted_and_the_loop_goes_on(store):
    model = ScriptedProvider([ProviderError("the model API answered 400: context too long", 400)])
    r, script = run(store, "first", "second", model=model)
    assert r.failed_turns == 1
    assert ("error: the model API answered 400: context too long\n"
            "(the prompt is saved; send another message to go on)\n") in script.text
    assert "echo: second" in script.text
    assert subjects(store, "work") == ["turn 2: second", "turn 1: first"]


def test_tool_calls_are_shown_on_their_own_line(store):
    model = ScriptedProvider(call(("c1", "get_current_time", "{}"), content="Checking"),
                             call(("c2", "nope", "{}")), say("Done."))
    _r, script = run(store, "time?", model=model, toolset=Toolset(("get_current_time",)))
    lines = script.text.splitlines()
    assert lines[0] == "Checking"  # the streamed text is ended before the tool line
    assert lines[1].startswith("⚙ get_current_time({}) → 20")
    assert lines[2] == "✗ nope({}) → error: unknown tool 'nope'"
    assert lines[3] == "Done."


def test_max_steps_is_said(store):
    model = ScriptedProvider(*[call((f"c{i}", "get_current_time", "{}")) for i in range(3)])
    _r, script = run(store, "loop", model=model, max_steps=2, toolset=Toolset(("get_current_time",)))
    assert "(stopped after 2 model requests in one turn)" in script.text
    assert len(model.requests) == 2


def test_the_system_prompt_reaches_the_model(store):
    model = ScriptedProvider()
    run(store, "hi", model=model, system="Be terse.")
    assert model.requests[0][0][0] == {"role": "system", "content": "Be terse."}


def test_piped_prompts_are_decoded_lines_whatever_the_line_end(gs, git):
    """``gs chat`` behind a pipe: one prompt per line, CRLF and CR end lines too."""
    r = gs("chat", "p", input="crlf line\r\ncr line\rcaf\u00e9 \u2028 byte\nlast without newline".encode())
    assert r.code == 0, r.err
    assert git("log", "--format=%s", "p").splitlines() == [
        "turn 4: last without newline", "turn 3: caf\u00e9 byte", "turn 2: cr line", "turn 1: crlf line"]


def test_opening_the_current_session_again_is_no_error(store):
    """It used to try the session's lock again and report it held, by this very process."""
    run(store, "one")
    _r, script = run(store, "/open work", "two")
    assert "(already in work)" in script.text and "being written" not in script.text
    assert subjects(store, "work") == ["turn 2: two", "turn 1: one"]
