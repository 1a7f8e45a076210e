"""Fake model servers for the agent CLIs: the Anthropic Messages API and the OpenAI Responses API.

Claude Code and Codex run here without a network: each talks to one of these real HTTP
servers (stdlib ``ThreadingHTTPServer`` on 127.0.0.1, free port, background thread), in the
style of ``fakeapi.FakeChatServer``::

    with AnthropicServer() as server:
        server.script(tool_call("Bash", {"command": "echo hi"}, when="run echo"))
        env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "test-key"}
        ...  # claude -p "please run echo hi"
        assert server.requests[-1].body["messages"][-1]["role"] == "user"

    with ResponsesServer() as server:  # Codex: base_url = server.base_url in a model_providers entry
        ...

Every request is recorded (``server.requests``: method, path, headers, JSON body) and answered.
A model request takes a scripted ``Reply``:

- the first queued reply whose ``when`` (a regex) is found in the request's last user text;
- else, for a request that offers tools (the agent's own loop, not a side request such as a
  title or a quota check), the first queued reply without ``when``;
- else the default, ``Reply N to: <last user text>`` (N counts the model requests answered),
  or, for a request asking for structured output (the CLIs' title requests), an object following
  its schema whose strings are the user's first words.

A reply is used once. The last user text is the user's words where the request holds them:
the last user message's last text block that is not a ``<system-reminder>``, or the text of
the tool result it carries.
"""

from __future__ import annotations

import argparse
import itertools
import json
import re
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from fakeapi import QuietHTTPServer

_ids = itertools.count(1)


def _new_id(prefix: str) -> str:
    return f"{prefix}_fake{next(_ids):06d}"


# --------------------------------------------------------------------------- replies


@dataclass
class Call:
    """A tool call a reply makes: its id, the tool's name and its input (a JSON object)."""

    id: str
    name: str
    input: dict[str, Any]


@dataclass
class Reply:
    """One scripted model reply. Build it with ``text``, ``tool_call`` or ``error``."""

    text: str = ""
    thinking: str = ""
    calls: list[Call] = field(default_factory=list)
    #: A regex searched in the request's last user text; None: the next request offering tools.
    when: str | None = None
    status: int = 200
    error_message: str = ""
    chunk_size: int = 8

    def pieces(self, value: str) -> list[str]:
        """``value`` cut in streamed pieces of ``chunk_size`` characters (one empty piece for "")."""
        size = max(1, self.chunk_size)
        return [value[i : i + size] for i in range(0, len(value), size)] or [""]


def text(content: str, *, when: str | None = None, thinking: str = "") -> Reply:
    """A text reply, after a thinking block when ``thinking`` is given."""
    return Reply(text=content, thinking=thinking, when=when)


def tool_call(name: str, arguments: dict[str, Any], *, content: str = "", when: str | None = None,
              call_id: str | None = None) -> Reply:
    """A reply calling tool ``name`` with ``arguments``, after ``content`` if given.

    Anthropic: a ``tool_use`` block (id ``toolu_...``); Responses: a ``function_call`` item
    (call id ``call_...``) whose ``arguments`` is the JSON string of ``arguments``.
    """
    return Reply(text=content, calls=[Call(call_id or "", name, dict(arguments))], when=when)


def error(status: int, message: str = "The fake server was scripted to fail.", *, when: str | None = None) -> Reply:
    """Answer with HTTP ``status`` and the API's error body."""
    return Reply(status=status, error_message=message, when=when)


def _words(value: Any) -> int:
    return len(json.dumps(value).split()) if value else 0


# --------------------------------------------------------------------------- the common server


@dataclass
class Request:
    """A request as the server saw it."""

    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any  # the JSON body, None without one (or its text, when it was no JSON)


