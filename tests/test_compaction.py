"""Compaction: a ``compaction/summary`` event stands in the derived transcript
for the events it covers; the log keeps every message (gs show, gs search, a fork from before).

First the transcript rule on hand-built logs, then ``/compact`` and the automatic compaction
against the strict fake server (tests/fakeapi.py), through the real CLI.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from fakeapi import cut, error, text
from scripted import MODEL, ScriptedProvider, say, scripted_env
from scripted import cut as cut_with
from test_transcript import Log, call, turn

from gitsessions.chat.compaction import PROMPT, AutoCompact, request_tokens
from gitsessions.cli.repl.repl import Repl
from gitsessions.config import Config, ModelSettings
from gitsessions.log.transcript import SUMMARY_LEAD, derive_messages
from gitsessions.store import GitStore


def contents(log: Log) -> list[Any]:
    return [m.get("content") for m in log.messages()]


def done(log: Log, n: int, prompt: str, reply: str) -> Log:
    return turn(log, n, prompt).add("assistant/message", content=reply).add("turn/end", turn=n, reason="completed")


# -- the transcript rule --------------------------------------------------------------------


def test_a_summary_replaces_what_it_covers_and_what_follows_is_sent_after_it():
    log = done(done(Log(), 1, "q1", "a1"), 2, "q2", "a2")
    log.add("compaction/summary", summary="we spoke twice", through=len(log.events) - 1)
    done(log, 3, "q3", "a3")
    assert contents(log) == [SUMMARY_LEAD + "we spoke twice", "q3", "a3"]


def test_the_range_named_keeps_the_events_after_it():
    log = done(done(Log(), 1, "q1", "a1"), 2, "q2", "a2")
    assert log.events[3].type == "turn/end"  # turn 1 is seq 0-3
    log.add("compaction/summary", summary="turn one", through=3)
    assert contents(log) == [SUMMARY_LEAD + "turn one", "q2", "a2"]


def test_a_tool_result_goes_with_its_call_wherever_the_range_ends():
    log = turn(Log(), 1, "read it").add("assistant/message", content="", tool_calls=[call("a")])
    asked = len(log.events) - 1
    log.add("tool/call", id="a", name="read_file")
    log.add("compaction/summary", summary="s", through=asked - 1)  # the call is kept: so is its answer
    log.add("tool/result", id="a", name="read_file", content="A").add("assistant/message", content="done")
    msgs = log.messages()
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool", "assistant"]
    assert msgs[2] == {"role": "tool", "tool_call_id": "a", "content": "A"}

    log = turn(Log(), 1, "read it").add("assistant/message", content="", tool_calls=[call("a")])
    log.add("compaction/summary", summary="s")  # the call is covered: its late answer goes with it
    log.add("tool/result", id="a", name="read_file", content="A").add("assistant/message", content="done")
    assert [m["role"] for m in log.messages()] == ["user", "assistant"]


def test_a_summary_made_after_an_undo_is_sent():
    # It was left out: it came after turn 2's events, and turn 2 was undone (before it was made).
    log = done(done(Log(), 1, "q1", "a1"), 2, "q2", "a2").add("session/undo", turn=2)
    log.add("compaction/summary", summary="only turn one")
    assert contents(log) == [SUMMARY_LEAD + "only turn one"]
    done(log, 3, "q3", "a3")
    assert contents(log) == [SUMMARY_LEAD + "only turn one", "q3", "a3"]


def test_an_undo_after_a_summary_of_its_turn_voids_the_summary():
    log = done(done(Log(), 1, "q1", "a1"), 2, "q2", "a2").add("compaction/summary", summary="q1 and q2")
    done(log, 3, "q3", "a3").add("session/undo", turn=3)  # a turn after it: the summary stands
    assert contents(log) == [SUMMARY_LEAD + "q1 and q2"]
    log.add("session/undo", turn=2)  # a turn it covers: the model would see q2 through it
    assert contents(log) == ["q1", "a1"]
    assert derive_messages(list(log.events)) == log.messages()  # as a fresh derivation gives it


# -- /compact and the automatic compaction, against the strict server ------------------------


def chat(gs, *lines: str, session: str = "work"):
    r = gs("chat", session, input="".join(line + "\n" for line in lines))
    assert r.code == 0, r.err
    return r


def sent(request: dict) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in request["messages"]]


def test_compact_sends_the_summary_instead_of_what_it_covers_and_the_log_keeps_it(gs, fake_api):
    fake_api.script(text("a1"), text("a2"), text("they asked about apples"), text("a3"))
    r = chat(gs, "q1 about apples", "q2", "/compact keep the fruit", "q3")
    assert "(compacted turns 1-2 (4 messages) into a summary of ~6 tokens; the log keeps every message" in r.out
    ask = fake_api.requests[2]
    assert sent(ask)[:4] == [("user", "q1 about apples"), ("assistant", "a1"), ("user", "q2"), ("assistant", "a2")]
    assert ask["messages"][-1]["content"] == PROMPT + "\n\nAlso: keep the fruit" and "tools" not in ask
    assert sent(fake_api.requests[3]) == [("user", SUMMARY_LEAD + "they asked about apples"), ("user", "q3")]

    events = json.loads(gs("show", "work", "--format", "json").out)["events"]
    summary = next(e for e in events if e["type"] == "compaction/summary")
    assert events[summary["seq"] - 1]["type"] == "turn/end"  # after turn 2, standing for all before it
    assert summary["data"] == {"summary": "they asked about apples", "through": summary["seq"] - 1,
                               "model": "gpt-4o-mini",
                               "usage": summary["data"]["usage"], "instructions": "keep the fruit"}
    assert summary["data"]["usage"]["prompt_tokens"] > 0
    sent_now = [m["content"] for m in json.loads(gs("show", "work", "-f", "json").out)["messages"]]
    every = [m["content"] for m in json.loads(gs("show", "work", "-f", "json", "--full").out)["messages"]]
    assert "q1 about apples" not in sent_now and SUMMARY_LEAD + "they asked about apples" in sent_now
    assert every[:4] == ["q1 about apples", "a1", "q2", "a2"] and "q3" in every
    shown = gs("show", "work", "--full").out
    assert shown == gs("show", "work").out
    assert "you › q1 about apples" in shown.splitlines()
    assert "(summary of the conversation up to turn 2: they asked about apples)" in shown
    assert "    (summary up to turn 2: they asked about apples)" in gs("log", "work", "-p").out.splitlines()
    assert "q1 about apples" in gs("search", "apples").out
    assert "q1 about apples" in gs("export", "work", "-f", "markdown").out
    subjects = gs("log", "work").out
    assert "compact: the conversation up to turn 2" in subjects


def test_a_fork_from_before_the_compaction_sends_every_message(gs, fake_api):
    fake_api.script(text("a1"), text("the summary"), text("a2"))
    chat(gs, "q1", "/compact", "q2")
    fake_api.reset()
    r = gs("chat", "work~2", "--fork", "before", input="q3\n")
    assert r.code == 0, r.err
    assert sent(fake_api.requests[0]) == [("user", "q1"), ("assistant", "a1"), ("user", "q3")]


@pytest.mark.parametrize("failure", [
    lambda: error(500, "the server broke"), lambda: cut("half a summ"),
    lambda: text("cut short", finish_reason="length"), lambda: text(""),
], ids=["api-error", "cut-stream", "length", "empty"])
def test_a_compaction_that_fails_changes_nothing(gs, fake_api, tmp_path, failure):
    (tmp_path / "config.yaml").write_text("max_retries: 0\n")
    fake_api.script(text("a1"), failure())
    r = chat(gs, "q1", "/compact")
    assert "(nothing was compacted: the model sees the conversation as before)" in r.out
    assert r.out.count("nothing was compacted") == 1 and "kept" not in r.out  # no partial summary is
    log = gs("log", "work").out
    assert "compaction" not in log and sum(line.startswith("commit ") for line in log.splitlines()) == 1
    fake_api.reset()
    chat(gs, "q2")
    assert sent(fake_api.requests[0]) == [("user", "q1"), ("assistant", "a1"), ("user", "q2")]


def test_nothing_to_compact_is_said(gs, fake_api):
    r = chat(gs, "/compact")
    assert "error: nothing to compact" in r.out and not fake_api.requests
    assert "compacting" not in r.out  # refused before it says it asks
    fake_api.script(text("a1"), text("the summary"))
    r = chat(gs, "q1", "/compact", "/compact")
    assert r.out.count("error: nothing to compact") == 1 and len(fake_api.requests) == 2


def test_the_history_is_compacted_before_a_request_that_would_pass_the_share_of_the_window(gs, fake_api, tmp_path):
    (tmp_path / "config.yaml").write_text("models: {gpt-4o-mini: {context: 100}}\ncompact_at: 0.5\n")
    # The fake server counts a reply's tokens by its streamed pieces: 50 pieces of 4 characters.
    fake_api.script(text("x" * 200), text("a long reply, summarized"), text("a2"), text("a3"))
    r = chat(gs, "hello there", "next", "and then")
    assert len(fake_api.requests) == 4  # turn 1, the summary, turn 2, turn 3: no second compaction
    assert fake_api.requests[1]["messages"][-1]["content"] == PROMPT
    assert sent(fake_api.requests[2]) == [("user", SUMMARY_LEAD + "a long reply, summarized"), ("user", "next")]
    assert ("(the request would hold ~62 tokens, 62% of gpt-4o-mini's 100: compacted turn 1 (2 messages) "
            "into a summary") in r.out
    events = json.loads(gs("show", "work", "--format", "json").out)["events"]
    assert [e["data"].get("auto") for e in events if e["type"] == "compaction/summary"] == [True]


def test_no_automatic_compaction_without_a_window_or_when_turned_off(gs, fake_api, tmp_path):
    fake_api.script(text("x" * 200))
    chat(gs, "hello there", "next")
    (tmp_path / "config.yaml").write_text("models: {gpt-4o-mini: {context: 100}}\ncompact_at: false\n")
    chat(gs, "more")
    assert len(fake_api.requests) == 3 and all(r["messages"][-1]["content"] != PROMPT for r in fake_api.requests)


def test_an_automatic_compaction_that_fails_lets_the_request_go_as_it_is(gs, fake_api, tmp_path):
    (tmp_path / "config.yaml").write_text("models: {gpt-4o-mini: {context: 100}}\ncompact_at: 0.5\nmax_retries: 0\n")
    fake_api.script(text("x" * 200), error(503, "overloaded"), text("a2"))
    r = chat(gs, "hello there", "next")
    assert "compacting it failed (" in r.out and "it goes as it is)" in r.out
    assert sent(fake_api.requests[2]) == [("user", "hello there"), ("assistant", "x" * 200), ("user", "next")]
    assert "compaction" not in gs("log", "work").out


@pytest.mark.parametrize("setting, said", [
    ("compact_at: 2", "compact_at must be a share of the window above 0 and at most 1"),
    ("compact_at: yes", "compact_at must be a share of the window above 0 and at most 1"),
])
def test_a_bad_compaction_setting_is_refused_saying_what_to_write(gs, tmp_path, setting, said):
    (tmp_path / "config.yaml").write_text(setting + "\n")
    r = gs("chat", "work", input="hi\n")
    assert r.code == 1 and said in r.err


def test_gs_ask_compacts_first_too_and_says_so_on_stderr(gs, fake_api, tmp_path):
    (tmp_path / "config.yaml").write_text("models: {gpt-4o-mini: {context: 100}}\n")  # at the default 80 %
    fake_api.script(text("x" * 320), text("the summary"), text("a2"))
    assert gs("ask", "-S", "work", "hello there").code == 0
    r = gs("ask", "-S", "work", "next")
    assert r.code == 0 and r.out == "a2\n"
    assert "compacted turn 1 (2 messages) into a summary" in r.err
    assert sent(fake_api.requests[2]) == [("user", SUMMARY_LEAD + "the summary"), ("user", "next")]


# -- in-process: Ctrl+C, and the count of a request not yet sent ----------------------------


def test_ctrl_c_while_the_summary_streams_changes_nothing(repo_path):
    model = ScriptedProvider(say("a1"), cut_with("half a summ", KeyboardInterrupt()), say("a2"))
    out: list[str] = []
    lines = iter(["q1", "/compact", "q2"])
    with GitStore(repo_path) as store:
        Repl(store, model, "work", scripted_env(lines, out)).run()
        assert [i.message.subject for i in store.log("work")] == ["turn 2: q2", "turn 1: q1"]
    assert "(compaction cancelled; nothing changed)\n" in out
    assert [m["content"] for m in model.requests[-1][0]] == ["q1", "a1", "q2"]


def test_ctrl_c_while_an_automatic_compaction_streams_lets_the_turn_go_as_it_is(repo_path):
    model = ScriptedProvider(say("a1"), cut_with("half", KeyboardInterrupt()), say("a2"))
    out: list[str] = []
    lines = iter(["q1", "q2"])
    with GitStore(repo_path) as store:
        Repl(store, model, "work", scripted_env(
            lines, out, config=Config(repo_path / "config.yaml", models={MODEL: ModelSettings(context=10)}),
            compaction=AutoCompact(0.5))).run()  # a reply's usage: 5 tokens
    assert any("compaction cancelled, it goes as it is" in line for line in out)
    assert [m["content"] for m in model.requests[-1][0]] == ["q1", "a1", "q2"]


def test_a_request_is_counted_from_the_last_reply_usage_plus_what_came_after_it():
    log = done(Log(), 1, "q1", "a1")
    log.events[2].data["usage"] = {"prompt_tokens": 1000, "completion_tokens": 200}
    assert request_tokens(log.events) == 1200
    assert request_tokens(log.events, "x" * 40) == 1200 + 4 + 10  # a message's 4, ~4 bytes a token
    turn(log, 2, "y" * 40)  # a prompt sent since, not yet answered
    assert request_tokens(log.events) == 1200 + 4 + 10
    log.add("session/undo", turn=2)  # what is sent changed since: all of it is estimated
    assert request_tokens(log.events) == (4 + 1) + (4 + 1)  # "q1" and "a1"


def test_a_secret_in_the_instructions_reaches_neither_the_model_nor_the_log(gs, fake_api):
    token = "ghp_" + "Q7w8E9r0T1y2U3i4O5p6" + "A7s8D9f0G1h2"
    fake_api.script(text("a1"), text("the summary"))
    chat(gs, "q1", f"/compact mention {token}")
    ask = fake_api.requests[1]
    assert token not in json.dumps(ask) and "mention" in ask["messages"][-1]["content"]
    assert token not in gs("show", "work", "--format", "jsonl").out


def test_every_display_says_up_to_which_turn_a_summary_stands():
    from gitsessions.log import view

    log = done(done(Log(), 1, "q1", "a1"), 2, "q2", "a2")
    log.add("compaction/summary", summary="one", through=3).add("compaction/summary", summary="both")
    log.add("compaction/summary", summary="odd range", through=99)  # out of range: all before it
    assert [(i.text, i.upto) for i in view.items(log.events) if isinstance(i, view.Summary)] == [
        ("one", 1), ("both", 2), ("odd range", 2)]


def test_compacting_a_past_revision_writes_a_fork_and_the_original_never_moves(gs, fake_api):
    fake_api.script(text("a1"), text("a2"), text("the summary of turn 1"))
    chat(gs, "q1", "q2")
    tip = gs("show", "work", "--format", "json").json()["commit"]
    r = gs("chat", "work~1", "--fork", "short", input="/compact\n")
    assert r.code == 0 and "compacted turn 1 (2 messages)" in r.out
    assert gs("show", "work", "--format", "json").json()["commit"] == tip
    fake_api.reset()
    chat(gs, "q3", session="short")
    assert sent(fake_api.requests[0]) == [("user", SUMMARY_LEAD + "the summary of turn 1"), ("user", "q3")]


def test_gs_search_finds_a_summarys_text(gs, fake_api):
    fake_api.script(text("a1"), text("they spoke of zebras"))
    chat(gs, "q1", "/compact")
    r = gs("search", "zebras")
    assert r.code == 0, r.err
    assert "summary: they spoke of zebras" in r.out
    [hit] = gs("search", "zebras", "--json").json()
    assert (hit["role"], hit["turn"]) == ("summary", 1)


def test_a_compaction_commit_names_the_model_that_wrote_the_summary_and_whether_it_was_automatic(
        gs, fake_api, git, tmp_path):
    fake_api.script(text("a1"), text("s1"))
    chat(gs, "q1", "/model fake-model", "/compact")
    assert git("log", "-1", "--format=%s", "work").strip() == "compact: the conversation up to turn 1"
    assert "Model: fake-model" in git("log", "-1", "--format=%B", "work")
    (tmp_path / "config.yaml").write_text("models: {fake-model: {context: 100}}\ncompact_at: 0.5\n")
    fake_api.script(text("x" * 200), text("s2"), text("a3"))
    chat(gs, "q2", "q3")
    subjects = git("log", "--format=%s", "work").splitlines()
    assert "compact: the conversation up to turn 2 (automatic)" in subjects


def test_compact_asks_the_model_the_session_chose(gs, fake_api):
    fake_api.script(text("a1"), text("s1"))
    chat(gs, "q1", "/model fake-model", "/compact")
    assert fake_api.requests[-1]["model"] == "fake-model"
