"""The fake agent servers: Anthropic Messages over raw HTTP, Responses through the real ``openai`` SDK."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import openai
import pytest
from fakeagents import AnthropicServer, ResponsesServer, error, text, tool_call

TOOLS = [{"name": "Bash", "description": "Run a command", "input_schema": {"type": "object"}}]


def _post(server: AnthropicServer, path: str, body: dict, key: str | None = "test-key") -> tuple[int, bytes]:
    headers = {"content-type": "application/json", "anthropic-version": "2023-06-01"}
    if key:
        headers["x-api-key"] = key
    request = urllib.request.Request(server.base_url + path, json.dumps(body).encode(), headers)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _events(raw: bytes) -> list[tuple[str, dict]]:
    """The SSE events of a body: (event name, data) each, checking the name matches the data's type."""
    events = []
    for block in raw.decode().split("\n\n"):
        if not block.strip():
            continue
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        data = json.loads(fields["data"])
        assert data["type"] == fields["event"]
        events.append((fields["event"], data))
    return events


def _ask(said: str | list, *, tools: bool = True, stream: bool = True) -> dict:
    body = {"model": "claude-test", "max_tokens": 100, "stream": stream,
            "messages": [{"role": "user", "content": said}]}
    return body | {"tools": TOOLS} if tools else body


@pytest.fixture
def anthropic():
    with AnthropicServer() as server:
        yield server


def test_a_streamed_message_carries_text_then_a_tool_use_and_ends_with_its_stop_reason(anthropic):
    anthropic.script(tool_call("Bash", {"command": "echo hi"}, content="Running it."))
    status, raw = _post(anthropic, "/v1/messages?beta=true", _ask("please run echo hi"))
    assert status == 200
    events = _events(raw)
    names = [name for name, _ in events if name != "ping"]
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    assert events[0][1]["message"]["model"] == "claude-test" and events[0][1]["message"]["usage"]["input_tokens"] > 0
    starts = [data["content_block"] for name, data in events if name == "content_block_start"]
    assert [b["type"] for b in starts] == ["text", "tool_use"]
    assert starts[1]["name"] == "Bash" and starts[1]["id"].startswith("toolu_") and starts[1]["input"] == {}
    deltas = [data for name, data in events if name == "content_block_delta"]
    assert "".join(d["delta"]["text"] for d in deltas if d["index"] == 0) == "Running it."
    assert all(d["delta"]["type"] == "input_json_delta" for d in deltas if d["index"] == 1)
    assert json.loads("".join(d["delta"]["partial_json"] for d in deltas if d["index"] == 1)) == {"command": "echo hi"}
    assert [data["index"] for name, data in events if name == "content_block_stop"] == [0, 1]
    end = events[-2][1]
    assert end["delta"]["stop_reason"] == "tool_use" and end["usage"]["output_tokens"] > 0


def test_a_thinking_block_streams_its_signature(anthropic):
    anthropic.script(text("Done.", thinking="Think first."))
    events = _events(_post(anthropic, "/v1/messages", _ask("hi"))[1])
    deltas = [data["delta"] for name, data in events if name == "content_block_delta" and data["index"] == 0]
    assert [d["type"] for d in deltas][-1] == "signature_delta"
    assert "".join(d.get("thinking", "") for d in deltas) == "Think first."


def test_unscripted_requests_get_the_default_reply_counted_and_quoting_the_users_words(anthropic):
    reminder = {"type": "text", "text": "<system-reminder>ignore me</system-reminder>"}
    status, raw = _post(anthropic, "/v1/messages", _ask([{"type": "text", "text": "first words"}, reminder],
                                                        stream=False))
    assert status == 200
    message = json.loads(raw)
    assert message["content"] == [{"type": "text", "text": "Reply 1 to: first words"}]
    assert message["stop_reason"] == "end_turn" and message["usage"]["output_tokens"] > 0
    result = {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "hi"}]}
    body = _ask("x", stream=False) | {"messages": [result]}
    assert json.loads(_post(anthropic, "/v1/messages", body)[1])["content"][0]["text"] == "Reply 2 to: hi"


def test_a_reply_with_a_pattern_waits_for_its_request_and_one_without_for_a_request_offering_tools(anthropic):
    anthropic.script(text("in order"), text("matched", when=r"^Summarize"))
    side = json.loads(_post(anthropic, "/v1/messages", _ask("write a title", tools=False, stream=False))[1])
    assert side["content"][0]["text"] == "Reply 1 to: write a title"  # a side request skips the ordered reply
    summary = json.loads(_post(anthropic, "/v1/messages", _ask("Summarize this", stream=False))[1])
    assert summary["content"][0]["text"] == "matched"  # the pattern wins over the order
    assert json.loads(_post(anthropic, "/v1/messages", _ask("go", stream=False))[1])["content"][0]["text"] == "in order"
    again = json.loads(_post(anthropic, "/v1/messages", _ask("Summarize again", stream=False))[1])
    assert again["content"][0]["text"] == "Reply 4 to: Summarize again"  # each reply is used once
    assert anthropic.pending_replies == 0
    assert [b["messages"][0]["content"] for b in anthropic.bodies()] == [
        "write a title", "Summarize this", "go", "Summarize again"]


