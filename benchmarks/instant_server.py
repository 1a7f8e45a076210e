#!/usr/bin/env python
"""An instant chat-completions server for the turn benchmarks, run as its own process.

    python benchmarks/instant_server.py        # prints "port N", serves until stdin closes

It answers at once and reports how long it took, so a benchmark can subtract the model's
time from a turn and keep only gs's own:

- ``POST /v1/chat/completions`` (streamed): reads and parses the body, answers
  ``echo: <last user message, first 40 chars>`` in a few chunks with usage, as the test
  fake does. A ``model`` of ``stream:<chunks>:<chars>`` instead streams a reply of
  ``<chunks>`` chunks of ``<chars>`` characters each, every chunk encoded and written on its
  own as a model server sends them (the streaming benchmark; curl reads the same).
- Its time for each request (from the request's headers read to its last byte written, ms)
  goes into the ``Server-Timing`` header (the part before the body) and into a list that
  ``GET /v1/timings`` returns and empties.

Standard library only: it starts fast and shares nothing with the gs process it measures.
"""

from __future__ import annotations

import itertools
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

_timings: list[float] = []
_lock = threading.Lock()


def _chunk(delta: dict, finish: str | None = None, model: str = "gpt-4o-mini") -> bytes:
    # The shape OpenAI streams (and tests/fakeapi.py sends), so a chunk costs the client the same.
    choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
    payload = {"id": "chatcmpl-instant", "object": "chat.completion.chunk", "created": 1_735_732_800,
               "model": model, "choices": [choice], "usage": None}
    return b"data: " + json.dumps(payload).encode() + b"\n\n"


def _tail(model: str, prompt_tokens: int, completion_tokens: int) -> bytes:
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
             "total_tokens": prompt_tokens + completion_tokens}
    last = {"id": "chatcmpl-instant", "object": "chat.completion.chunk", "created": 1_735_732_800,
            "model": model, "choices": [], "usage": usage}
    return _chunk({}, "stop", model) + b"data: " + json.dumps(last).encode() + b"\n\ndata: [DONE]\n\n"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Each write leaves at once (TCP_NODELAY), as from the servers models run behind (uvicorn,
    # Go's net/http): else a kept connection holds a small write ~40 ms for a delayed ACK.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _send(self, status: int, body: bytes, kind: str, timing: float) -> None:
        self.send_response(status)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Server-Timing", f"answer;dur={(time.perf_counter() - timing) * 1e3:.3f}")
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        t0 = time.perf_counter()
        with _lock:
            out = json.dumps(_timings).encode()
            _timings.clear()
        self._send(200, out, "application/json", t0)

    def do_POST(self) -> None:
        t0 = time.perf_counter()
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
        model = str(body.get("model", ""))
        messages = body.get("messages") or []
        if model.startswith("stream:"):
            _, chunks, chars = model.split(":")
            self._stream(int(chunks), int(chars), t0)
            return
        last = next((m for m in reversed(messages) if m.get("role") == "user"), {})
        text = "echo: " + str(last.get("content", ""))[:40]
        reply = _chunk({"role": "assistant", "content": ""}, model=model) + b"".join(
            _chunk({"content": text[i:i + 4]}, model=model) for i in range(0, len(text), 4)
        ) + _tail(model, len(messages), len(text) // 4 + 1)
        # Content-Length instead of chunked framing: the same bytes to parse for the client.
        self._send(200, reply, "text/event-stream", t0)
        with _lock:
            _timings.append((time.perf_counter() - t0) * 1e3)

    def _stream(self, chunks: int, chars: int, t0: float) -> None:
        """A long reply sent as a model server sends it: each chunk encoded and written on its
        own (chunked framing, one write each), as tests/fakeapi.py does."""
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Server-Timing", f"answer;dur={(time.perf_counter() - t0) * 1e3:.3f}")
        self.end_headers()
        piece = ("abcdefghij" * (chars // 10 + 1))[:chars]
        write = self.wfile.write
        body = itertools.chain([_chunk({"role": "assistant", "content": ""})],
                               (_chunk({"content": piece}) for _ in range(chunks)), [_tail("gpt-4o-mini", 10, chunks)])
        for data in body:
            write(b"%x\r\n%s\r\n" % (len(data), data))
        write(b"0\r\n\r\n")
        with _lock:
            _timings.append((time.perf_counter() - t0) * 1e3)


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    print(f"port {server.server_address[1]}", flush=True)
    sys.stdin.read()  # the benchmark closes our stdin when it is done
    server.shutdown()


if __name__ == "__main__":
    main()
