"""``OpenAIProvider`` in-process against the real fake HTTP server (tests/fakeapi.py),
through the real ``openai`` SDK: what a request carries, how the stream becomes
``TextDelta`` items and one ``Completion``, and how every failure becomes one line."""

from __future__ import annotations

import json
import socket

import pytest
from fakeapi import FakeChatServer, drop, error, text, tool_calls

from gitsessions.chat.tools import TOOL_SCHEMAS
from gitsessions.errors import ProviderError
from gitsessions.provider.client import OpenAIProvider
from gitsessions.provider.wire import Completion, TextDelta

USER = [{"role": "user", "content": "hi"}]


@pytest.fixture
def provider(fake_api: FakeChatServer):
    """A provider on the fake server, without SDK retries (each failure is one request)."""
    return OpenAIProvider("gpt-4o-mini", "test-key", fake_api.base_url, timeout_s=30, max_retries=0)


def play(stream) -> tuple[list[str], list[Completion], ProviderError | None]:
    """Drain ``stream``: the text pieces, the completions, and the error that ended it."""
    pieces, done = [], []
    try:
        for item in stream:
            if isinstance(item, TextDelta):
                pieces.append(item.text)
            else:
                done.append(item)
    except ProviderError as exc:
        return pieces, done, exc
    return pieces, done, None


def test_text_streams_as_deltas_then_one_completion(fake_api, provider):
    fake_api.script(text("Hello, streaming world!", chunk_size=5))
    pieces, [done], failure = play(provider.stream(USER))
    assert failure is None
    assert pieces == ["Hello", ", str", "eamin", "g wor", "ld!"]
    assert done.content == "Hello, streaming world!"
    assert (done.finish_reason, done.model, done.tool_calls) == ("stop", "gpt-4o-mini", [])
    assert done.usage["total_tokens"] == done.usage["prompt_tokens"] + done.usage["completion_tokens"] > 0
    [request] = fake_api.requests
    assert request["model"] == "gpt-4o-mini" and request["messages"] == USER
    assert request["stream"] is True and request["stream_options"] == {"include_usage": True}
    assert "tools" not in request  # no tools offered: the key is left out, not sent empty


def test_tools_are_offered_and_parallel_calls_assemble(fake_api, provider):
    args = '{"timezone": "Europe/Paris", "padding": "' + "x" * 40 + '"}'  # streamed in 8-char fragments
    fake_api.script(tool_calls(("call_a", "get_current_time", "{}"), ("call_b", "get_current_time", args),
                               content="Let me look."))
    pieces, [done], failure = play(provider.stream(USER, TOOL_SCHEMAS))
    assert failure is None
    assert "".join(pieces) == "Let me look." == done.content
    assert done.finish_reason == "tool_calls"
    assert done.tool_calls == [{"id": "call_a", "name": "get_current_time", "arguments": "{}"},
                               {"id": "call_b", "name": "get_current_time", "arguments": args}]
    assert fake_api.requests[0]["tools"] == TOOL_SCHEMAS


def test_a_refused_key_is_one_line_with_the_status(fake_api, provider):
    fake_api.script(error(401, "Incorrect API key provided:\n  sk-...abc.  See the docs."))
    pieces, done, failure = play(provider.stream(USER))
    assert (pieces, done) == ([], [])
    assert str(failure) == "the model API answered 401: Incorrect API key provided: sk-...abc. See the docs."
    assert failure.status == 401


def test_a_long_error_message_is_clipped(fake_api, provider):
    fake_api.script(error(400, "word " * 200))
    _pieces, _done, failure = play(provider.stream(USER))
    assert failure.status == 400
    message = str(failure)
    assert message.startswith("the model API answered 400: word word")
    assert message.endswith("…") and len(message) < 400 and "\n" not in message


def test_a_server_error_is_not_retried_without_retries(fake_api, provider):
    fake_api.script(error(503, "overloaded"), text("never sent"))
    _pieces, _done, failure = play(provider.stream(USER))
    assert str(failure) == f"the server at {fake_api.base_url} failed (503: overloaded); try again later"
    assert failure.status == 503
    assert len(fake_api.requests) == 1 and fake_api.pending_replies == 1


def test_a_stream_cut_mid_reply_yields_the_text_then_fails(fake_api, provider):
    fake_api.script(drop("partial answer"))
    pieces, done, failure = play(provider.stream(USER))
    assert "".join(pieces) == "partial answer" and done == []
    assert str(failure) == (f"the connection to {fake_api.base_url} was lost mid-reply; "
                            "the partial reply is kept; try again")
    assert failure.status is None


def test_requests_one_after_another_share_one_connection(fake_api, provider):
    """Each reply's body is read to its end (after ``data: [DONE]``), so the SDK's pool keeps
    the connection for the next request: no new TCP connection (TLS handshake) per request."""
    fake_api.script(text("one"), tool_calls(("get_current_time", "{}")), text("three"))
    for _ in range(3):
        _pieces, [_done], failure = play(provider.stream(USER))
        assert failure is None
    assert len(fake_api.requests) == 3 and fake_api.connections == 1