class _AgentServer:
    """What both servers share: the thread, the recorded requests, the script."""

    #: The path prefix the client's base URL carries.
    prefix = ""
    #: The paths that are model requests.
    model_paths: tuple[str, ...] = ()

    def __init__(self, *, model: str = "fake-model") -> None:
        self.model = model
        self.port = 0
        self.base_url = ""
        self.requests: list[Request] = []
        self.answered = 0
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> _AgentServer:
        """Bind a free port on 127.0.0.1 and serve in a daemon thread."""
        handler = type("Handler", (_Handler,), {"fake": self})
        self._httpd = QuietHTTPServer(("127.0.0.1", 0), handler)
        self.port = self._httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}{self.prefix}"
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=type(self).__name__, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def script(self, *replies: Reply) -> None:
        """Queue replies; each is used once, by the request it fits (see the module's docstring)."""
        with self._lock:
            self._queue.extend(replies)

    @property
    def pending_replies(self) -> int:
        """How many scripted replies no request has taken yet."""
        with self._lock:
            return len(self._queue)

    def bodies(self, path: str | None = None) -> list[Any]:
        """The JSON bodies of the model requests (or of those to ``path``), in order."""
        paths = (path,) if path else self.model_paths
        with self._lock:
            return [r.body for r in self.requests if r.path in paths]

    def _record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def _reply_for(self, body: dict) -> tuple[Reply, str]:
        """The reply a model request gets, and the last user text it was chosen by."""
        said = self.last_user_text(body)
        with self._lock:
            self.answered += 1
            chosen = next((r for r in self._queue if r.when is not None and re.search(r.when, said)), None)
            if chosen is None and body.get("tools"):
                chosen = next((r for r in self._queue if r.when is None), None)
            if chosen is not None:
                self._queue.remove(chosen)
                return chosen, said
            schema = self.json_schema(body)
            if schema is not None:
                return text(json.dumps(_filled(schema, said))), said
            return text(f"Reply {self.answered} to: {_one_line(said)}"), said

    def json_schema(self, body: dict) -> dict | None:
        """The JSON schema the reply must follow, if the request asks for structured output."""
        return None

    def last_user_text(self, body: dict) -> str:  # pragma: no cover - each server says
        """The user's words in a request body."""
        raise NotImplementedError

    def error_body(self, status: int, message: str) -> dict:  # pragma: no cover - each server says
        """The API's error body for ``status``."""
        raise NotImplementedError

    # ---- what the handler asks of a server

    def answer_get(self, handler: _Handler, path: str) -> None:
        """Answer a GET (or HEAD): 404 unless a server knows the path."""
        handler.send_error_body(404, f"Unknown path {path}")

    def answer_post(self, handler: _Handler, path: str, body: Any) -> None:  # pragma: no cover
        """Answer a POST."""
        raise NotImplementedError


def _filled(schema: dict, said: str) -> dict:
    """An object following ``schema`` whose strings are the user's first words.

    A title request quotes them: inside ``<session>`` tags (Claude Code), after ``User prompt:`` (Codex).
    """
    quoted = re.search(r"<session>(.*?)</session>|User prompt:(.*)", said, re.S)
    gist = " ".join((next(g for g in quoted.groups() if g is not None) if quoted else said).split()[:7])
    properties = schema.get("properties") or {}

    def value(spec: dict) -> Any:
        kinds = {"boolean": False, "integer": 0, "number": 0, "array": [], "object": {}}
        return kinds.get(spec.get("type"), gist[: spec.get("maxLength") or None])

    return {name: value(properties.get(name) or {}) for name in schema.get("required") or list(properties)}


