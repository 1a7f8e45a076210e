"""A tool call and its result as values (gitsessions.log.calls): the one conversion to what a
log holds and to what a request sends, which the loop, the toolset and the transcript share
(the loop's own events: tests/test_loop_tools.py)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from test_transcript import Log, texts, turn

from gitsessions.log.calls import ToolCall, ToolResult
from gitsessions.log.events import clean_text
from gitsessions.log.transcript import NOT_STARTED, closing_events


@given(st.text(min_size=1), texts, texts)
def test_a_call_read_from_the_log_is_written_back_as_it_was(call_id, name, arguments):
    entry = {"id": call_id, "name": name, "arguments": arguments}
    assert ToolCall.of(entry) == ToolCall(call_id, name, arguments)
    assert ToolCall.of(entry).data() == entry
    assert list(ToolCall.of(entry).data()) == ["id", "name", "arguments"]  # the order of the bytes on disk


def test_a_call_of_another_writer_is_read_tolerantly():
    assert ToolCall.of({}) == ToolCall("", "", "")
    assert ToolCall.of({"id": 7, "name": None, "arguments": None}) == ToolCall("7", "None", "")
    assert ToolCall("id\ud83d", "n", "a\udc00").cleaned() == ToolCall("id\ufffd", "n", "a\ufffd")


@given(st.text(min_size=1, alphabet=st.characters(blacklist_categories=["Cs"])), texts, texts, texts)
def test_the_transcript_sends_a_call_and_its_result_in_the_one_wire_shape(call_id, name, arguments, content):
    log = turn(Log(), 1, "go").add("assistant/message", content="", tool_calls=[
        {"id": call_id, "name": name, "arguments": arguments}])
    log.add("tool/result", id=call_id, name=name, content=content, is_error=False)
    *_, asked, answer = log.messages()
    sent = ToolCall.of({"id": call_id, "name": name, "arguments": arguments}).cleaned()
    assert asked["tool_calls"] == [sent.wire()]
    assert asked["tool_calls"][0] == {"id": sent.id, "type": "function",
                                      "function": {"name": sent.name, "arguments": sent.arguments}}
    assert answer == ToolResult(sent.id, sent.name, clean_text(content)).wire()
    assert answer == {"role": "tool", "tool_call_id": sent.id, "content": clean_text(content)}


def test_a_result_is_stored_with_its_error_code_only_when_it_has_one():
    assert ToolResult("c1", "read_file", "text").data() == {"id": "c1", "name": "read_file", "content": "text",
                                                            "is_error": False}
    denied = ToolResult("c1", "write_file", "no", True, "denied").data()
    assert list(denied) == ["id", "name", "content", "is_error", "error_code"]
    log = turn(Log(), 1, "go").add("assistant/message", content="", tool_calls=[{"id": "c", "name": "read_file"}])
    [(kind, data), *_] = closing_events(log.events, "interrupted")
    assert kind == "tool/result" and data == ToolResult("c", "read_file", data["content"], True, NOT_STARTED).data()

