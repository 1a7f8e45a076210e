"""The provider reads the streamed body itself, as plain JSON: it must read every
stream the SDK's typed path reads, the same way, whatever the line ends and wherever the
network cuts the body."""

from __future__ import annotations

import json

import openai
import pytest
from fakeapi import garbage, tool_calls

from gitsessions.chat.tools import TOOL_SCHEMAS
from gitsessions.errors import ProviderError
from gitsessions.provider.client import Completion, OpenAIProvider, TextDelta
from gitsessions.provider.wire import RequestEncoder, sse_data


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"])
def test_events_read_the_same_in_any_line_end_and_cut_anywhere(end):
    body = end.join([b": a comment", b"event: message", b'data: {"a": 1}', b"id: 7", b"",
                     b"data:two", b"data: lines", b"", b"", b"data: [DONE]", b"", b""])
    whole = list(sse_data([body]))
    assert whole == [b'{"a": 1}', b"two\nlines", b"[DONE]"]
    for cut in range(1, len(body)):
        assert list(sse_data([body[:cut], body[cut:]])) == whole, cut
    assert list(sse_data(body[i:i + 1] for i in range(len(body)))) == whole


def test_a_stream_that_changes_its_line_ends_midway_reads_the_same():
    body = b'data: {"a": 1}\n\ndata: two\n\n: note\ndata: x\r\n\r\ndata: y\r\rdata: z\n\n'
    whole = [b'{"a": 1}', b"two", b"x", b"y", b"z"]
    assert list(sse_data([body])) == whole
    for cut in range(1, len(body)):
        assert list(sse_data([body[:cut], body[cut:]])) == whole, cut


def test_an_event_the_body_never_finished_is_dropped():
    assert list(sse_data([b'data: {"a": 1}\n\ndata: {"b"'])) == [b'{"a": 1}']
    assert list(sse_data([b'data: {"a": 1}\n'])) == []


def sdk_completion(fake_api, messages, tools) -> tuple[list[str], Completion]:
    """The reply read through the SDK's typed ``chat.completions.create`` stream."""
    client = openai.OpenAI(base_url=fake_api.base_url, api_key="test-key", max_retries=0, timeout=10)
    pieces: list[str] = []
    done = Completion()
    calls: dict[int, dict[str, str]] = {}
    for chunk in client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools,
                                                stream=True, stream_options={"include_usage": True}):
        done.model = chunk.model
        if chunk.usage is not None:
            done.usage = chunk.usage.model_dump(exclude_none=True)
        for choice in chunk.choices:
            if choice.delta.content:
                pieces.append(choice.delta.content)
            for tc in choice.delta.tool_calls or []:
                slot = calls.setdefault(tc.index, {"id": "", "name": "", "arguments": ""})
                slot["id"] = tc.id or slot["id"]
                slot["name"] += tc.function.name or ""
                slot["arguments"] += tc.function.arguments or ""
            done.finish_reason = choice.finish_reason or done.finish_reason
    done.content = "".join(pieces)
    done.tool_calls = [calls[i] for i in sorted(calls)]
    return pieces, done


def test_plain_json_gives_what_the_sdks_types_give(fake_api):
    messages = [{"role": "user", "content": "what time is it? é ☃"}]
    reply = tool_calls(("call_a", "get_current_time", '{"timezone": "Europe/Paris"}'),
                       ("call_b", "get_current_time", "{}"), content="Let me look, ☃.")
    fake_api.script(reply)
    sdk_pieces, sdk_done = sdk_completion(fake_api, messages, TOOL_SCHEMAS)
    fake_api.script(reply)
    provider = OpenAIProvider("gpt-4o-mini", "test-key", fake_api.base_url, max_retries=0)
    items = list(provider.stream(messages, TOOL_SCHEMAS))
    assert [i.text for i in items if isinstance(i, TextDelta)] == sdk_pieces
    assert items[-1] == sdk_done
    assert sdk_done.usage and sdk_done.tool_calls and sdk_done.finish_reason == "tool_calls"
    first, second = fake_api.requests
    assert first == second  # the same request body, untyped


def test_an_error_event_inside_the_stream_is_the_servers_words(fake_api):
    fake_api.script(garbage('data: {"error": {"message": "the model\\nis overloaded"}}', after="Refs"))
    provider = OpenAIProvider("gpt-4o-mini", "test-key", fake_api.base_url, max_retries=0)
    stream = provider.stream([{"role": "user", "content": "hi"}])
    assert next(stream) == TextDelta("Refs")
    with pytest.raises(ProviderError) as info:
        next(stream)
    assert str(info.value) == (f"the model API at {fake_api.base_url} failed mid-reply: the model is "
                               "overloaded; the partial reply is kept")


def test_each_request_body_is_the_json_of_its_messages_as_the_conversation_goes_on():
    encoder = RequestEncoder()
    fields = {"model": "m", "stream": True, "tools": TOOL_SCHEMAS}
    messages: list[dict] = []
    for n in range(6):
        messages = [*messages, {"role": "user", "content": f"prompt {n} é ☃ \"quoted\""},
                    {"role": "assistant", "content": f"answer {n}"}]
        if n == 3:
            messages = [{"role": "user", "content": "Summary of the conversation so far:\n..."}]  # a compaction
        if n == 5:
            messages = [messages[0], {"role": "user", "content": "changed"}, *messages[2:]]  # one in the middle
        sent = [{"role": "system", "content": "be brief"}, *messages]  # the system prompt: a new dict each time
        body = encoder.body(fields, sent)
        assert json.loads(body) == {**fields, "messages": sent}
        assert body == encoder.body(fields, list(sent))  # the same again, from what was kept
    assert json.loads(encoder.body({}, [])) == {"messages": []}
