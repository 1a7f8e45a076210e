"""A scriptable fake of the OpenAI chat-completions HTTP API for tests.

``FakeChatServer`` is a real HTTP server (stdlib ``ThreadingHTTPServer`` on
127.0.0.1, free port, background thread) that the real ``openai`` SDK can talk
to.  Point a client at ``server.base_url`` with any API key::

    with FakeChatServer() as server:
        server.script(text("Hello there"), tool_calls(("read_file", '{"path": "a"}')))
        client = openai.OpenAI(base_url=server.base_url, api_key="test-key")
        ...
        assert server.requests[0]["messages"][-1]["content"] == "hi"

Each chat request pops the next scripted ``Reply``; with an empty queue the
server echoes the last user message (``"echo: <content>"``).

Streaming responses use chunked transfer encoding, so a reply built with
``drop()`` (connection closed before the terminating chunk) is an incomplete
body for httpx, which raises instead of treating it as a normal end of stream.

Faults of the connection itself, for the fault-injection tests: ``cut()`` (the
body ends cleanly mid-reply: no finish chunk, no ``[DONE]``), ``reset()`` (a TCP
reset, before the reply or mid-stream), ``stall()`` (silence mid-stream),
``garbage()`` (a line that is not a chat-completions event), ``endless()`` (one event
that never ends, sent as fast as the client reads), ``trickle()`` (the bytes of one event
that never ends, one at a time, each sooner than a read timeout) and ``error(...,
headers={"Retry-After": "7"})``.
"""

from __future__ import annotations

import itertools
import json
import socket
import struct
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ROLES = ("system", "user", "assistant", "tool")
MODELS = ("gpt-4o-mini", "fake-model")

_call_ids = itertools.count(1)
_completion_ids = itertools.count(1)


# --------------------------------------------------------------------------- replies


