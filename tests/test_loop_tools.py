"""The opt-in tools through the chat loop, in-process over a real session (a real git repo)
and a scripted model: a secret a tool read is redacted in the log, the request and what is
shown; a write is asked about and each decision is an event; a denied call leaves the file
and tells the model; the transcript stays valid for the strict server."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from fakeapi import validate_messages
from scripted import ScriptedProvider, call, say

from gitsessions.chat.loop import run_turn
from gitsessions.chat.tools.files import Workspace
from gitsessions.chat.tools.toolset import Toolset, expand
from gitsessions.log.calls import ToolCall, ToolResult
from gitsessions.log.events import make_header
from gitsessions.secrets.redact import from_environment
from gitsessions.store import GitStore
from gitsessions.writer.opening import open_session
from gitsessions.writer.session import Session

SID = "work"
#: Shaped like an OpenAI key; not a real one.
SK = "sk-" + "Zq7Xw3Rt9Yp2Lm5Nb8Vc1Kd4" + "Hf6Js0Ga"


@pytest.fixture
def store(repo_path: Path):
    with GitStore(repo_path) as s:
        yield s


@pytest.fixture
def work(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    (root / "notes.md").write_text("one\ntwo\n")
    return root


def _open(store: GitStore) -> Session:
    return open_session(store, SID, new_header=make_header(SID, created=1), redactor=from_environment({}))


def events(store: GitStore) -> list[tuple[str, dict]]:
    return [(e.type, e.data) for e in store.load(SID).events]


def test_a_secret_in_a_file_read_is_redacted_in_the_log_the_request_and_the_screen(store, repo_path, work):
    (work / ".env").write_text(f"OPENAI_API_KEY={SK}\n")
    model = ScriptedProvider(call(("c1", "read_file", '{"path": ".env"}')), say("I will not repeat it."))
    shown: list[tuple] = []
    session = _open(store)
    try:
        run_turn(session, model, "what is in .env?", toolset=Toolset(expand(["read"]), Workspace(work)),
                 on_tool=lambda *a: shown.append(a))
    finally:
        session.close()
    [(name, args, result, is_error)] = shown
    assert (name, args, is_error) == ("read_file", '{"path": ".env"}', False)
    assert SK not in result and "[REDACTED:" in result
    sent = json.dumps(model.requests[1][0])
    assert SK not in sent and "[REDACTED:" in sent
    objects = subprocess.run(["git", "-C", str(repo_path), "cat-file", "--batch-all-objects", "--batch"],
                             capture_output=True, check=True).stdout
    assert SK.encode() not in objects and b"[REDACTED:" in objects
    assert validate_messages(model.requests[1][0]) is None


def test_a_write_is_asked_about_and_each_decision_is_an_event(store, work):
    model = ScriptedProvider(
        call(("c1", "write_file", '{"path": "notes.md", "content": "ONE\\n"}'),
             ("c2", "edit_file", '{"path": "notes.md", "old_string": "two", "new_string": "2"}')),
        say("One refused, one done."))
    asked = []

    def permit(c):
        asked.append((c.summary, c.preview))
        return "deny" if c.call.name == "write_file" else "once"

    session = _open(store)
    try:
        result = run_turn(session, model, "change the notes", permit=permit,
                          toolset=Toolset(expand(["write"]), Workspace(work, backups=work.parent / "bak")))
    finally:
        session.close()
    assert result.reason == "completed"
    assert [summary for summary, _ in asked] == ["write_file notes.md", "edit_file notes.md"]
    assert "-two\n+2\n" in asked[1][1]
    assert (work / "notes.md").read_text() == "one\n2\n"  # the denied write left it; the edit went in
    turn = [(t, d) for t, d in events(store) if t.startswith("tool/")]
    assert turn[0] == ("tool/permission", {"id": "c1", "name": "write_file", "answer": "deny", "by": "user"})
    assert turn[1][0] == "tool/result" and turn[1][1]["error_code"] == "denied" and turn[1][1]["is_error"]
    assert turn[2] == ("tool/permission", {"id": "c2", "name": "edit_file", "answer": "once", "by": "user"})
    assert turn[3] == ("tool/call", {"id": "c2", "name": "edit_file"})
    assert turn[4][1]["content"].startswith("wrote notes.md") and not turn[4][1]["is_error"]
    # the model is told of the refusal; the transcript is one the strict server takes
    messages = model.requests[1][0]
    assert validate_messages(messages) is None
    assert messages[2] == {"role": "tool", "tool_call_id": "c1",
                           "content": "error: the user denied this write_file call; do not try it again unless "
                                      "the user asks"}


def test_with_no_one_to_ask_a_command_is_denied_and_yes_runs_it(store, work):
    ls = call(("c1", "run_command", '{"command": "echo ran > ran.txt"}'))
    model = ScriptedProvider(ls, say("no"), ls, say("yes"))
    session = _open(store)
    try:
        run_turn(session, model, "run it", toolset=Toolset(expand(["shell"]), Workspace(work)))
        assert not (work / "ran.txt").exists()
        run_turn(session, model, "run it now", toolset=Toolset(expand(["shell"]), Workspace(work), yes=True))
    finally:
        session.close()
    assert (work / "ran.txt").read_text() == "ran\n"
    permissions = [d for t, d in events(store) if t == "tool/permission"]
    assert [(d["answer"], d["by"]) for d in permissions] == [("deny", "nobody"), ("once", "--yes")]
    assert validate_messages(model.requests[-1][0]) is None


def test_ctrl_c_at_the_question_cancels_the_reply_and_runs_nothing(store, work):
    model = ScriptedProvider(call(("c1", "write_file", '{"path": "notes.md", "content": "gone"}')))

    def permit(_c):
        raise KeyboardInterrupt

    session = _open(store)
    try:
        result = run_turn(session, model, "overwrite", permit=permit,
                          toolset=Toolset(expand(["write"]), Workspace(work)))
        assert result.reason == "aborted"
        assert validate_messages(session.messages()) is None
    finally:
        session.close()
    assert (work / "notes.md").read_text() == "one\ntwo\n"
    [result_ev] = [d for t, d in events(store) if t == "tool/result"]
    assert result_ev["error_code"] == "cancelled"


def test_the_loop_stores_the_calls_and_results_as_the_toolset_made_them(store, work):
    model = ScriptedProvider(call(("c1", "read_file", '{"path": "notes.md"}'), ("c2", "nope", "{}")), say("Read."))
    session = _open(store)
    try:
        run_turn(session, model, "read it", toolset=Toolset(expand(["read"]), Workspace(work)))
    finally:
        session.close()
    [reply, _] = [d for t, d in events(store) if t == "assistant/message"]
    assert reply["tool_calls"] == [ToolCall("c1", "read_file", '{"path": "notes.md"}').data(),
                                   ToolCall("c2", "nope", "{}").data()]
    assert [d for t, d in events(store) if t == "tool/result"] == [
        ToolResult("c1", "read_file", "one\ntwo\n").data(),
        ToolResult("c2", "nope", "error: unknown tool 'nope'", True).data()]
    assert [d for t, d in events(store) if t == "tool/result"][0] == {
        "id": "c1", "name": "read_file", "content": "one\ntwo\n", "is_error": False}  # the format stays