def test_token_counts_errors_probes_and_the_record(anthropic):
    status, raw = _post(anthropic, "/v1/messages/count_tokens", {"model": "m", "messages": [{"role": "user",
                                                                                            "content": "a b c"}]})
    assert status == 200 and json.loads(raw)["input_tokens"] > 0
    status, raw = _post(anthropic, "/v1/messages", _ask("hi"), key=None)
    assert status == 401 and json.loads(raw)["error"]["type"] == "authentication_error"
    anthropic.script(error(529, "Overloaded"))
    status, raw = _post(anthropic, "/v1/messages", _ask("hi"))
    assert status == 529 and json.loads(raw) == {"type": "error", "error": {"type": "overloaded_error",
                                                                            "message": "Overloaded"}}
    head = urllib.request.Request(anthropic.base_url + "/", method="HEAD")
    with urllib.request.urlopen(head, timeout=10) as response:
        assert response.status == 200
    assert [(r.method, r.path) for r in anthropic.requests] == [
        ("POST", "/v1/messages/count_tokens"), ("POST", "/v1/messages"), ("POST", "/v1/messages"), ("HEAD", "/")]
    assert anthropic.requests[1].headers.get("x-api-key") is None


def test_a_request_for_structured_output_gets_an_object_of_its_schema(anthropic):
    body = _ask("<session>\nFix the login button on mobile please now\n</session>\n\nWrite the title.", tools=False,
                stream=False)
    body["output_config"] = {"format": {"type": "json_schema", "schema": {
        "type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}}}
    reply = json.loads(_post(anthropic, "/v1/messages", body)[1])
    assert json.loads(reply["content"][0]["text"]) == {"title": "Fix the login button on mobile please"}


# --------------------------------------------------------------------------- Responses


@pytest.fixture
def responses():
    with ResponsesServer() as server:
        yield server


@pytest.fixture
def client(responses: ResponsesServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=responses.base_url, api_key="test-key", max_retries=0, timeout=10)


FUNCTIONS = [{"type": "function", "name": "exec_command", "parameters": {"type": "object"}}]


def test_a_streamed_response_through_the_sdk(responses, client):
    responses.script(text("Hello from the fake."))
    events = list(client.responses.create(model="fake-model", input="hi there", stream=True, tools=FUNCTIONS))
    kinds = [e.type for e in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert "response.output_item.added" in kinds and "response.output_item.done" in kinds
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == "Hello from the fake."
    done = events[-1].response
    assert done.output_text == "Hello from the fake." and done.status == "completed"
    assert done.usage.total_tokens == done.usage.input_tokens + done.usage.output_tokens > 0
    assert [e.sequence_number for e in events] == list(range(len(events)))


def test_a_function_call_streams_its_arguments(responses, client):
    responses.script(tool_call("exec_command", {"cmd": "echo hi"}, when="echo"))
    said = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "run echo hi"}]}]
    events = list(client.responses.create(model="fake-model", input=said, stream=True, tools=FUNCTIONS))
    call = next(e.item for e in events if e.type == "response.output_item.done")
    assert call.type == "function_call" and call.name == "exec_command" and call.call_id.startswith("call_")
    assert json.loads(call.arguments) == {"cmd": "echo hi"}
    pieces = "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta")
    assert pieces == call.arguments
    output = {"type": "function_call_output", "call_id": call.call_id, "output": "hi"}
    reply = client.responses.create(model="fake-model", input=[*said, call.model_dump(), output], tools=FUNCTIONS)
    assert reply.output_text == "Reply 2 to: hi"  # not streamed: one JSON response
    assert responses.bodies()[1]["input"][-1] == output


def test_a_title_request_gets_a_title_of_the_prompt_it_quotes(responses, client):
    schema = {"type": "object", "properties": {"title": {"type": "string", "maxLength": 20}}, "required": ["title"]}
    said = "Generate a concise task title.\n\nUser prompt:\nRename the verbose flag everywhere in the repo"
    reply = client.responses.create(model="fake-model", input=said,
                                    text={"format": {"type": "json_schema", "name": "t", "schema": schema}})
    assert json.loads(reply.output_text) == {"title": "Rename the verbose f"}


def test_responses_errors_and_unknown_paths(responses, client):
    responses.script(error(500, "boom"))
    with pytest.raises(openai.InternalServerError, match="boom"):
        client.responses.create(model="fake-model", input="hi", tools=FUNCTIONS)
    with pytest.raises(openai.NotFoundError):
        client.models.list()
    responses.models_answer = {"object": "list", "data": [{"id": "fake-model", "object": "model", "created": 0,
                                                            "owned_by": "fake"}]}
    assert [m.id for m in client.models.list()] == ["fake-model"]


def test_the_command_line_serves_until_killed():
    script = Path(__file__).with_name("fakeagents.py")
    with subprocess.Popen([sys.executable, str(script), "anthropic"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) as proc:
        try:
            word, port = proc.stdout.readline().split()
            assert word == "port"
            server = AnthropicServer()
            server.base_url = f"http://127.0.0.1:{port}"
            status, raw = _post(server, "/v1/messages", _ask("from the shell", stream=False))
            assert status == 200 and json.loads(raw)["content"][0]["text"] == "Reply 1 to: from the shell"
            assert proc.stderr.readline().split() == ["POST", "/v1/messages", "from", "the", "shell"]
        finally:
            proc.kill()