@dataclass
class Reply:
    """One scripted response. Build it with ``text``, ``tool_calls``, ``error`` or ``drop``."""

    content: str = ""
    calls: list[tuple[str, str, str]] = field(default_factory=list)  # (id, name, arguments)
    chunk_size: int = 4
    delay: float = 0.0
    finish_reason: str | None = "stop"
    status: int = 200
    error_message: str = ""
    error_type: str = ""
    error_code: str | None = None
    drop: bool = False
    #: A connection fault: ``cut``, ``reset``, ``reset-before-reply``, ``stall``, ``garbage``,
    #: ``endless``, ``trickle`` (each byte an HTTP chunk) or ``trickle-in-chunk`` (one chunk).
    fault: str | None = None
    stall_s: float = 0.0
    #: Seconds between two bytes of a trickle.
    every_s: float = 0.0
    garbage: str = ""
    headers: dict[str, str] = field(default_factory=dict)
    #: The usage the reply reports (None: counted from the request, see ``_usage``).
    usage: dict[str, Any] | None = None
    #: False: no usage at all, ``usage: null`` (llama-cpp-python's server, the embedded model's).
    reports_usage: bool = True

    def content_pieces(self) -> list[str]:
        """The content split into streamed pieces of ``chunk_size`` characters."""
        size = max(1, self.chunk_size)
        return [self.content[i : i + size] for i in range(0, len(self.content), size)]

    def deltas(self) -> list[dict[str, Any]]:
        """The ``delta`` objects to stream, in order (the final finish chunk excluded)."""
        deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}]
        deltas += [{"content": piece} for piece in self.content_pieces()]
        for index, (call_id, name, arguments) in enumerate(self.calls):
            head = {
                "index": index,
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": ""},
            }
            deltas.append({"tool_calls": [head]})
            for i in range(0, len(arguments), 8):
                fragment = {"index": index, "function": {"arguments": arguments[i : i + 8]}}
                deltas.append({"tool_calls": [fragment]})
        return deltas

    def message(self) -> dict[str, Any]:
        """The complete assistant message, as a non-streaming response carries it."""
        message: dict[str, Any] = {
            "role": "assistant",
            "content": self.content if (self.content or not self.calls) else None,
        }
        if self.calls:
            message["tool_calls"] = [
                {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
                for cid, name, args in self.calls
            ]
        return message


def text(
    content: str, *, chunk_size: int = 4, delay: float = 0.0, finish_reason: str | None = "stop",
    usage: dict[str, Any] | None = None, reports_usage: bool = True,
) -> Reply:
    """Stream ``content`` in pieces of ``chunk_size`` characters, ``delay`` seconds apart; ``usage`` reported.

    ``reports_usage=False``: the reply says ``usage: null`` (as llama-cpp-python's server does).
    """
    return Reply(content=content, chunk_size=chunk_size, delay=delay, finish_reason=finish_reason, usage=usage,
                 reports_usage=reports_usage)


def tool_calls(*calls: tuple[str, str, str] | tuple[str, str], content: str = "") -> Reply:
    """Stream one or more (parallel) tool calls, optionally preceded by ``content``.

    Each call is ``(name, arguments_json)`` or ``(id, name, arguments_json)``.
    Omitted ids are ``call_<n>`` with ``n`` from a process-wide counter, so they
    are unique across replies the way real ids are.
    """
    full = []
    for call in calls:
        if len(call) == 2:
            full.append((f"call_{next(_call_ids)}", call[0], call[1]))
        elif len(call) == 3:
            full.append(tuple(call))
        else:
            raise ValueError(f"a tool call is (name, args) or (id, name, args), got {call!r}")
    return Reply(content=content, calls=full, finish_reason="tool_calls")


def error(
    status: int,
    message: str = "The fake API was scripted to fail.",
    *,
    type: str = "invalid_request_error",  # mirrors the OpenAI field name
    code: str | None = None,
    headers: dict[str, str] | None = None,
) -> Reply:
    """Answer with HTTP ``status`` and an OpenAI error body ``{"error": {...}}``.

    ``headers`` are sent with it, e.g. ``{"Retry-After": "7"}`` on a 429.
    """
    return Reply(status=status, error_message=message, error_type=type, error_code=code,
                 headers=dict(headers or {}))


def drop(after: str = "") -> Reply:
    """Stream ``after`` as content, then close the connection without finishing the stream."""
    return Reply(content=after, drop=True, finish_reason=None)


def cut(after: str = "") -> Reply:
    """Stream ``after``, then end the body cleanly: no finish chunk, no ``data: [DONE]``.

    The response is delimited by closing the connection (no chunked framing), so the
    transport sees a normal end of body: only the missing finish tells the reply is cut,
    as when a proxy or an overloaded server hangs up mid-reply.
    """
    return Reply(content=after, fault="cut", finish_reason=None)


def reset(after: str | None = None) -> Reply:
    """Reset the TCP connection (RST): before any byte of the reply when ``after`` is None,
    else after streaming ``after``."""
    if after is None:
        return Reply(fault="reset-before-reply", finish_reason=None)
    return Reply(content=after, fault="reset", finish_reason=None)


def stall(after: str = "", seconds: float = 30.0) -> Reply:
    """Stream ``after``, then send nothing for ``seconds`` (or until the server stops),
    then hang up."""
    return Reply(content=after, fault="stall", stall_s=seconds, finish_reason=None)


def garbage(line: str = "data: {not json", after: str = "") -> Reply:
    """Stream ``after``, then one SSE event made of ``line`` (not a chat-completions chunk),
    then finish normally."""
    return Reply(content=after, fault="garbage", garbage=line)


def endless(after: str = "") -> Reply:
    """Stream ``after``, then one event whose data line never ends: 64 KiB of ``x`` after another,
    as fast as the client reads, until it hangs up (or the server stops)."""
    return Reply(content=after, fault="endless", finish_reason=None)


def trickle(after: str = "", every_s: float = 0.1, *, in_one_chunk: bool = False) -> Reply:
    """Stream ``after``, then the bytes of one event that never ends, one each ``every_s`` seconds.

    Each byte is an HTTP chunk of its own, or (``in_one_chunk``) they are the bytes of one
    announced chunk (64 KiB) that never completes, until the client hangs up.
    """
    return Reply(content=after, fault="trickle-in-chunk" if in_one_chunk else "trickle", every_s=every_s,
                 finish_reason=None)


# --------------------------------------------------------------------------- validation


def validate_messages(messages: Any) -> str | None:
    """Check a chat transcript the way the OpenAI API does; return the problem or ``None``.

    Rejected: an empty or non-list ``messages``; a non-object message; a role
    outside system/user/assistant/tool; content that is not a string, list or
    None; null content anywhere except an assistant message with tool calls;
    assistant ``tool_calls`` not answered by exactly one ``role: tool`` message
    each (by ``tool_call_id``) before the next non-tool message or the end; a
    tool message that answers no pending call.
    """
    if not isinstance(messages, list) or not messages:
        return "'messages' must be a non-empty array."
    pending: list[str] = []
    for i, msg in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(msg, dict):
            return f"Invalid type for '{where}': expected an object."
        role = msg.get("role")
        if role not in ROLES:
            return f"Invalid value for '{where}.role': {role!r} is not one of {list(ROLES)}."
        content = msg.get("content")
        if content is not None and not isinstance(content, (str, list)):
            return (
                f"Invalid type for '{where}.content': expected a string, array or null, "
                f"got {type(content).__name__}."
            )
        if content is None and not (role == "assistant" and msg.get("tool_calls")):
            return f"Invalid value for '{where}.content': expected a string, got null."
        if role == "tool":
            call_id = msg.get("tool_call_id")
            if call_id not in pending:
                return (
                    f"Invalid parameter: '{where}' with role 'tool' (tool_call_id {call_id!r}) "
                    "must be a response to a preceding message with 'tool_calls'."
                )
            pending.remove(call_id)
            continue
        if pending:
            return _unanswered(pending, before=where)
        if role == "assistant" and msg.get("tool_calls"):
            calls = msg["tool_calls"]
            if not isinstance(calls, list) or not all(
                isinstance(c, dict) and isinstance(c.get("id"), str) for c in calls
            ):
                return f"Invalid value for '{where}.tool_calls': each call needs a string 'id'."
            pending = [c["id"] for c in calls]
            if len(set(pending)) != len(pending):
                return f"Invalid value for '{where}.tool_calls': duplicate tool call ids."
    if pending:
        return _unanswered(pending, before="the end of 'messages'")
    return None


def _unanswered(pending: list[str], before: str) -> str:
    return (
        "An assistant message with 'tool_calls' must be followed by tool messages responding "
        f"to each 'tool_call_id' (before {before}). The following tool_call_ids did not have "
        f"response messages: {', '.join(pending)}"
    )


# --------------------------------------------------------------------------- server


class FakeChatServer:
    """Fake OpenAI chat-completions server; usable as a context manager.

    Attributes:
        base_url: ``http://127.0.0.1:<port>/v1`` once started.
        requests: every JSON body POSTed to ``/v1/chat/completions``, in order,
            including rejected ones (bad auth, invalid transcript).
        connections: TCP connections accepted (a client that keeps its connection alive
            sends several requests on one).
        props: what ``GET /props`` answers, as llama.cpp's server does (None: 404, as others do).
        models_answer: what ``GET /v1/models`` answers instead of the list of :data:`MODELS` (None: that list).
    """

    def __init__(self) -> None:
        self.base_url = ""
        self.requests: list[dict] = []
        self.connections = 0
        self.props: dict | None = None
        self.models_answer: object | None = None
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._stopping = threading.Event()  # wakes stalled streams on stop()

    def start(self) -> FakeChatServer:
        """Bind a free port on 127.0.0.1 and serve in a daemon thread."""
        handler = type("Handler", (_Handler,), {"fake": self})
        self._httpd = QuietHTTPServer(("127.0.0.1", 0), handler)
        # A client gone between the poll and accept() (a gs killed as it connects) would leave a
        # blocking accept() waiting forever, and stop() with it: a non-blocking one returns.
        self._httpd.socket.setblocking(False)
        host, port = self._httpd.server_address[:2]
        self.base_url = f"http://{host}:{port}/v1"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="FakeChatServer",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port (in-flight streams are abandoned)."""
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeChatServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def script(self, *replies: Reply) -> None:
        """Queue replies; each accepted chat request consumes the next one."""
        with self._lock:
            self._queue.extend(replies)

    def reset(self) -> None:
        """Forget queued replies and recorded requests."""
        with self._lock:
            self._queue.clear()
            self.requests.clear()

    @property
    def pending_replies(self) -> int:
        """How many scripted replies have not been consumed yet."""
        with self._lock:
            return len(self._queue)

    def _record(self, body: dict) -> None:
        with self._lock:
            self.requests.append(body)

    def _next_reply(self, messages: list[dict]) -> Reply:
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        last_user = next((m for m in reversed(messages) if m.get("role") == "user"), {})
        return text("echo: " + _plain_text(last_user.get("content")))


def _plain_text(content: Any) -> str:
    """The text of a message ``content`` (a string, or a list of content parts)."""
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return content or ""


def _usage(messages: list[dict], reply: Reply) -> dict[str, Any]:
    if reply.usage is not None:
        return reply.usage
    prompt = sum(len(_plain_text(m.get("content")).split()) + 4 for m in messages)
    completion = len(reply.content_pieces()) + 8 * len(reply.calls) + 1
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


class QuietHTTPServer(ThreadingHTTPServer):
    """Threaded server that doesn't print tracebacks when a client hangs up."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    """Request handler; ``fake`` is bound to the owning FakeChatServer by ``start``."""

    fake: FakeChatServer
    protocol_version = "HTTP/1.1"
    _chunked = True  # False while streaming a body delimited by closing the connection
    # Each write leaves at once (TCP_NODELAY), as from the servers models run behind (uvicorn,
    # Go's net/http): else a kept connection holds a small write ~40 ms for a delayed ACK.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep test output quiet

    def setup(self) -> None:
        super().setup()  # once per connection: its requests are then handled in turn
        with self.fake._lock:
            self.fake.connections += 1

    # ---- plumbing

    def _send_json(self, status: int, payload: dict, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_error(self, status: int, message: str, type_: str, code: str | None = None,
                    headers: dict[str, str] | None = None) -> None:
        error = {"message": message, "type": type_, "param": None, "code": code}
        self._send_json(status, {"error": error}, headers)

    def _reset(self) -> None:
        """Close the connection with a TCP reset (SO_LINGER 0) instead of a FIN."""
        self.wfile.flush()
        self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.connection.close()
        self.close_connection = True

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _send_event(self, payload: dict | str) -> None:
        data = payload if isinstance(payload, str) else json.dumps(payload)
        self._write_event(f"data: {data}\n\n".encode())

    def _write_event(self, data: bytes) -> None:
        if self._chunked:
            self._write_chunk(data)
        else:  # a body delimited by closing the connection
            self.wfile.write(data)
            self.wfile.flush()

    def _never_ending_event(self, reply: Reply) -> None:
        """An event that never ends (see ``endless``, ``trickle``), until the client hangs up or the server stops."""
        self.close_connection = True
        if reply.fault == "endless":
            self._write_chunk(b"data: ")
            block = b"x" * 65536
            while not self.fake._stopping.is_set():
                self._write_chunk(block)
            return
        if reply.fault == "trickle-in-chunk":
            self.wfile.write(b"%x\r\n" % 65536)  # a chunk announced, its bytes trickled
        for byte in itertools.cycle(b'data: {"choices": '):
            if self.fake._stopping.wait(reply.every_s):
                return
            if reply.fault == "trickle":
                self._write_chunk(bytes([byte]))
            else:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()

    # ---- routes

    def do_GET(self) -> None:
        if self.path.rstrip("/") == "/props" and self.fake.props is not None:
            self._send_json(200, self.fake.props)  # llama.cpp's server settings (n_ctx: its window)
            return
        if self.path.rstrip("/") != "/v1/models":
            self._send_error(404, f"Unknown path {self.path}", "invalid_request_error")
            return
        if self.fake.models_answer is not None:  # a server that answers in a shape of its own
            self._send_json(200, self.fake.models_answer)
            return
        data = [{"id": m, "object": "model", "created": 0, "owned_by": "fakeapi"} for m in MODELS]
        self._send_json(200, {"object": "list", "data": data})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._send_error(404, f"Unknown path {self.path}", "invalid_request_error")
            return
        try:
            body = json.loads(raw)
            if not isinstance(body, dict):
                raise ValueError("not an object")
        except ValueError as exc:
            self._send_error(
                400, f"We could not parse the JSON body: {exc}", "invalid_request_error"
            )
            return
        self.fake._record(body)

        auth = self.headers.get("Authorization", "")
        if not auth.startswith("Bearer ") or not auth[len("Bearer ") :].strip():
            self._send_error(
                401, "You didn't provide an API key.", "invalid_request_error", "invalid_api_key"
            )
            return
        problem = validate_messages(body.get("messages"))
        if problem:
            self._send_error(400, problem, "invalid_request_error")
            return

        reply = self.fake._next_reply(body["messages"])
        if reply.fault == "reset-before-reply":
            self._reset()
        elif reply.status != 200:
            self._send_error(reply.status, reply.error_message, reply.error_type, reply.error_code,
                             reply.headers)
        elif body.get("stream"):
            self._stream(body, reply)
        else:
            self._complete(body, reply)

    def _complete(self, body: dict, reply: Reply) -> None:
        if reply.drop:  # hang up without answering at all
            self.close_connection = True
            return
        self._send_json(
            200,
            {
                "id": f"chatcmpl-fake{next(_completion_ids)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", ""),
                "choices": [
                    {
                        "index": 0,
                        "message": reply.message(),
                        "logprobs": None,
                        "finish_reason": reply.finish_reason,
                    }
                ],
                "usage": _usage(body["messages"], reply) if reply.reports_usage else None,
            },
        )

    def _stream(self, body: dict, reply: Reply) -> None:
        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        base = {
            "id": f"chatcmpl-fake{next(_completion_ids)}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body.get("model", ""),
        }
        if include_usage:
            base["usage"] = None  # as OpenAI does on every chunk but the last

        def chunk(delta: dict, finish_reason: str | None = None) -> dict:
            choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            return {**base, "choices": [choice]}

        self._chunked = reply.fault != "cut"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        if self._chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:
            self.send_header("Connection", "close")
        self.end_headers()
        try:
            for i, delta in enumerate(reply.deltas()):
                if i > 1 and reply.delay:
                    time.sleep(reply.delay)
                self._send_event(chunk(delta))
            if reply.drop or reply.fault == "cut":
                # drop: no terminating zero-length chunk, the client sees a truncated body.
                # cut: the body ends at the close, the client sees a clean end of stream.
                self.close_connection = True
                return
            if reply.fault == "reset":
                self._reset()
                return
            if reply.fault == "stall":
                self.fake._stopping.wait(reply.stall_s)
                self.close_connection = True
                return
            if reply.fault in ("endless", "trickle", "trickle-in-chunk"):
                self._never_ending_event(reply)
                return
            if reply.fault == "garbage":
                self._write_event(reply.garbage.encode() + b"\n\n")
            self._send_event(chunk({}, reply.finish_reason))
            if include_usage and reply.reports_usage:
                self._send_event({**base, "choices": [], "usage": _usage(body["messages"], reply)})
            self._send_event("[DONE]")
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the client went away mid-stream
