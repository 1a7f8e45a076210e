"""Choosing the model: a configured provider, else the embedded local model."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from ..config import DEFAULT_MODEL, Config
from ..errors import NoModelConfigured
from .provider import OpenAIProvider


@contextmanager
def connect(config: Config, *, model: str | None = None,
            notify: Callable[[str], None] = lambda _m: None) -> Iterator[OpenAIProvider]:
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

    Raises:
        NoModelConfigured: no provider configured and no local extra installed.
        ProviderError: the embedded model failed to start.
    """
    if config.has_provider:
        yield OpenAIProvider(model or config.model or DEFAULT_MODEL, config.api_key or "none",
                             config.base_url, timeout_s=config.timeout, max_retries=config.max_retries)
        return
    from . import local

    if not local.local_available():
        raise NoModelConfigured()
    notify("no API key configured: starting the embedded model (SmolLM2-135M-Instruct)...")
    with local.LocalModelServer() as server:
        yield OpenAIProvider(model or server.model, "local", server.base_url, max_retries=0)