def _one_line(value: str, limit: int = 200) -> str:
    flat = " ".join(value.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class _Handler(BaseHTTPRequestHandler):
    """Request handler; ``fake`` is bound to the owning server by ``start``."""

    fake: _AgentServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output quiet

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline().strip():  # trailers, then the blank line
                        pass
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _take(self, method: str) -> tuple[str, Any]:
        url = urlsplit(self.path)
        raw = self._read_body() if method == "POST" else b""
        if self.headers.get("Content-Encoding", "").lower() == "gzip":
            import gzip

            raw = gzip.decompress(raw)
        body: Any = None
        if raw:
            try:
                body = json.loads(raw)
            except ValueError:
                body = raw.decode("utf-8", "replace")
        self.fake._record(Request(method, url.path, url.query, dict(self.headers.items()), body))
        return url.path.rstrip("/") or "/", body

    def do_GET(self) -> None:
        path, _ = self._take("GET")
        self.fake.answer_get(self, path)

    def do_HEAD(self) -> None:
        path, _ = self._take("HEAD")
        self.send_response(200 if path == "/" else 404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        path, body = self._take("POST")
        self.fake.answer_post(self, path, body)

    # ---- plumbing

    def send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def send_error_body(self, status: int, message: str) -> None:
        self.send_json(status, self.fake.error_body(status, message))

    def start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def event(self, name: str, payload: dict) -> None:
        data = f"event: {name}\ndata: {json.dumps(payload)}\n\n".encode()
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def _authorized(handler: _Handler) -> bool:
    bearer = handler.headers.get("Authorization", "")
    return bool(handler.headers.get("x-api-key", "").strip() or bearer.removeprefix("Bearer ").strip())


# --------------------------------------------------------------------------- Anthropic Messages


class AnthropicServer(_AgentServer):
    """Fake Anthropic Messages API (``POST /v1/messages``, streamed or not; token counts).

    Attributes:
        base_url: ``http://127.0.0.1:<port>``, the value of ``ANTHROPIC_BASE_URL`` (no ``/v1``).
        requests: every request, model requests and the rest alike, in order.
    """

    model_paths = ("/v1/messages",)

    def error_body(self, status: int, message: str) -> dict:
        """The Anthropic error body for ``status``."""
        kind = {400: "invalid_request_error", 401: "authentication_error", 404: "not_found_error",
                429: "rate_limit_error", 529: "overloaded_error"}.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}

    def last_user_text(self, body: dict) -> str:
        """The last user message's last text that is not a reminder, else its tool result's text."""
        for message in reversed(body.get("messages") or []):
            if message.get("role") != "user":
                continue
            content = message.get("content")
            if isinstance(content, str):
                return content
            blocks = [b for b in content or [] if isinstance(b, dict)]
            said = [b.get("text", "") for b in blocks if b.get("type") == "text"]
            plain = [t for t in said if not t.lstrip().startswith("<system-reminder>")]
            if plain or said:
                return (plain or said)[-1]
            results = [_block_text(b.get("content")) for b in blocks if b.get("type") == "tool_result"]
            if results:
                return results[-1]
        return ""

    def json_schema(self, body: dict) -> dict | None:
        """``output_config.format``'s schema (Claude Code asks for titles so)."""
        form = (body.get("output_config") or {}).get("format") or {}
        return form.get("schema") if form.get("type") == "json_schema" else None

    def answer_get(self, handler: _Handler, path: str) -> None:
        """``/`` answers 200 (a probe); ``/v1/models`` lists the one model."""
        if path == "/":
            handler.send_json(200, {})
        elif path == "/v1/models":
            model = {"type": "model", "id": self.model, "display_name": self.model,
                     "created_at": "2025-01-01T00:00:00Z"}
            handler.send_json(200, {"data": [model], "has_more": False, "first_id": self.model,
                                    "last_id": self.model})
        else:
            super().answer_get(handler, path)

    def answer_post(self, handler: _Handler, path: str, body: Any) -> None:
        """``/v1/messages`` a reply, ``/v1/messages/count_tokens`` a count; else 404."""
        if path not in ("/v1/messages", "/v1/messages/count_tokens"):
            handler.send_error_body(404, f"Unknown path {path}")
        elif not _authorized(handler):
            handler.send_error_body(401, "invalid x-api-key")
        elif not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            handler.send_error_body(400, "messages: field required")
        elif path == "/v1/messages/count_tokens":
            handler.send_json(200, {"input_tokens": _words(body.get("messages")) + _words(body.get("system"))})
        else:
            reply, _ = self._reply_for(body)
            if reply.status != 200:
                handler.send_error_body(reply.status, reply.error_message)
            elif body.get("stream"):
                self._stream(handler, body, reply)
            else:
                handler.send_json(200, self._message(body, reply, self._blocks(reply)))

    @staticmethod
    def _blocks(reply: Reply) -> list[dict]:
        blocks: list[dict] = []
        if reply.thinking:
            blocks.append({"type": "thinking", "thinking": reply.thinking, "signature": "fake-signature"})
        if reply.text or not reply.calls:
            blocks.append({"type": "text", "text": reply.text})
        for call in reply.calls:
            blocks.append({"type": "tool_use", "id": call.id or _new_id("toolu"), "name": call.name,
                           "input": call.input})
        return blocks

    def _message(self, body: dict, reply: Reply, content: list[dict]) -> dict:
        return {
            "id": _new_id("msg"), "type": "message", "role": "assistant", "model": body.get("model") or self.model,
            "content": content, "stop_reason": "tool_use" if reply.calls else "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": _words(body.get("messages")) + _words(body.get("system")),
                      "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                      "output_tokens": _words(content)},
        }

    def _stream(self, handler: _Handler, body: dict, reply: Reply) -> None:
        blocks = self._blocks(reply)
        message = self._message(body, reply, [])
        usage = message["usage"]
        handler.start_stream()
        handler.event("message_start", {"type": "message_start",
                                        "message": {**message, "stop_reason": None,
                                                    "usage": {**usage, "output_tokens": 1}}})
        for index, block in enumerate(blocks):
            kind = block["type"]
            start = {"tool_use": {**block, "input": {}}, "text": {"type": "text", "text": ""},
                     "thinking": {"type": "thinking", "thinking": "", "signature": ""}}[kind]
            handler.event("content_block_start", {"type": "content_block_start", "index": index,
                                                  "content_block": start})
            if index == 0:
                handler.event("ping", {"type": "ping"})
            for delta in self._deltas(reply, block):
                handler.event("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})
            handler.event("content_block_stop", {"type": "content_block_stop", "index": index})
        handler.event("message_delta", {"type": "message_delta",
                                        "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                                        "usage": {"output_tokens": _words(blocks)}})
        handler.event("message_stop", {"type": "message_stop"})
        handler.end_stream()

    @staticmethod
    def _deltas(reply: Reply, block: dict) -> list[dict]:
        if block["type"] == "text":
            return [{"type": "text_delta", "text": p} for p in reply.pieces(block["text"])]
        if block["type"] == "thinking":
            return ([{"type": "thinking_delta", "thinking": p} for p in reply.pieces(block["thinking"])]
                    + [{"type": "signature_delta", "signature": block["signature"]}])
        return [{"type": "input_json_delta", "partial_json": p} for p in reply.pieces(json.dumps(block["input"]))]


def _block_text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(b.get("text", "") for b in content if isinstance(b, dict))
    return content if isinstance(content, str) else ""


# --------------------------------------------------------------------------- OpenAI Responses


class ResponsesServer(_AgentServer):
    """Fake OpenAI Responses API (``POST /v1/responses``, streamed or not).

    Attributes:
        base_url: ``http://127.0.0.1:<port>/v1``, the provider's ``base_url`` in Codex's config.
        requests: every request, model requests and the rest alike, in order.
        models_answer: what ``GET /v1/models`` answers (None: 404, which Codex tolerates).
    """

    prefix = "/v1"
    model_paths = ("/v1/responses",)

    def __init__(self, *, model: str = "fake-model") -> None:
        super().__init__(model=model)
        self.models_answer: Any = None

    def error_body(self, status: int, message: str) -> dict:
        """The OpenAI error body for ``status``."""
        kind = "invalid_request_error" if status < 500 else "server_error"
        return {"error": {"message": message, "type": kind, "param": None, "code": None}}

    def last_user_text(self, body: dict) -> str:
        """The last user message's last text, or the output of a later function call."""
        items = body.get("input")
        if isinstance(items, str):
            return items
        for item in reversed(items or []):
            if not isinstance(item, dict):
                continue
            if item.get("type") == "function_call_output":
                output = item.get("output")
                return output if isinstance(output, str) else _block_text(output)
            if item.get("role") == "user":
                content = item.get("content")
                if isinstance(content, str):
                    return content
                said = [p.get("text", "") for p in content or [] if isinstance(p, dict) and p.get("text")]
                if said:
                    return said[-1]
        return ""

    def json_schema(self, body: dict) -> dict | None:
        """``text.format``'s schema (Codex asks for titles so)."""
        form = (body.get("text") or {}).get("format") or {}
        return form.get("schema") if form.get("type") == "json_schema" else None

    def answer_get(self, handler: _Handler, path: str) -> None:
        """``/v1/models`` answers ``models_answer`` (else 404, as for every other path)."""
        if path == "/v1/models" and self.models_answer is not None:
            handler.send_json(200, self.models_answer)
        else:
            super().answer_get(handler, path)

    def answer_post(self, handler: _Handler, path: str, body: Any) -> None:
        """``/v1/responses`` a reply; else 404."""
        if path != "/v1/responses":
            handler.send_error_body(404, f"Unknown path {path}")
        elif not _authorized(handler):
            handler.send_error_body(401, "You didn't provide an API key.")
        elif not isinstance(body, dict) or "input" not in body:
            handler.send_error_body(400, "Missing required parameter: 'input'.")
        else:
            reply, _ = self._reply_for(body)
            if reply.status != 200:
                handler.send_error_body(reply.status, reply.error_message)
            elif body.get("stream"):
                self._stream(handler, body, reply)
            else:
                handler.send_json(200, self._response(body, self._items(reply), "completed"))

    @staticmethod
    def _items(reply: Reply) -> list[dict]:
        items: list[dict] = []
        if reply.text or not reply.calls:
            part = {"type": "output_text", "text": reply.text, "annotations": []}
            items.append({"id": _new_id("msg"), "type": "message", "status": "completed", "role": "assistant",
                          "content": [part]})
        for call in reply.calls:
            items.append({"id": _new_id("fc"), "type": "function_call", "status": "completed",
                          "call_id": call.id or _new_id("call"), "name": call.name,
                          "arguments": json.dumps(call.input)})
        return items

    def _response(self, body: dict, output: list[dict], status: str, response_id: str | None = None) -> dict:
        used_in, used_out = _words(body.get("input")) + _words(body.get("instructions")), _words(output)
        return {
            "id": response_id or _new_id("resp"), "object": "response", "created_at": int(time.time()),
            "status": status, "model": body.get("model") or self.model, "output": output,
            "parallel_tool_calls": bool(body.get("parallel_tool_calls")),
            "tool_choice": body.get("tool_choice", "auto"),
            "tools": body.get("tools") or [], "error": None, "incomplete_details": None,
            "instructions": body.get("instructions"), "metadata": {}, "temperature": None, "top_p": None,
            "usage": None if status != "completed" else {
                "input_tokens": used_in, "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": used_out, "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": used_in + used_out,
            },
        }

    def _stream(self, handler: _Handler, body: dict, reply: Reply) -> None:
        sequence = itertools.count()

        def send(name: str, **payload: Any) -> None:
            handler.event(name, {"type": name, "sequence_number": next(sequence), **payload})

        items = self._items(reply)
        response_id = _new_id("resp")
        handler.start_stream()
        send("response.created", response=self._response(body, [], "in_progress", response_id))
        send("response.in_progress", response=self._response(body, [], "in_progress", response_id))
        for index, item in enumerate(items):
            if item["type"] == "message":
                part = item["content"][0]
                send("response.output_item.added", output_index=index,
                     item={**item, "status": "in_progress", "content": []})
                where = {"item_id": item["id"], "output_index": index, "content_index": 0}
                send("response.content_part.added", **where, part={**part, "text": ""})
                for piece in reply.pieces(part["text"]):
                    send("response.output_text.delta", **where, delta=piece, logprobs=[])
                send("response.output_text.done", **where, text=part["text"], logprobs=[])
                send("response.content_part.done", **where, part=part)
            else:
                send("response.output_item.added", output_index=index,
                     item={**item, "status": "in_progress", "arguments": ""})
                for piece in reply.pieces(item["arguments"]):
                    send("response.function_call_arguments.delta", item_id=item["id"], output_index=index,
                         delta=piece)
                send("response.function_call_arguments.done", item_id=item["id"], output_index=index,
                     arguments=item["arguments"])
            send("response.output_item.done", output_index=index, item=item)
        send("response.completed", response=self._response(body, items, "completed", response_id))
        handler.end_stream()


# --------------------------------------------------------------------------- manual runs


def main(argv: list[str] | None = None) -> None:
    """Serve until killed: ``python tests/fakeagents.py anthropic|responses`` prints ``port N``.

    Each request's method, path and last user text go to stderr as they come.
    """
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("api", choices=("anthropic", "responses"))
    args = parser.parse_args(argv)
    server = AnthropicServer() if args.api == "anthropic" else ResponsesServer()
    with server:
        print(f"port {server.port}", flush=True)
        seen = 0
        try:
            while True:
                time.sleep(0.2)
                for request in server.requests[seen:]:
                    said = server.last_user_text(request.body) if isinstance(request.body, dict) else ""
                    print(request.method, request.path, _one_line(said, 100), file=sys.stderr, flush=True)
                seen = len(server.requests)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
