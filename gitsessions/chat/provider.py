"""A chat-completions model reached through the ``openai`` SDK, streamed.

The provider turns the SDK's stream of chunks into two plain items the loop understands:
:class:`TextDelta` (reply text as it arrives) and one final :class:`Completion`. API
failures become :class:`~gitsessions.errors.ProviderError` with a one-line message.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..errors import ProviderError


@dataclass(frozen=True)
class TextDelta:
    """A piece of reply text, in arrival order."""

    text: str


@dataclass
class Completion:
    """The assembled reply of one request.

    Attributes:
        content: the whole reply text.
        tool_calls: ``[{"id", "name", "arguments"}]`` in the model's order.
        finish_reason: the API's ``finish_reason`` (``stop``, ``tool_calls``, ``length``...).
        model: the model that answered, as the API names it.
        usage: the API's usage object (``prompt_tokens``, ``completion_tokens``,
            ``total_tokens``, ...) when the stream reported it.
    """

    content: str = ""
    tool_calls: list[dict[str, str]] = field(default_factory=list)
    finish_reason: str | None = None
    model: str | None = None
    usage: dict[str, Any] | None = None


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


class OpenAIProvider:
    """Streams chat completions from any OpenAI-compatible endpoint.

    Args:
        model: the model name sent with each request.
        api_key: the key (any non-empty string for servers that take none).
        base_url: the API root (``https://api.openai.com/v1`` when None).
        timeout_s: per-request timeout, seconds.
        max_retries: SDK retries for connection errors and 429/5xx before the stream starts.
    """

    def __init__(self, model: str, api_key: str, base_url: str | None = None, *,
                 timeout_s: float = 120.0, max_retries: int = 2):
        import openai  # slow to import; only commands that talk to a model pay for it

        self.model = model
        self.base_url = base_url
        self._openai = openai
        http_client = None
        if base_url and base_url.startswith("http://"):
            # Plain HTTP (a local server, Ollama, the embedded model): no TLS, so do not load
            # the CA certificates (~40 ms of every start).
            http_client = openai.DefaultHttpxClient(verify=False)
        self._client = openai.OpenAI(api_key=api_key, base_url=base_url, timeout=timeout_s,
                                     max_retries=max_retries, http_client=http_client)

    def stream(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
               ) -> Iterator[TextDelta | Completion]:
        """Send ``messages`` and yield the reply as it streams.

        Args:
            messages: a valid chat-completions transcript.
            tools: tool schemas offered to the model (None or empty: no tools).

        Yields:
            :class:`TextDelta` items, then exactly one :class:`Completion` (only for a reply
            that finished: a ``finish_reason`` arrived).

        Raises:
            ProviderError: bad key, 4xx/5xx, connection refused or lost mid-stream, or a
                stream that ended without a finish (cut: text already yielded is the
                caller's to keep).
        """
        openai = self._openai
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages, "stream": True,
                                  "stream_options": {"include_usage": True}}
        if tools:
            kwargs["tools"] = tools
        done = Completion(model=self.model)
        calls: dict[int, dict[str, str]] = {}
        parts: list[str] = []
        try:
            stream = self._client.chat.completions.create(**kwargs)
            with stream:
                for chunk in stream:
                    if getattr(chunk, "model", None):
                        done.model = chunk.model
                    if getattr(chunk, "usage", None) is not None:
                        done.usage = chunk.usage.model_dump(exclude_none=True)
                    for choice in chunk.choices or []:
                        delta = choice.delta
                        if delta is not None and delta.content:
                            parts.append(delta.content)
                            yield TextDelta(delta.content)
                        for tc in (delta.tool_calls or []) if delta is not None else []:
                            slot = calls.setdefault(tc.index if tc.index is not None else len(calls),
                                                    {"id": "", "name": "", "arguments": ""})
                            if tc.id:
                                slot["id"] = tc.id
                            if tc.function is not None:
                                if tc.function.name:
                                    slot["name"] += tc.function.name
                                if tc.function.arguments:
                                    slot["arguments"] += tc.function.arguments
                        if choice.finish_reason:
                            done.finish_reason = choice.finish_reason
        except openai.APIStatusError as exc:
            message = exc.message
            body = exc.body.get("error", exc.body) if isinstance(exc.body, dict) else None
            if isinstance(body, dict) and body.get("message"):
                message = str(body["message"])
            raise ProviderError(f"the model API answered {exc.status_code}: {_one_line(message)}",
                                exc.status_code) from None
        except openai.APITimeoutError:
            raise ProviderError(f"the model API at {self._where()} did not answer in time") from None
        except openai.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            raise ProviderError(f"lost the connection to {self._where()}: {_one_line(cause)}") from None
        except openai.APIError as exc:
            raise ProviderError(f"the model API failed: {_one_line(exc)}") from None
        except self._httpx_errors() as exc:
            raise ProviderError(f"lost the connection to {self._where()}: {_one_line(exc)}") from None
        if done.finish_reason is None:
            # A reply is complete only when the server said how it finished (design.md
            # "Faults"): a body that ends without one was cut, even when it ended cleanly.
            kept = "; the partial reply is kept" if parts else ""
            raise ProviderError(f"the connection to {self._where()} was lost mid-reply{kept}; try again")
        done.content = "".join(parts)
        for i, index in enumerate(sorted(calls)):
            call = calls[index]
            call["id"] = call["id"] or f"call_{i}"
            done.tool_calls.append(call)
        yield done

    def _where(self) -> str:
        return self.base_url or "api.openai.com"

    @staticmethod
    def _httpx_errors() -> tuple[type[BaseException], ...]:
        # openai 3.x is built on httpx2; older releases on httpx.
        try:
            import httpx2 as httpx
        except ImportError:
            import httpx  # type: ignore[no-redef]

        return (httpx.HTTPError, httpx.StreamError)
