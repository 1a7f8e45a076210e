"""Choosing the model: a configured provider, else the embedded local model."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..config import DEFAULT_MODEL, Config
from ..errors import NoModelConfigured
from ..later import Later

if TYPE_CHECKING:
    # imported by the build (in the background for a chat): its wire and body modules are
    # no part of what a chat does before its prompt
    from .client import OpenAIProvider


class BackgroundProvider:
    """A provider whose client (the ``openai`` SDK, ~0.5 s to import) is built in a background thread.

    ``gs chat`` shows its prompt first and builds the client while the user types
    (:meth:`start`); the first request waits for it. Whatever the build raised (an
    ``ImportError``, say) is raised there, in the caller's thread, as if the client had been
    built in place; a Ctrl+C while it waits interrupts the wait.

    Args:
        model: the model name (known at once: the chat's banner shows it).
        build: makes the real provider; runs once, in the background thread or, when
            :meth:`start` was never called, at the first request.
    """

    def __init__(self, model: str, build: Callable[[], OpenAIProvider]):
        self.model = model
        self._built = Later(build, name="gs-model-client")

    def start(self, then: Callable[[], object] = lambda: None) -> None:
        """Start building the client in a daemon thread (a no-op when it was started already).

        Args:
            then: called in that thread when the build has ended, however it ended.
        """
        self._built.start(then)

    def provider(self) -> OpenAIProvider:
        """The real provider: built here, or waited for when the background build was started.

        Raises:
            BaseException: what building it raised (again on the next call, which tries anew).
        """
        return self._built.result()

    calls_tools = True  # a configured provider's model is taken to call tools

    def stream(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
               **request: Any) -> Iterator[Any]:
        """Stream as :meth:`OpenAIProvider.stream` does, once the provider is built."""
        yield from self.provider().stream(messages, tools, **request)

    def models(self) -> list[str]:
        """The models the server offers (:meth:`OpenAIProvider.models`)."""
        return self.provider().models()

    def server_window(self) -> int | None:
        """The server's context window (:meth:`OpenAIProvider.server_window`); None while the client is not built.

        The chat's footer asks after every reply, also one cancelled while the client was
        still being built: it must not wait for the build.
        """
        built = self._built.made()
        return built.server_window() if built is not None else None


@contextmanager
def connect(config: Config, *, model: str | None = None,
            notify: Callable[[str], None] = lambda _m: None,
            background: bool = False) -> Iterator[OpenAIProvider | BackgroundProvider]:
    """Yield a provider for ``config``; stop the embedded model (if started) on exit.

    With an API key or base URL configured, that provider is used (a base URL without a key,
    such as Ollama's, gets a placeholder key). Otherwise, when the ``local`` extra is
    installed, llama.cpp's server is started on 127.0.0.1 with SmolLM2-135M-Instruct.
    The configured ``timeout`` and ``max_retries`` apply to a configured provider; the
    embedded model keeps the provider's defaults and is never retried (it runs here).

    Args:
        config: merged settings.
        model: overrides the configured model.
        notify: called with a one-line status message (e.g. "starting the embedded model").
        background: a configured provider comes as a :class:`BackgroundProvider` (its
            client is built when the caller starts it, or at the first request).

    Raises:
        NoModelConfigured: no provider configured and no local extra installed.
        ProviderError: the embedded model failed to start.
    """
    if config.has_provider:
        name = model or config.model or DEFAULT_MODEL

        def build() -> OpenAIProvider:
            from .client import OpenAIProvider

            return OpenAIProvider(name, config.api_key or "none", config.base_url,
                                  timeout_s=config.timeout, max_retries=config.max_retries)

        def build_behind() -> OpenAIProvider:  # in its thread: what the first request would compute too
            provider = build()
            provider.prepare()
            return provider

        yield BackgroundProvider(name, build_behind) if background else build()
        return
    from . import local
    from .client import OpenAIProvider

    if not local.local_available():
        raise NoModelConfigured()
    notify("no API key configured: starting the embedded model (SmolLM2-135M-Instruct)...")
    with local.LocalModelServer() as server:
        yield OpenAIProvider(model or server.model, server.api_key, server.base_url, max_retries=0,
                             calls_tools=False,  # SmolLM2-135M does not call tools
                             window=server.n_ctx)  # its server has no /props: the window it was started with
