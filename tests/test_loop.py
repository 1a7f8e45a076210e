"""The chat loop in-process: ``run_turn`` over a real session (a real git repo) with a
scripted model (tests/scripted.py): the events of a turn, tool steps, the step bound, an
API failure and Ctrl+C mid-reply, and what the next request then carries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakeapi import validate_messages
from scripted import MODEL, USAGE, ScriptedProvider, call, cut, say

from gitsessions.chat.loop import run_turn
from gitsessions.chat.tools.toolset import Toolset, expand
from gitsessions.errors import ProviderError
from gitsessions.log.events import make_header
from gitsessions.store import GitStore
from gitsessions.writer.opening import open_session

SID = "work"


def clock() -> Toolset:
    """The clock alone (``--tools time``): no tool is offered unless named."""
    return Toolset(expand(["time"]))


@pytest.fixture
def store(repo_path: Path):
    with GitStore(repo_path) as s:
        yield s


@pytest.fixture
def session(store: GitStore):
    s = open_session(store, SID, new_header=make_header(SID, created=1))
    yield s
    s.close()


def saved(store: GitStore) -> list[tuple[str, dict]]:
    """``(type, data)`` of every committed event of the session."""
    return [(e.type, e.data) for e in store.load(SID).events]


def test_a_plain_turn_streams_and_commits_its_events(store, session):
    model = ScriptedProvider(say("Hello there, friend.", chunk=5, model="answering-model"))
    pieces: list[str] = []
    result = run_turn(session, model, "hi", on_text=pieces.append)

    assert pieces == ["Hello", " ther", "e, fr", "iend."]
    assert (result.reason, result.error, result.text) == ("completed", None, "Hello there, friend.")
    assert result.commit is not None and result.commit == store.tip(SID) == session.tip
    assert saved(store) == [
        ("turn/start", {"turn": 1}),
        ("user/message", {"content": "hi"}),
        ("step/start", {"step": 1}),
        ("assistant/message", {"content": "Hello there, friend.", "tool_calls": [], "finish_reason": "stop",
                               "model": "answering-model", "usage": USAGE, "interrupted": False}),
        ("step/end", {"step": 1}),
        ("turn/end", {"turn": 1, "reason": "completed"}),
    ]
    [(messages, tools)] = model.requests
    assert messages == [{"role": "user", "content": "hi"}]
    assert tools is None  # a plain chat offers no tools: the request has no ``tools``
    assert model.closed == 1
    assert not store.journal(SID).exists()


def test_the_system_prompt_sent_first_is_the_logs(store, session):
    """What the model saw is in the log: the loop sends the session's own system prompt, no other."""
    model = ScriptedProvider()
    session.set_system("Be terse.")
    run_turn(session, model, "one")
    run_turn(session, model, "two", tools=[])
    assert [m["content"] for m in model.requests[1][0]] == ["Be terse.", "one", "echo: one", "two"]
    assert model.requests[1][0][0]["role"] == "system"
    assert model.requests[1][1] == []
    assert "Be terse." in json.dumps(saved(store))
    assert session.next_turn == 3


def test_tool_calls_run_and_the_next_step_sees_their_results(store, session):
    model = ScriptedProvider(
        call(("c1", "get_current_time", "{}"), ("c2", "get_current_time", '{"timezone": "Asia/Tokyo"}'),
             content="Checking."),
        call(("c3", "no_such_tool", "{}")),
        say("Done."),
    )
    texts: list[str] = []
    tools: list[tuple[str, str, str, bool]] = []
    result = run_turn(session, model, "time?", toolset=clock(), on_text=texts.append,
                      on_tool=lambda *args: tools.append(args))

    assert result.reason == "completed" and result.text == "Done."
    assert [(name, args, is_error) for name, args, _content, is_error in tools] == [
        ("get_current_time", "{}", False), ("get_current_time", '{"timezone": "Asia/Tokyo"}', False),
        ("no_such_tool", "{}", True)]
    assert tools[1][2].endswith("+09:00") and "unknown tool" in tools[2][2]
    assert texts == ["Checking.", "Done", "."]
    types = [t for t, _ in saved(store)]
    assert types == ["turn/start", "user/message",
                     "step/start", "assistant/message", "tool/call", "tool/result", "tool/call", "tool/result",
                     "step/end",
                     "step/start", "assistant/message", "tool/call", "tool/result", "step/end",
                     "step/start", "assistant/message", "step/end", "turn/end"]
    results = [d for t, d in saved(store) if t == "tool/result"]
    assert [(r["id"], r["is_error"]) for r in results] == [("c1", False), ("c2", False), ("c3", True)]
    # each later request answers every call of the one before
    assert len(model.requests) == 3
    for messages, _tools in model.requests:
        assert validate_messages(messages) is None
    last = model.requests[2][0]
    assert [m["role"] for m in last] == ["user", "assistant", "tool", "tool", "assistant", "tool"]
    assert [m["tool_call_id"] for m in last if m["role"] == "tool"] == ["c1", "c2", "c3"]


