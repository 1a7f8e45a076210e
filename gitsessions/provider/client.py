"""A chat-completions model reached through the ``openai`` SDK's client, streamed.

The request goes through the client (its configuration, auth, retries, timeouts and errors);
the body sent and the stream read are plain JSON (:mod:`.wire`), not the SDK's types, the
stream a socket read at a time and to its end, so that the client's connection serves the
next request (:mod:`.body`), and the reply becomes two plain items the loop understands:
:class:`TextDelta` (reply text as it arrives) and one final :class:`Completion`. Failures
become :class:`~gitsessions.errors.ProviderError`, one line each.
"""

from __future__ import annotations

import email.utils
import math
import re
import time
import urllib.parse
from collections.abc import Iterator
from typing import Any

from ..errors import ProviderError
from . import body
from .wire import Completion, EventTooLarge, NoWholeEvent, Reply, RequestEncoder, TextDelta, decode_chunk, sse_data

__all__ = ["OpenAIProvider"]

#: The way out of a URL that is wrong, named as users set it (the variable or the config key).
_CHECK_URL = "check the URL (OPENAI_BASE_URL, or base_url in config.yaml)"


def _as_interrupt(exc: Exception) -> BaseException:
    """Return the ``KeyboardInterrupt`` that ``exc`` stands for, else ``exc`` itself.

    The SDK builds its pydantic request and chunk types lazily, on the first request; a
    Ctrl+C that lands inside that build comes out as pydantic's ``SchemaError`` ("Error
    building ... serializer: KeyboardInterrupt"), which must still cancel the reply.
    """
    if "KeyboardInterrupt" in str(exc):
        return KeyboardInterrupt()
    return exc