def test_after_a_stream_cut_mid_reply_the_next_request_connects_anew(fake_api, provider):
    fake_api.script(drop("partial answer"), text("whole answer"))
    pieces, done, failure = play(provider.stream(USER))
    assert "".join(pieces) == "partial answer" and done == [] and "lost mid-reply" in str(failure)
    _pieces, [done], failure = play(provider.stream(USER))
    assert failure is None and done.content == "whole answer"
    assert fake_api.connections == 2  # the cut connection is not used again


def test_a_chat_with_a_tool_step_and_a_cut_reply_keeps_its_connections(gs, git, fake_api):
    """Through gs chat: a turn with a tool step (two model requests) and the next turn share
    one connection; a reply cut mid-stream is saved as interrupted, and only its connection
    is replaced."""
    fake_api.script(tool_calls(("get_current_time", "{}")), text("It is noon."), text("Refs are refs."),
                    drop("Branches a"), text("Branches are refs."))
    r = gs("chat", "work", input="what time is it?\nrefs?\nbranches?\nbranches, again?\n")
    assert "It is noon." in r.out and "Branches are refs." in r.out, r.out + r.err
    assert len(fake_api.requests) == 5
    assert fake_api.connections == 2  # four requests on one; the cut one ends it, the last opens another
    messages = [e["data"] for e in map(json.loads, git("show", "work:session.jsonl").splitlines()[1:])
                if e["type"] == "assistant/message"]
    assert [(m["content"], m["interrupted"]) for m in messages][-2:] == [("Branches a", True),
                                                                         ("Branches are refs.", False)]


def test_a_refused_connection_names_the_server():
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    provider = OpenAIProvider("m", "k", url, timeout_s=10, max_retries=0)
    pieces, done, failure = play(provider.stream(USER))
    assert (pieces, done) == ([], [])
    assert str(failure) == (f"could not connect to {url} (connection refused); is the server running? "
                            "check the URL (OPENAI_BASE_URL, or base_url in config.yaml)")


_WANT_V1 = ("; check the URL (OPENAI_BASE_URL, or base_url in config.yaml): OpenAI-compatible servers "
            "usually want one ending in /v1")


def test_a_404_for_a_base_url_without_v1_says_to_add_it(fake_api):
    root = fake_api.base_url.removesuffix("/v1")
    provider = OpenAIProvider("gpt-4o-mini", "test-key", root, max_retries=0)
    _pieces, _done, failure = play(provider.stream(USER))
    assert str(failure) == f"the model API answered 404: Unknown path /chat/completions{_WANT_V1}, such as {root}/v1"
    assert failure.status == 404


def test_a_404_not_found_at_a_v1_url_says_to_check_it_and_one_naming_the_model_does_not(fake_api, provider):
    fake_api.script(error(404, "Not Found"), error(404, "The model `gpt-4o-mini` does not exist."))
    _pieces, _done, failure = play(provider.stream(USER))
    assert str(failure) == f"the model API answered 404: Not Found{_WANT_V1}"
    _pieces, _done, failure = play(provider.stream(USER))
    assert str(failure) == "the model API answered 404: The model `gpt-4o-mini` does not exist."  # its own words


def test_a_404_with_no_body_says_not_found_once_and_to_check_the_url():
    """It said "answered 404: Error code: 404"; and with no model named, no hint at all."""
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    class Bare(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *_args):
            pass

    server = HTTPServer(("127.0.0.1", 0), Bare)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/v1"
        for model in ("m", ""):
            _pieces, _done, failure = play(OpenAIProvider(model, "k", url, max_retries=0).stream(USER))
            assert str(failure) == f"the model API answered 404 (not found){_WANT_V1}", model
    finally:
        server.shutdown()
        server.server_close()


def test_the_answering_model_is_reported(fake_api):
    provider = OpenAIProvider("fake-model", "test-key", fake_api.base_url, max_retries=0)
    _pieces, [done], _failure = play(provider.stream(USER))
    assert done.model == "fake-model" and done.content == "echo: hi"
    assert fake_api.requests[0]["model"] == "fake-model"


def test_a_ctrl_c_wrapped_by_the_sdks_lazy_type_building_still_cancels():
    """CI saw pydantic turn a Ctrl+C during the first request's type building into
    'Error building `literal` serializer: KeyboardInterrupt' (exit 70 instead of a cancel)."""
    import pydantic_core

    from gitsessions.provider.client import _as_interrupt

    wrapped = pydantic_core.SchemaError("Error building `literal` serializer:\n  KeyboardInterrupt: ")
    assert isinstance(_as_interrupt(wrapped), KeyboardInterrupt)
    other = ValueError("something else")
    assert _as_interrupt(other) is other