def test_max_steps_ends_a_tool_loop(store, session):
    model = ScriptedProvider(*[call((f"c{i}", "get_current_time", "{}")) for i in range(5)])
    result = run_turn(session, model, "loop", max_steps=2, toolset=clock())
    assert result.reason == "max-steps" and result.commit == store.tip(SID)
    assert len(model.requests) == 2
    events = saved(store)
    assert events[-1] == ("turn/end", {"turn": 1, "reason": "max-steps"})
    assert [d["step"] for t, d in events if t == "step/end"] == [1, 2]
    assert validate_messages(session.messages()) is None


def test_an_api_failure_mid_reply_keeps_the_partial_text(store, session):
    model = ScriptedProvider(cut("Half an ans", ProviderError("the model API answered 500: boom", 500)))
    result = run_turn(session, model, "q")
    assert result.reason == "error" and result.error == "the model API answered 500: boom"
    assert result.text == "Half an ans" and result.commit == store.tip(SID)
    events = saved(store)
    assert ("assistant/message", {"content": "Half an ans", "tool_calls": [], "finish_reason": None,
                                  "model": MODEL, "interrupted": True}) in events
    assert events[-1] == ("turn/end", {"turn": 1, "reason": "error", "error": "the model API answered 500: boom"})
    assert model.closed == 1

    # the next turn goes on from a valid transcript that holds the partial reply
    run_turn(session, model, "again")
    messages = model.requests[-1][0]
    assert validate_messages(messages) is None
    assert messages == [{"role": "user", "content": "q"}, {"role": "assistant", "content": "Half an ans"},
                        {"role": "user", "content": "again"}]


def test_an_api_failure_before_any_text_saves_the_prompt(store, session):
    model = ScriptedProvider([ProviderError("lost the connection to x: refused")])
    result = run_turn(session, model, "q")
    assert (result.reason, result.text) == ("error", "")
    events = saved(store)
    assert not [d for t, d in events if t == "assistant/message"]
    assert ("user/message", {"content": "q"}) in events
    assert session.messages() == [{"role": "user", "content": "q"}]


def test_ctrl_c_mid_reply_cancels_that_reply_only(store, session):
    model = ScriptedProvider(
        call(("c1", "get_current_time", "{}")),
        cut("word1 word2 ", KeyboardInterrupt(), chunk=6),
    )
    shown: list[str] = []
    result = run_turn(session, model, "long story", toolset=clock(), on_text=shown.append)
    assert result.reason == "aborted" and result.text == "word1 word2 " and result.error is None
    assert shown == ["word1 ", "word2 "]
    assert model.closed == 2  # the cancelled stream is closed, not left hanging
    events = saved(store)
    partial = [d for t, d in events if t == "assistant/message" and d["interrupted"]]
    assert [p["content"] for p in partial] == ["word1 word2 "]
    assert events[-2:] == [("step/end", {"step": 2}), ("turn/end", {"turn": 1, "reason": "aborted"})]
    assert not store.journal(SID).exists()

    run_turn(session, model, "next")
    messages = model.requests[-1][0]
    assert validate_messages(messages) is None
    assert {"role": "assistant", "content": "word1 word2 "} in messages
