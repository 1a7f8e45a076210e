"""The fake OpenAI server, exercised through the real ``openai`` SDK."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request

import openai
import pytest
from fakeapi import FakeChatServer, drop, error, text, tool_calls, validate_messages

USER = [{"role": "user", "content": "hi"}]


@pytest.fixture
def client(fake_api: FakeChatServer) -> openai.OpenAI:
    """An SDK client pointed at the fake server, without retries, with a short timeout."""
    return openai.OpenAI(base_url=fake_api.base_url, api_key="test-key", max_retries=0, timeout=10)


def stream(client: openai.OpenAI, messages=USER):
    """Start a streaming completion the way gs does."""
    return client.chat.completions.create(
        model="gpt-4o-mini",
        messages=messages,
        stream=True,
        stream_options={"include_usage": True},
    )


def test_text_streams_in_chunks_with_usage(fake_api, client):
    fake_api.script(text("Hello, streaming world!", chunk_size=5))
    chunks = list(stream(client))

    content_chunks = [c for c in chunks if c.choices and c.choices[0].delta.content]
    assert len(content_chunks) == 5
    assert "".join(c.choices[0].delta.content for c in content_chunks) == (
        "Hello, streaming world!"
    )
    assert chunks[0].choices[0].delta.role == "assistant"
    assert all(c.model == "gpt-4o-mini" for c in chunks)
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == []
    usage = chunks[-1].usage
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens > 0


def test_slow_stream_arrives_incrementally(fake_api, client):
    fake_api.script(text("abcdef", chunk_size=2, delay=0.2))
    arrivals = []
    start = time.monotonic()
    for chunk in stream(client):
        if chunk.choices and chunk.choices[0].delta.content:
            arrivals.append(time.monotonic() - start)
    assert len(arrivals) == 3
    gaps = [arrivals[i + 1] - arrivals[i] for i in range(len(arrivals) - 1)]
    assert all(gap >= 0.15 for gap in gaps)  # each piece arrives on its own, not buffered


def test_parallel_tool_calls_assemble(fake_api, client):
    fake_api.script(
        tool_calls(
            ("read_file", '{"path": "README.md"}'),
            ("call_custom", "run_shell", '{"command": "ls -la /tmp"}'),
            content="Let me look.",
        )
    )
    content, calls, finish = "", {}, None
    for chunk in stream(client):
        if not chunk.choices:
            continue
        choice = chunk.choices[0]
        content += choice.delta.content or ""
        finish = choice.finish_reason or finish
        for tc in choice.delta.tool_calls or []:
            call = calls.setdefault(tc.index, {"id": None, "name": "", "args": ""})
            if tc.id:
                assert call["id"] is None, "id is sent only in a call's first chunk"
                call["id"] = tc.id
                assert tc.type == "function"
            call["name"] += tc.function.name or ""
            call["args"] += tc.function.arguments or ""

    assert content == "Let me look."
    assert finish == "tool_calls"
    assert sorted(calls) == [0, 1]
    assert calls[0]["id"].startswith("call_")
    assert calls[0]["name"] == "read_file"
    assert json.loads(calls[0]["args"]) == {"path": "README.md"}
    assert calls[1] == {
        "id": "call_custom",
        "name": "run_shell",
        "args": '{"command": "ls -la /tmp"}',
    }


def test_sdk_stream_helper_accumulates_tool_calls(fake_api, client):
    """The SDK's own accumulator (``.stream()``) agrees with the chunk format."""
    fake_api.script(tool_calls(("a", "f", "{}"), ("b", "g", '{"x": 1}')))
    with client.chat.completions.stream(model="m", messages=USER) as events:
        final = events.get_final_completion()
    message = final.choices[0].message
    assert final.choices[0].finish_reason == "tool_calls"
    assert [(c.id, c.function.name, c.function.arguments) for c in message.tool_calls] == [
        ("a", "f", "{}"),
        ("b", "g", '{"x": 1}'),
    ]


@pytest.mark.parametrize(
    ("status", "exc"),
    [
        (401, openai.AuthenticationError),
        (500, openai.InternalServerError),
        (429, openai.RateLimitError),
        (400, openai.BadRequestError),
    ],
)
def test_scripted_errors_raise_matching_exceptions(fake_api, client, status, exc):
    fake_api.script(error(status, "scripted failure", type="server_error", code="boom"))
    with pytest.raises(exc) as info:
        stream(client)
    assert info.value.status_code == status
    assert info.value.body == {
        "message": "scripted failure",
        "type": "server_error",
        "param": None,
        "code": "boom",
    }


