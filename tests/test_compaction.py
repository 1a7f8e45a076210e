"""Compaction (issue 15, item 4): a ``compaction/summary`` event stands in the derived transcript
for the events it covers; the log keeps every message (gs show, gs search, a fork from before).

First the transcript rule on hand-built logs, then ``/compact`` and the automatic compaction
against the strict fake server (tests/fakeapi.py), through the real CLI.
"""

from __future__ import annotations

from typing import Any

from test_transcript import Log, call, turn

from gitsessions.transcript import SUMMARY_LEAD, derive_messages


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
