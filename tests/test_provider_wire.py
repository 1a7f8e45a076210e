"""The provider reads the streamed body itself, as plain JSON: it must read every
stream the SDK's typed path reads, the same way, whatever the line ends and wherever the
network cuts the body."""

from __future__ import annotations

import itertools
import json
import signal
from collections.abc import Iterator
from contextlib import contextmanager

import openai
import pytest
from fakeapi import garbage, tool_calls

from gitsessions.chat.tools import TOOL_SCHEMAS
from gitsessions.errors import ProviderError
from gitsessions.provider.client import Completion, OpenAIProvider, TextDelta
from gitsessions.provider.wire import MAX_EVENT_BYTES, EventTooLarge, NoWholeEvent, Reply, RequestEncoder, sse_data


@contextmanager
def no_hang(seconds: float = 60) -> Iterator[None]:
    """Fail the block when it runs past ``seconds`` (a read that went quadratic never ends)."""
    def expired(_signum, _frame):
        pytest.fail(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


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


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"])
def test_an_event_longer_than_the_limit_is_refused_however_it_is_cut(end):
    def body(size: int) -> bytes:  # one event of `size` bytes, its line ends included
        head = b"data: " + b"x" * (size - 9 - 3 * len(end)) + end + b": c" + end
        return head + end + b"data: [DONE]" + end + end

    for cut in (1, 7, 100, 1000):
        def pieces(raw: bytes, cut: int = cut) -> Iterator[bytes]:
            return (raw[i:i + cut] for i in range(0, len(raw), cut))

        assert len(list(sse_data(pieces(body(1000)), max_bytes=1000))) == 2
        with pytest.raises(EventTooLarge):
            list(sse_data(pieces(body(1001)), max_bytes=1000))
        with pytest.raises(EventTooLarge):  # one that never ends, nor does its line
            list(sse_data(pieces(b"data: " + b"x" * 2000), max_bytes=1000))
        with pytest.raises(EventTooLarge):  # one that never ends, in lines
            list(sse_data((b"data: x" + end for _ in range(300)), max_bytes=1000))


@pytest.mark.parametrize("end", [b"\n", b"\r\n"])
def test_an_event_as_long_as_the_limit_is_read_in_one_pass(end):
    """Each piece of an unfinished event was joined to all before it: 4 GiB of one line held
    gs at full CPU for minutes, never timing out."""
    size = MAX_EVENT_BYTES - 100
    with no_hang():
        got = list(sse_data(itertools.chain([b"data: "], itertools.repeat(b"x" * 1024, size // 1024), [end + end])))
    assert [len(data) for data in got] == [size // 1024 * 1024]
    with no_hang(), pytest.raises(EventTooLarge):
        list(sse_data(itertools.chain([b"data: "], itertools.repeat(b"x" * 1024))))


def test_bytes_arriving_without_an_event_ending_are_no_progress():
    now = [0.0]

    def body(*pieces: bytes) -> Iterator[bytes]:
        for piece in pieces:
            now[0] += 1  # a second a piece
            yield piece

    def read(*pieces: bytes) -> list[bytes]:
        now[0] = 0.0
        return list(sse_data(body(*pieces), silence_s=2.5, clock=lambda: now[0]))

    assert read(b"data: 1\n\n", b"data: 2", b"\n", b"\n", b"data: 3\n\n") == [b"1", b"2", b"3"]
    assert read(b"data: 1\n\n", b": keep-alive\n\n", b":\r\n\r\n", b"", b"data: 2\n\n") == [b"1", b"2"]
    with pytest.raises(NoWholeEvent):
        read(b"data: 1\n\n", b"d", b"a", b"t", b"a")
    with pytest.raises(NoWholeEvent):  # bytes that came, none of them handed over yet (one HTTP chunk trickled)
        read(b"data: 1\n\n", b"", b"", b"", b"")
    with pytest.raises(NoWholeEvent):  # whole lines are no whole event
        read(b"data: 1\r\n\r\n", b"data: a\r\n", b": b\r\n", b"data: c\r\n", b"data: d\r\n")


def test_a_tool_call_in_many_fragments_is_joined_once():
    reply = Reply("m")
    fragment = {"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": "0123456789"}}]}}]}
    with no_hang():
        for _ in range(400_000):
            reply.take(fragment)
    (call,) = reply.completion().tool_calls
    assert call["arguments"] == "0123456789" * 400_000


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
