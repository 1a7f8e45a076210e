"""A scripted model, and scripted I/O, for in-process tests of the chat loop and the REPL.

``ScriptedProvider`` has what the loop needs of a model (``model`` and ``stream(messages,
tools)``, see ``gitsessions.chat.loop.Provider``) and plays a script instead of calling an
API. Each request pops the next reply, a list of items played in order:
:class:`~gitsessions.provider.client.TextDelta` and
:class:`~gitsessions.provider.client.Completion` are yielded, an exception instance (a
``ProviderError``, ``KeyboardInterrupt`` for Ctrl+C) is raised at that point. With the
script used up it echoes the last user message, like tests/fakeapi.py's server.

The real ``OpenAIProvider`` is tested against the real fake HTTP server
(tests/test_provider.py); this one keeps HTTP out of tests that are about the loop.

:func:`scripted_env` is the REPL's environment over scripted I/O: lines typed in order,
what is written kept in a list.
"""

from __future__ import annotations

import copy
from collections import deque
from collections.abc import Iterable, Iterator
from typing import Any

from gitsessions.cli.repl.environment import ChatEnvironment
from gitsessions.log.events import make_header
from gitsessions.provider.wire import Completion, TextDelta

MODEL = "scripted-model"
USAGE = {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}

Item = TextDelta | Completion | BaseException


def say(text: str, chunk: int = 4, *, model: str = MODEL) -> list[Item]:
    """A reply streaming ``text`` in pieces of ``chunk`` characters, then its completion."""
    pieces: list[Item] = [TextDelta(text[i:i + chunk]) for i in range(0, len(text), chunk)]
    return [*pieces, Completion(content=text, finish_reason="stop", model=model, usage=dict(USAGE))]


def call(*calls: tuple[str, str, str], content: str = "") -> list[Item]:
    """A reply asking for tool calls ``(id, name, arguments)``, optionally after ``content``."""
    items: list[Item] = [TextDelta(content)] if content else []
    tool_calls = [{"id": cid, "name": name, "arguments": args} for cid, name, args in calls]
    return [*items, Completion(content=content, tool_calls=tool_calls, finish_reason="tool_calls",
                               model=MODEL, usage=dict(USAGE))]


def cut(text: str, exc: BaseException, chunk: int = 4) -> list[Item]:
    """A reply that streams ``text`` and then fails with ``exc`` (no completion)."""
    return [*say(text, chunk)[:-1], exc]


class ScriptedProvider:
    """A model that answers from a script; records each request.

    Attributes:
        model: the model name (the loop stores it when a completion names none).
        requests: ``(messages, tools)`` of each request, deep-copied when made.
        settings: the ``model`` and ``options`` each request was given (``{}``: none).
        closed: how many streams were closed (finished, failed or abandoned).
    """

    def __init__(self, *replies: list[Item], model: str = MODEL):
        self.model = model
        self.replies: deque[list[Item]] = deque(replies)
        self.requests: list[tuple[list[dict[str, Any]], list[dict[str, Any]] | None]] = []
        self.settings: list[dict[str, Any]] = []
        self.closed = 0

    def script(self, *replies: list[Item]) -> None:
        """Queue more replies."""
        self.replies.extend(replies)

    def stream(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
               **request: Any) -> Iterator[TextDelta | Completion]:
        """Record the request (its ``model`` and ``options`` in :attr:`settings`); play the next reply."""
        self.requests.append((copy.deepcopy(messages), copy.deepcopy(tools)))
        self.settings.append(copy.deepcopy(request))
        if self.replies:
            reply = self.replies.popleft()
        else:
            last = next((m for m in reversed(messages) if m["role"] == "user"), {"content": ""})
            reply = say(f"echo: {last['content']}")
        return self._play(reply)

    def _play(self, reply: list[Item]) -> Iterator[TextDelta | Completion]:
        try:
            for item in reply:
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            self.closed += 1


def scripted_env(lines: Iterable[str | None], out: list[str] | None = None, **settings: Any) -> ChatEnvironment:
    """The REPL's environment over scripted I/O.

    Args:
        lines: what the user types, one prompt each, in order; then (or at a None) end of input.
        out: where what the chat writes is appended (None: it is dropped).
        settings: the other fields of the environment (``config``, ``toolset``, ``reply``...).

    Returns:
        The environment; a new session's header is made at time 1.
    """
    typed = iter(lines)
    return ChatEnvironment(read_line=lambda _prompt: next(typed, None),
                           write=out.append if out is not None else lambda _text: None,
                           new_header=lambda sid: make_header(sid, created=1), **settings)
