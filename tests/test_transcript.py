"""The derived transcript (events -> chat messages) and closing unfinished turns."""

from __future__ import annotations

from typing import Any

import pytest
from fakeapi import validate_messages
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gitsessions.log.events import TURN_END_REASONS, Event, clean_text, make_event
from gitsessions.log.transcript import (
    CANCELLED,
    NOT_STARTED,
    OUTCOME_UNKNOWN,
    closing_events,
    derive_messages,
    open_turn,
    title_of,
)
from gitsessions.log.turns import turn_count


class Log:
    """Builds a list of events with contiguous seq (raw: no cleaning, like a log read from disk)."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def add(self, type_: str, **data: Any) -> Log:
        self.events.append(Event(len(self.events), 1000 + len(self.events), type_, data))
        return self

    def close(self, reason: str) -> list[tuple[str, dict]]:
        """Append closing_events the way Session.end_turn does (through make_event)."""
        out = closing_events(self.events, reason)
        for type_, data in out:
            self.events.append(make_event(len(self.events), type_, data))
        return out

    def messages(self) -> list[dict]:
        msgs = derive_messages(self.events)
        if msgs:
            assert validate_messages(msgs) is None, validate_messages(msgs)
        return msgs


def call(id_: str, name: str = "read_file", arguments: str = "{}") -> dict:
    return {"id": id_, "name": name, "arguments": arguments}


def turn(log: Log, n: int, prompt: str) -> Log:
    return log.add("turn/start", turn=n).add("user/message", content=prompt)


def tool_msgs(msgs: list[dict]) -> dict[str, str]:
    return {m["tool_call_id"]: m["content"] for m in msgs if m["role"] == "tool"}


def synthetic(code: str) -> str:
    """The synthetic result content closing_events writes for ``code``."""
    log = Log()
    turn(log, 1, "x").add("step/start", step=1).add("assistant/message", tool_calls=[call("c")])
    if code == OUTCOME_UNKNOWN:
        log.add("tool/call", id="c", name="read_file")
    (_t, data), *_ = closing_events(log.events, "aborted" if code == CANCELLED else "interrupted")
    assert data["error_code"] == code
    return data["content"]


# -- derive_messages on hand-built logs -------------------------------------------------------


def test_plain_turn():
    log = turn(Log(), 1, "hello")
    log.add("step/start", step=1).add("assistant/message", content="hi!", tool_calls=[],
                                      finish_reason="stop")
    log.add("step/end", step=1).add("turn/end", turn=1, reason="completed")
    assert log.messages() == [{"role": "user", "content": "hello"},
                              {"role": "assistant", "content": "hi!"}]
    assert open_turn(log.events) is None
    assert closing_events(log.events, "interrupted") == []


def test_parallel_tool_calls_answered_out_of_order():
    log = turn(Log(), 1, "read two files")
    log.add("step/start", step=1)
    log.add("assistant/message", content=None,
            tool_calls=[call("a", arguments='{"path": "x"}'), call("b", "list_dir")])
    log.add("tool/call", id="a", name="read_file").add("tool/call", id="b", name="list_dir")
    log.add("tool/result", id="b", name="list_dir", content="B")
    log.add("tool/result", id="a", name="read_file", content="A")
    log.add("step/end", step=1).add("step/start", step=2)
    log.add("assistant/message", content="done", tool_calls=[]).add("step/end", step=2)
    log.add("turn/end", turn=1, reason="completed")
    msgs = log.messages()
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool", "tool", "assistant"]
    assert msgs[1]["content"] == ""  # not null: llama.cpp refuses null beside tool calls
    assert msgs[1]["tool_calls"] == [
        {"id": "a", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "x"}'}},
        {"id": "b", "type": "function", "function": {"name": "list_dir", "arguments": "{}"}},
    ]
    assert tool_msgs(msgs) == {"a": "A", "b": "B"}
    assert msgs[-1] == {"role": "assistant", "content": "done"}


def test_interrupted_reply_keeps_partial_text():
    log = turn(Log(), 1, "tell me a story")
    log.add("step/start", step=1)
    log.add("assistant/message", content="Once upon a ti", tool_calls=[], interrupted=True)
    closing = log.close("aborted")
    assert closing == [("step/end", {"step": 1}), ("turn/end", {"turn": 1, "reason": "aborted"})]
    assert log.messages() == [{"role": "user", "content": "tell me a story"},
                              {"role": "assistant", "content": "Once upon a ti"}]


def test_empty_interrupted_reply_is_left_out():
    log = turn(Log(), 1, "q")
    log.add("step/start", step=1).add("assistant/message", content="", tool_calls=[],
                                      interrupted=True)
    log.close("aborted")
    assert log.messages() == [{"role": "user", "content": "q"}]


def test_turn_that_ended_with_error_before_any_reply():
    log = turn(Log(), 1, "first")
    log.add("step/start", step=1)
    closing = log.close("error")
    assert closing == [("step/end", {"step": 1}), ("turn/end", {"turn": 1, "reason": "error"})]
    assert log.messages() == [{"role": "user", "content": "first"}]
    # The next turn simply follows; two user messages in a row are a valid transcript.
    turn(log, 2, "second")
    assert log.messages() == [{"role": "user", "content": "first"},
                              {"role": "user", "content": "second"}]


def test_crash_right_after_tool_calls_were_requested():
    log = turn(Log(), 1, "do things")
    log.add("step/start", step=1)
    log.add("assistant/message", content="Let me look.", tool_calls=[call("a"), call("b")])
    # Before closing: the transcript is already valid (synthetic "not started" answers).
    msgs = log.messages()
    assert tool_msgs(msgs) == {"a": synthetic(NOT_STARTED), "b": synthetic(NOT_STARTED)}
    closing = log.close("interrupted")
    assert [(t, d.get("id"), d.get("error_code")) for t, d in closing] == [
        ("tool/result", "a", NOT_STARTED),
        ("tool/result", "b", NOT_STARTED),
        ("step/end", None, None),
        ("turn/end", None, None),
    ]
    assert closing[0][1]["is_error"] is True and closing[0][1]["name"] == "read_file"
    assert closing[-1][1] == {"turn": 1, "reason": "interrupted"}
    msgs = log.messages()
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool", "tool"]
    assert tool_msgs(msgs) == {"a": closing[0][1]["content"], "b": closing[1][1]["content"]}
    assert open_turn(log.events) is None


def test_started_call_without_result_is_not_reported_as_never_run():
    """A call that began (tool/call) but whose turn went on without its result (a recovered
    partial reply follows it) must not be shown to the model as "never run": it may have taken
    effect, and the model would retry it blindly."""
    log = turn(Log(), 1, "delete tmp files")
    log.add("step/start", step=1)
    log.add("assistant/message", content=None, tool_calls=[call("a", "rm"), call("b", "ls")])
    log.add("tool/call", id="a", name="rm")
    log.add("assistant/message", content="partial te", tool_calls=[], interrupted=True)
    log.close("interrupted")
    codes = {e.data["id"]: e.data["error_code"] for e in log.events if e.type == "tool/result"}
    assert codes == {"a": OUTCOME_UNKNOWN, "b": NOT_STARTED}
    msgs = log.messages()
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool", "tool", "assistant"]
    assert tool_msgs(msgs) == {"a": synthetic(OUTCOME_UNKNOWN), "b": synthetic(NOT_STARTED)}


def test_result_for_unknown_id_is_dropped():
    log = turn(Log(), 1, "q")
    log.add("tool/result", id="ghost", content="boo")  # before any call
    log.add("step/start", step=1).add("assistant/message", content=None, tool_calls=[call("a")])
    log.add("tool/result", id="zzz", content="stray")
    log.add("tool/result", id="a", content="real")
    log.add("tool/result", id="a", content="second answer to a")  # answered twice
    log.add("tool/result", content="no id at all")
    log.add("step/end", step=1).add("turn/end", turn=1, reason="completed")
    msgs = log.messages()
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool"]
    assert tool_msgs(msgs) == {"a": "real"}
    # A result for a call of an earlier step, arriving late, answers nothing now.
    log2 = turn(Log(), 1, "q")
    log2.add("assistant/message", content=None, tool_calls=[call("a")])
    log2.add("tool/result", id="a", content="A")
    log2.add("assistant/message", content="ok")
    log2.add("tool/result", id="a", content="late duplicate")
    assert [m["role"] for m in log2.messages()] == ["user", "assistant", "tool", "assistant"]


def test_duplicate_tool_call_ids():
    log = turn(Log(), 1, "q")
    log.add("step/start", step=1)
    log.add("assistant/message", content=None,
            tool_calls=[call("a"), call("a", "other"), call(""), {"name": "no id"}, call("b")])
    log.add("tool/result", id="a", content="A").add("tool/result", id="b", content="B")
    msgs = log.messages()
    assert [c["id"] for c in msgs[1]["tool_calls"]] == ["a", "b"]
    assert msgs[1]["tool_calls"][0]["function"]["name"] == "read_file"
    # The same id reused in a later step is answered again, separately.
    log.add("step/end", step=1).add("step/start", step=2)
    log.add("assistant/message", content=None, tool_calls=[call("a")])
    closing = log.close("interrupted")
    msgs = log.messages()
    assert [m["role"] for m in msgs] == ["user", "assistant", "tool", "tool", "assistant", "tool"]
    assert [(t, d.get("id"), d.get("error_code")) for t, d in closing] == [
        ("tool/result", "a", NOT_STARTED), ("step/end", None, None), ("turn/end", None, None)]
    assert open_turn(log.events) is None


def test_tool_calls_of_another_shape_are_no_calls():
    """Another tool's log may hold anything in tool_calls: a string entry, or no list, raised AttributeError."""
    log = turn(Log(), 1, "q")
    log.add("assistant/message", content="text", tool_calls=["junk", 7, call("a")])
    log.add("tool/result", id="a", content="A")
    log.add("assistant/message", content="more", tool_calls="junk")
    assert log.messages()[1:] == [
        {"role": "assistant", "content": "text", "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "a", "content": "A"},
        {"role": "assistant", "content": "more"},
    ]


def test_ids_that_clean_to_the_same_string_are_not_duplicated():
    """Logs read from disk are not cleaned: two distinct lone surrogates both become U+FFFD."""
    log = turn(Log(), 1, "q")
    log.add("assistant/message", content=None, tool_calls=[call("x\ud800"), call("x\udfff")])
    log.add("tool/result", id="x\ud800", content="answer \udc80")
    msgs = log.messages()
    ids = [c["id"] for c in msgs[1]["tool_calls"]]
    assert len(ids) == len(set(ids))
    assert tool_msgs(msgs) == {"x\ufffd": "answer \ufffd"}


def test_surrogates_in_content_are_cleaned():
    log = turn(Log(), 1, "bad \ud800 input")
    log.add("assistant/message", content="out \udfff", tool_calls=[call("a", "n\ud801", "{\udc00}")])
    log.add("tool/result", id="a", content="r \ud802")
    msgs = log.messages()
    assert msgs[0]["content"] == "bad \ufffd input"
    assert msgs[1]["content"] == "out \ufffd"
    assert msgs[1]["tool_calls"][0]["function"] == {"name": "n\ufffd", "arguments": "{\ufffd}"}
    assert msgs[2]["content"] == "r \ufffd"


def test_compaction_and_undo():
    log = turn(Log(), 1, "one")
    log.add("assistant/message", content="1").add("turn/end", turn=1, reason="completed")
    log.add("compaction/summary", summary="we said one")
    turn(log, 2, "two").add("assistant/message", content="2").add("turn/end", turn=2, reason="completed")
    turn(log, 3, "three").add("assistant/message", content="3").add("turn/end", turn=3, reason="completed")
    log.add("session/undo", turn=3)
    assert log.messages() == [
        {"role": "user", "content": "Summary of the conversation so far:\nwe said one"},
        {"role": "user", "content": "two"},
        {"role": "assistant", "content": "2"},
    ]
    assert turn_count(log.events) == 3


def test_compaction_keeps_the_prompts_it_names_before_the_summary():
    """A summary with ``kept`` sends those prompts word for word, then itself, then what follows it."""
    log = turn(Log(), 1, "one")  # seq 1 is the prompt
    log.add("assistant/message", content="1").add("turn/end", turn=1, reason="completed")
    turn(log, 2, "two").add("assistant/message", content="2").add("turn/end", turn=2, reason="completed")
    log.add("compaction/summary", summary="we said one and two", kept=[1, 5, 2, "x", True, 99])  # 5 is "two"
    turn(log, 3, "three")
    assert log.messages() == [
        {"role": "user", "content": "one"},
        {"role": "user", "content": "two"},
        {"role": "user", "content": "Summary of the conversation so far:\nwe said one and two"},
        {"role": "user", "content": "three"},
    ]  # 2 is a reply, not a prompt; "x", True and 99 (not covered) name nothing
    log.add("session/undo", turn=2)  # an undo of a turn it covers voids the summary
    assert [m["content"] for m in log.messages()] == ["one", "1", "three"]


def test_title_of():
    log = turn(Log(), 1, "  first line\nsecond")
    assert title_of(log.events) == "first line"
    log.add("session/title", title="Named")
    assert title_of(log.events) == "Named"


# -- closing_events ---------------------------------------------------------------------------


def open_tool_turn(step_ended: bool = False) -> Log:
    """Turn 4 (after three closed ones) where the assistant asked for a, b, c; a ran and was
    answered, b started without a result, c never started."""
    log = Log()
    for n in range(1, 4):
        turn(log, n, f"p{n}").add("turn/end", turn=n, reason="completed")
    turn(log, 4, "q").add("step/start", step=1)
    log.add("assistant/message", content=None, tool_calls=[call("a"), call("b", "write"), call("c", "ls")])
    log.add("tool/call", id="a", name="read_file").add("tool/result", id="a", content="A")
    log.add("tool/call", id="b", name="write")
    if step_ended:
        log.add("step/end", step=1)
    return log


@pytest.mark.parametrize(
    "reason, c_code",
    [("interrupted", NOT_STARTED), ("error", NOT_STARTED), ("max-steps", NOT_STARTED),
     ("completed", NOT_STARTED), ("aborted", CANCELLED)],
)
def test_closing_codes(reason, c_code):
    log = open_tool_turn()
    assert open_turn(log.events) is not None
    closing = closing_events(log.events, reason)
    results = [d for t, d in closing if t == "tool/result"]
    assert [(d["id"], d["error_code"]) for d in results] == [("b", OUTCOME_UNKNOWN), ("c", c_code)]
    assert [d["name"] for d in results] == ["write", "ls"]
    assert all(d["is_error"] is True and d["content"].startswith("error:") for d in results)
    assert closing[-2] == ("step/end", {"step": 1})
    assert closing[-1] == ("turn/end", {"turn": 4, "reason": reason})
    assert len(closing) == 4
    log.close(reason)
    assert open_turn(log.events) is None
    assert closing_events(log.events, reason) == []
    msgs = log.messages()
    assert tool_msgs(msgs)["a"] == "A"
    assert tool_msgs(msgs)["b"] == synthetic(OUTCOME_UNKNOWN)
    assert tool_msgs(msgs)["c"] == synthetic(c_code)


def test_synthetic_contents_differ():
    texts = {synthetic(c) for c in (NOT_STARTED, OUTCOME_UNKNOWN, CANCELLED)}
    assert len(texts) == 3
    assert "unknown" in synthetic(OUTCOME_UNKNOWN)


def test_closing_does_not_add_a_second_step_end():
    closing = closing_events(open_tool_turn(step_ended=True).events, "interrupted")
    assert [t for t, _ in closing] == ["tool/result", "tool/result", "turn/end"]


def test_closing_a_turn_with_only_a_start():
    log = Log().add("turn/start", turn=7)
    assert log.close("interrupted") == [("turn/end", {"turn": 7, "reason": "interrupted"})]
    assert derive_messages(log.events) == []


def test_closing_with_no_turn_open():
    assert closing_events([], "interrupted") == []
    log = turn(Log(), 1, "x").add("turn/end", turn=1, reason="completed").add("session/title", title="t")
    assert closing_events(log.events, "interrupted") == []


def test_closing_uses_the_last_step():
    log = turn(Log(), 1, "q")
    log.add("step/start", step=1).add("assistant/message", content="x").add("step/end", step=1)
    log.add("step/start", step=2)
    assert log.close("max-steps") == [("step/end", {"step": 2}),
                                      ("turn/end", {"turn": 1, "reason": "max-steps"})]


# -- property: any cut-off log derives a valid transcript -------------------------------------

SURROGATES = ["\ud800", "\udbff", "\udc00", "\udfff", "\udc80", "\ud83d"]

texts = st.lists(
    st.one_of(st.characters(), st.sampled_from(SURROGATES), st.sampled_from(["\n", " ", "é", "😀"])),
    max_size=6,
).map("".join)

call_ids = st.one_of(
    st.sampled_from(["a", "b", "c", "call_1"]),  # a small pool: duplicates within and across steps
    st.sampled_from(SURROGATES).map(lambda s: "id" + s),  # ids that clean to the same string
    st.text(min_size=1, max_size=4),
)


@st.composite
def turn_events(draw, n: int) -> list[tuple[str, dict]]:
    """A whole turn (possibly with more steps than a real one), then cut off anywhere."""
    out: list[tuple[str, dict]] = [("turn/start", {"turn": n}), ("user/message", {"content": draw(texts)})]
    steps = draw(st.integers(0, 3))
    for step in range(1, steps + 1):
        out.append(("step/start", {"step": step}))
        if draw(st.booleans()) or step == steps:
            calls = [
                {"id": draw(call_ids), "name": draw(texts), "arguments": draw(texts)}
                for _ in range(draw(st.integers(0, 3)))
            ]
            content = draw(st.one_of(st.none(), texts))
            out.append(("assistant/message", {"content": content, "tool_calls": calls,
                                              "finish_reason": "tool_calls" if calls else "stop",
                                              "interrupted": draw(st.booleans())}))
            order = draw(st.permutations(range(len(calls))))
            for i in order:
                c = calls[i]
                if draw(st.booleans()):
                    out.append(("tool/call", {"id": c["id"], "name": c["name"]}))
                if draw(st.booleans()):
                    out.append(("tool/result", {"id": c["id"], "name": c["name"],
                                                "content": draw(texts), "is_error": draw(st.booleans())}))
        if draw(st.integers(0, 9)) == 0:
            out.append(("tool/result", {"id": draw(call_ids), "content": draw(texts)}))
        out.append(("step/end", {"step": step}))
    if draw(st.booleans()):
        out.append(("assistant/message", {"content": draw(texts), "tool_calls": [], "interrupted": True}))
    out.append(("turn/end", {"turn": n, "reason": draw(st.sampled_from(sorted(TURN_END_REASONS)))}))
    cut = draw(st.integers(1, len(out)))
    return out[:cut]


@st.composite
def logs(draw) -> tuple[list[Event], list[str | None]]:
    """Events of 1-4 turns, each cut off anywhere and then maybe closed; returns the events and
    the reasons used (None where a turn was left open)."""
    events: list[Event] = []
    reasons: list[str | None] = []

    def add(type_: str, data: dict) -> None:
        # Raw Event, not make_event: a log read from disk is not cleaned.
        events.append(Event(len(events), len(events), type_, data))

    for n in range(1, draw(st.integers(1, 4)) + 1):
        for type_, data in draw(turn_events(n)):
            add(type_, data)
        reason = draw(st.one_of(st.none(), st.sampled_from(sorted(TURN_END_REASONS))))
        if reason is not None:
            for type_, data in closing_events(events, reason):
                events.append(make_event(len(events), type_, data))
        reasons.append(reason)
        if draw(st.integers(0, 9)) == 0:
            # what it covers: all before it, or up to an event anywhere (a seq; out of range: all)
            through = draw(st.one_of(st.none(), st.integers(-1, len(events))))
            kept = draw(st.lists(st.integers(-1, len(events)), max_size=3))  # prompts or not, covered or not
            add("compaction/summary", {"summary": draw(texts), "kept": kept,
                                       **({} if through is None else {"through": through})})
        if draw(st.integers(0, 14)) == 0:
            add("session/undo", {"turn": draw(st.integers(1, n))})
    return events, reasons


def all_strings(value: Any):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from all_strings(k)
            yield from all_strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from all_strings(v)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(logs(), st.sampled_from(sorted(TURN_END_REASONS)))
def test_any_cut_off_log_derives_a_valid_transcript(log, final_reason):
    events, _reasons = log
    msgs = derive_messages(events)
    if any(e.type == "user/message" for e in events) and not any(
        e.type in ("session/undo", "compaction/summary") for e in events
    ):
        assert msgs, "a log with a prompt derives at least one message"
    if msgs:
        assert validate_messages(msgs) is None, (validate_messages(msgs), msgs)
    for s in all_strings(msgs):
        s.encode("utf-8")

    # Closing whatever is left open leaves no open turn, and the result is still valid.
    closing = closing_events(events, final_reason)
    closed = list(events)
    for type_, data in closing:
        closed.append(make_event(len(closed), type_, data))  # what Session.end_turn stores
    assert open_turn(closed) is None
    assert closing_events(closed, final_reason) == []
    if closing:
        assert closing[-1][0] == "turn/end" and closing[-1][1]["reason"] == final_reason
        # Every call requested in the closed turn now has a tool/result.
        start = open_turn(events)
        assert start is not None
        turn_evs = closed[start:]
        requested = {clean_text(c["id"]) for e in turn_evs if e.type == "assistant/message"
                     for c in e.data.get("tool_calls") or [] if c.get("id")}
        answered = {clean_text(e.data["id"]) for e in turn_evs
                    if e.type == "tool/result" and "id" in e.data}
        assert requested <= answered
    msgs2 = derive_messages(closed)
    if msgs2:
        assert validate_messages(msgs2) is None, (validate_messages(msgs2), msgs2)
    for s in all_strings(msgs2):
        s.encode("utf-8")


def test_the_last_system_prompt_leads_the_messages_through_undo_and_compaction():
    log = Log().add("session/system", content="be terse")
    turn(log, 1, "q1").add("assistant/message", content="a1").add("turn/end", turn=1, reason="completed")
    assert log.messages()[0] == {"role": "system", "content": "be terse"}
    log.add("session/system", content="be a pirate")
    turn(log, 2, "q2").add("assistant/message", content="a2").add("turn/end", turn=2, reason="completed")
    assert [m["role"] for m in log.messages()] == ["system", "user", "assistant", "user", "assistant"]
    assert log.messages()[0]["content"] == "be a pirate"  # one system message: the last
    log.add("session/undo", turn=2)  # the setting made in turn 1's range stays with an undo of turn 2
    assert log.messages()[0]["content"] == "be a pirate"
    log.add("session/undo", turn=1)
    assert log.messages() == [{"role": "system", "content": "be a pirate"}]
    turn(log, 3, "q3").add("compaction/summary", summary="s")
    assert [m["role"] for m in log.messages()] == ["system", "user"]  # the summary replaced the rest, not it
    log.add("session/system", content="  ")  # blank: none
    assert [m["role"] for m in log.messages()] == ["user"]