def _one_line(text: object, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _reason(exc: BaseException) -> str:
    """The transport's complaint, short: ``[Errno 111] Connection refused`` -> ``connection refused``."""
    cause = exc.__cause__ or exc
    text = re.sub(r"^\[Errno -?\d+\]\s*", "", _one_line(cause))
    return text[:1].lower() + text[1:] if text else type(cause).__name__


def _seconds(value: float) -> str:
    return "1 second" if value == 1 else f"{value:g} seconds"


def _retry_after(headers: Any) -> float | None:
    """Seconds a 429 asks the client to wait (``Retry-After``: seconds or an HTTP date)."""
    if headers is None:
        return None
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return float(value) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


class OpenAIProvider:
    """Streams chat completions from any OpenAI-compatible endpoint.

    Args:
        model: the model name sent with each request.
        api_key: the key (any non-empty string for servers that take none).
        base_url: the API root (``https://api.openai.com/v1`` when None).
        timeout_s: seconds the server may stay silent (to connect, to start the reply, between
            two pieces of a reply) before the request fails; also the seconds a reply may go
            on arriving without a whole event (bytes trickled in are no progress).
        max_retries: SDK retries for connection errors, timeouts and 429/5xx before the stream
            starts (the SDK waits ``Retry-After`` when the server sends one); a stream cut
            mid-reply is never retried.
        calls_tools: the model can call tools (False: offering them is pointless; the
            embedded SmolLM2 ignores them).
        window: the context window the server runs with, tokens, when the caller knows it
            (it started the server: the embedded model's ``n_ctx``); None: the server is asked.
    """

    def __init__(self, model: str, api_key: str, base_url: str | None = None, *,
                 timeout_s: float = 120.0, max_retries: int = 2, calls_tools: bool = True,
                 window: int | None = None):
        import openai  # slow to import; only commands that talk to a model pay for it

        self.model = model
        self.base_url = base_url
        self.timeout_s = timeout_s
        self.calls_tools = calls_tools
        self._window: list[int | None] = [window] if window else []  # the server's window, once known
        self._openai = openai
        http_client = None
        if base_url and base_url.startswith("http://"):
            # Plain HTTP (a local server, Ollama, the embedded model): no TLS, so do not load
            # the CA certificates (~40 ms of every start).
            http_client = openai.DefaultHttpxClient(verify=False)
        self._encoder = RequestEncoder()
        self._client = openai.OpenAI(api_key=api_key, base_url=base_url, timeout=timeout_s,
                                     max_retries=max_retries, http_client=http_client)

    def prepare(self) -> None:
        """Compute now what the client computes once, at its first request: its platform headers.

        They run ``uname -p`` in a subprocess; a chat calls this in the thread that built the
        client, behind its prompt, so that its first request does not.
        """
        self._client.platform_headers()  # cached by the SDK for the process

    def models(self) -> list[str]:
        """The models the server offers (``GET /models``), sorted.

        Raises:
            ProviderError: the request failed (one line, as for a chat request), or the answer
                is no list of models.
        """
        try:
            return sorted(str(m.id) for m in self._client.models.list())
        except self._openai.APIError as exc:
            raise self._failed(exc, started=False, kept=False) from None
        except self._httpx_errors() as exc:
            raise self._failed(exc, started=False, kept=False) from None
        except (AttributeError, TypeError, KeyError, ValueError):  # the SDK read an answer of another shape
            raise ProviderError(f"the server at {self._where()} answered GET /models with no list of models; "
                                "name the model with /model NAME") from None

    def server_window(self) -> int | None:
        """The context window the server says it runs with, tokens (None: it says nothing).

        llama.cpp (the embedded model, and ``llama-server`` anywhere) tells it at ``/props``
        beside its API root; other servers answer 404 or nothing (llama-cpp-python's, the
        embedded model's: its window is the one it was started with, given). Asked once,
        quickly (2 s, no retry); any failure is "unknown", never an error.
        """
        if not self._window:
            self._window.append(self._ask_window() if self.base_url else None)
        return self._window[0]

    def _ask_window(self) -> int | None:
        assert self.base_url is not None
        root = re.sub(r"/v\d+/?$", "", self.base_url.rstrip("/"))
        try:
            response = self._client.get(root + "/props", cast_to=self._httpx().Response,
                                        options={"timeout": 2.0, "max_retries": 0})
            props = response.json()
        except Exception:  # noqa: BLE001 - a server that does not tell: unknown
            return None
        settings = props.get("default_generation_settings") if isinstance(props, dict) else None
        for where in (settings, (settings or {}).get("params") if isinstance(settings, dict) else None, props):
            n = where.get("n_ctx") if isinstance(where, dict) else None
            if isinstance(n, int) and not isinstance(n, bool) and n > 0:
                return n
        return None

    def stream(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, *,
               model: str | None = None, options: dict[str, Any] | None = None
               ) -> Iterator[TextDelta | Completion]:
        """Send ``messages`` and yield the reply as it streams.

        A reply is complete only when the server said it finished (a ``finish_reason``, or
        the stream's closing ``data: [DONE]``): a stream that ends
        without either was cut, and raises. Text already yielded stays the caller's (the
        loop keeps it as an interrupted message), so a fault mid-reply says it is kept.

        Args:
            messages: a valid chat-completions transcript.
            tools: tool schemas offered to the model (None or empty: no tools).
            model: the model of this request (None: :attr:`model`).
            options: request options sent as they are (``temperature``, ``max_tokens``: see
                :mod:`gitsessions.log.request`).

        Yields:
            :class:`TextDelta` items, then exactly one :class:`Completion`.

        Raises:
            ProviderError: one line saying what happened and what to do: could not connect,
                connection closed before the reply, lost mid-reply (also a stream that ends
                without a finish), no data for ``timeout_s`` seconds, bytes but no whole event
                for ``timeout_s`` seconds, one event over :data:`~.wire.MAX_EVENT_BYTES`, rate limited (429, with
                when to retry), the server failed (5xx), another HTTP status, or a response
                that is not a chat-completions stream.
        """
        openai = self._openai
        fields: dict[str, Any] = {"model": model or self.model, **(options or {}), "stream": True,
                                  "stream_options": {"include_usage": True}}
        if tools:
            fields["tools"] = tools
        try:
            # The client's own request method: its auth, retries, timeouts and error types,
            # without the per-request transform of ``messages`` or a model per chunk.
            response = self._client.post("/chat/completions", cast_to=self._httpx().Response,
                                         content=self._encoder.body(fields, messages), stream=True,
                                         options={"security": {"bearer_auth": True}})
        except openai.APIError as exc:
            raise self._failed(exc, started=False, kept=False) from None
        except self._httpx_errors() as exc:
            raise self._failed(exc, started=False, kept=False) from None
        except Exception as exc:
            raise _as_interrupt(exc) from None
        reply = Reply(fields["model"])
        pieces = body.Body(response)
        try:
            for data in sse_data(pieces, silence_s=self.timeout_s):
                if data.startswith(b"[DONE]"):
                    reply.ended = True
                    # The body's end too, so that the connection serves the next request (the
                    # next tool step, the next turn) instead of being closed.
                    pieces.finish()
                    break
                if text := self._take(data, reply):
                    yield TextDelta(text)
        except self._httpx_errors() as exc:  # from reading the body; the loop's own code raises none
            raise self._failed(exc, started=True, kept=bool(reply.parts)) from None
        except (EventTooLarge, NoWholeEvent) as exc:
            raise self._unreadable(exc, reply) from None
        finally:
            response.close()
        if reply.held:
            reply.parts.append("\ufffd")
            yield TextDelta("\ufffd")
        if reply.done.finish_reason is None and not reply.ended:
            if not reply.chunks:
                raise self._not_a_stream("the response held no chat-completions events", kept=False)
            raise self._lost(kept=bool(reply.parts))  # the body ended cleanly but the reply did not
        yield reply.completion()

    def _take(self, data: bytes, reply: Reply) -> str:
        """Add the chunk of one event's ``data`` to ``reply``; return its reply text.

        Raises:
            ProviderError: the event is no chat-completions chunk, or the server's error event.
        """
        try:
            chunk = decode_chunk(data)
        except ValueError:  # also bytes that are not UTF-8
            detail = f"an event that is not JSON: {_one_line(data[:240].decode('utf-8', 'replace'), 60)!r}"
            raise self._not_a_stream(detail, kept=bool(reply.parts)) from None
        if isinstance(chunk, dict) and chunk.get("error"):
            raise self._stream_error(chunk["error"], kept=bool(reply.parts))
        text = reply.take(chunk)
        if text is None:
            raise self._not_a_stream(f"an event without choices: {_one_line(chunk, 80)}", kept=bool(reply.parts))
        return text

    def _unreadable(self, exc: EventTooLarge | NoWholeEvent, reply: Reply) -> ProviderError:
        """A body that arrives but is no stream of events: one event without end, or a trickle."""
        kept = bool(reply.parts)
        if isinstance(exc, EventTooLarge):
            return self._kept(f"the server at {self._where()} sent one stream event over {exc.limit >> 20} MiB: "
                              "that is no chat-completions stream", f"; {_CHECK_URL}", kept)
        return self._kept(f"{self._where()} kept sending bytes but no whole stream event for "
                          f"{_seconds(exc.seconds)}{' mid-reply' if reply.chunks else ''}",
                          "; try again, or raise timeout in config.yaml", kept)

    def _stream_error(self, error: Any, *, kept: bool) -> ProviderError:
        """The error event a server sends inside a stream (``{"error": {"message": ...}}``)."""
        message = error.get("message") if isinstance(error, dict) else None
        said = message if isinstance(message, str) and message else "An error occurred during streaming"
        return self._kept(f"the model API at {self._where()} failed mid-reply: {_one_line(said)}", "", kept)

    def _failed(self, exc: BaseException, *, started: bool, kept: bool) -> ProviderError:
        """Translate an SDK or transport failure into the one-line :class:`ProviderError`.

        Args:
            exc: what the SDK (or httpx under it) raised.
            started: the response had begun (its status line arrived) before the failure.
            kept: reply text had already been yielded.
        """
        openai, where = self._openai, self._where()
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            message = exc.message
            body = exc.body.get("error", exc.body) if isinstance(exc.body, dict) else None
            if isinstance(body, dict) and body.get("message"):
                message = str(body["message"])
            said = f"{status}: {_one_line(message)}"
            if message.startswith("Error code: "):  # the SDK's words for a body that said nothing: HTTP's
                said = f"{status} ({_status_phrase(status)})"
            if status == 429:
                wait = _retry_after(exc.response.headers)
                when = ("wait a little and try again" if wait is None
                        else f"retry in {_seconds(max(1, math.ceil(wait)))}")
                return ProviderError(f"rate limited by {where} ({said}); {when}", status)
            if status >= 500:
                return ProviderError(f"the server at {where} failed ({said}); try again later", status)
            return ProviderError(f"the model API answered {said}{self._not_found(status, message)}", status)
        httpx = self._httpx()
        # The SDK wraps what httpx raised before the reply; mid-reply it comes as it is.
        cause = exc if isinstance(exc, self._httpx_errors()) else exc.__cause__ or exc
        timeout = isinstance(exc, openai.APITimeoutError) or isinstance(cause, httpx.TimeoutException)
        if isinstance(cause, (httpx.ConnectError, httpx.ConnectTimeout)):
            within = f" within {_seconds(self.timeout_s)}" if timeout else f" ({_reason(exc)})"
            return ProviderError(f"could not connect to {where}{within}; is the server running? {_CHECK_URL}")
        if timeout:
            mid = " mid-reply" if started else ""
            return self._kept(f"no data from {where} for {_seconds(self.timeout_s)}{mid}",
                              "; try again, or raise timeout in config.yaml", kept)
        if isinstance(exc, openai.APIConnectionError) or isinstance(exc, self._httpx_errors()):
            if not started:
                return ProviderError(f"the connection to {where} was closed before any reply "
                                     f"({_reason(exc)}); try again")
            return self._lost(kept=kept)
        # An error event inside the stream, or another API failure.
        return self._kept(f"the model API at {where} failed{' mid-reply' if started else ''}: {_one_line(exc)}",
                          "", kept)

    def _not_found(self, status: int, message: str) -> str:
        """The way out of a 404 that is the URL's fault: the API's own words say why otherwise.

        A 404 naming the model is about the model (Ollama's "model ... not found"); any other
        is most often a base URL without the API's version (``http://localhost:11434``,
        not ``.../v1``), the path OpenAI-compatible servers serve the API under.
        """
        if status != 404 or (self.model and self.model in message):
            return ""
        hint = f"; {_CHECK_URL}: OpenAI-compatible servers usually want one ending in /v1"
        if self.base_url and not re.search(r"/v\d", urllib.parse.urlsplit(self.base_url).path):
            hint += f", such as {self.base_url.rstrip('/')}/v1"
        return hint

    def _lost(self, *, kept: bool) -> ProviderError:
        # The cause (a reset, a truncated body, a clean end without a finish) changes nothing
        # for the user, so the message is one for the kind.
        return self._kept(f"the connection to {self._where()} was lost mid-reply", "; try again", kept)

    def _not_a_stream(self, detail: str, *, kept: bool) -> ProviderError:
        return self._kept(f"{self._where()} sent something that is not a chat-completions stream ({detail})",
                          f"; {_CHECK_URL}", kept)

    @staticmethod
    def _kept(head: str, tail: str, kept: bool) -> ProviderError:
        """``head``, that the partial reply is kept (when ``kept``: the loop keeps it), ``tail``."""
        return ProviderError(head + ("; the partial reply is kept" if kept else "") + tail, unkept=head + tail)

    def _where(self) -> str:
        return self.base_url or "api.openai.com"

    @staticmethod
    def _httpx() -> Any:
        # openai 3.x is built on httpx2; older releases on httpx.
        try:
            import httpx2 as httpx
        except ImportError:
            import httpx  # type: ignore[no-redef]

        return httpx

    def _httpx_errors(self) -> tuple[type[BaseException], ...]:
        httpx = self._httpx()
        return (httpx.HTTPError, httpx.StreamError)


def _status_phrase(status: int) -> str:
    """HTTP's name for ``status`` (``Not Found``), lower-cased; ``an error`` for a code HTTP does not name."""
    import http

    try:
        return http.HTTPStatus(status).phrase.lower()
    except ValueError:
        return "an error"