def test_missing_api_key_is_401(fake_api):
    body = {"model": "m", "messages": USER}
    request = urllib.request.Request(
        f"{fake_api.base_url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    with pytest.raises(urllib.error.HTTPError) as info:
        urllib.request.urlopen(request, timeout=5)
    assert info.value.code == 401
    assert json.load(info.value)["error"]["code"] == "invalid_api_key"
    assert fake_api.requests == [{"model": "m", "messages": USER}]


def test_dropped_stream_raises_instead_of_hanging(fake_api, client):
    fake_api.script(drop("partial ans"))
    received = ""
    started = time.monotonic()
    with pytest.raises(openai.APIConnectionError) as info:
        for chunk in stream(client):
            if chunk.choices:
                received += chunk.choices[0].delta.content or ""
    assert received == "partial ans"
    # The SDK wraps the transport's complaint about the truncated chunked body.
    assert type(info.value.__cause__).__name__ == "RemoteProtocolError"
    assert "incomplete chunked read" in str(info.value.__cause__)
    assert time.monotonic() - started < 5


def test_dropped_non_stream_request_is_a_connection_error(fake_api, client):
    fake_api.script(drop())
    with pytest.raises(openai.APIConnectionError):
        client.chat.completions.create(model="m", messages=USER)


def test_unanswered_tool_call_is_rejected(fake_api, client):
    fake_api.script(text("never sent"))
    messages = [
        *USER,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
            ],
        },
        {"role": "user", "content": "and?"},
    ]
    with pytest.raises(openai.BadRequestError, match="call_1"):
        stream(client, messages)
    assert fake_api.pending_replies == 1  # rejected requests don't consume the script


def test_non_stream_completion_and_models(fake_api, client):
    fake_api.script(tool_calls(("x", "f", "{}"), content="ok"))
    completion = client.chat.completions.create(model="m", messages=USER)
    message = completion.choices[0].message
    assert (message.content, message.tool_calls[0].id) == ("ok", "x")
    assert completion.usage.total_tokens > 0
    assert "gpt-4o-mini" in [m.id for m in client.models.list()]


def test_default_reply_echoes_and_requests_are_recorded(fake_api, client):
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "ping"}]},
    ]
    first = "".join(c.choices[0].delta.content or "" for c in stream(client, messages) if c.choices)
    fake_api.script(text("pong"))
    second = "".join(c.choices[0].delta.content or "" for c in stream(client) if c.choices)

    assert (first, second) == ("echo: ping", "pong")
    assert [r["messages"] for r in fake_api.requests] == [messages, USER]
    assert fake_api.requests[0]["stream"] is True
    assert fake_api.requests[0]["stream_options"] == {"include_usage": True}
    fake_api.reset()
    assert fake_api.requests == []


CALL = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}


@pytest.mark.parametrize(
    ("messages", "problem"),
    [
        ([], "non-empty"),
        ([{"role": "robot", "content": "x"}], "role"),
        ([{"role": "user", "content": 3}], "content"),
        ([{"role": "user", "content": None}], "null"),
        ([*USER, {"role": "tool", "tool_call_id": "c1", "content": "x"}], "tool"),
        ([*USER, {"role": "assistant", "content": None, "tool_calls": [CALL]}], "c1"),
        (
            [
                *USER,
                {"role": "assistant", "content": "", "tool_calls": [CALL]},
                {"role": "tool", "tool_call_id": "c1", "content": "x"},
                {"role": "tool", "tool_call_id": "c1", "content": "again"},
            ],
            "tool",
        ),
    ],
)
def test_validate_messages_rejects(messages, problem):
    assert problem in (validate_messages(messages) or "")


def test_validate_messages_accepts_answered_parallel_calls():
    second = {**CALL, "id": "c2"}
    messages = [
        *USER,
        {"role": "assistant", "content": None, "tool_calls": [CALL, second]},
        {"role": "tool", "tool_call_id": "c2", "content": "two"},
        {"role": "tool", "tool_call_id": "c1", "content": "one"},
        {"role": "assistant", "content": "done"},
    ]
    assert validate_messages(messages) is None
