"""One turn of conversation: prompt -> streamed reply -> tool calls -> ... -> saved turn.

The loop talks to two things through small interfaces: a *provider* (``stream(messages,
tools)`` yielding :class:`TextDelta` then one :class:`Completion`) and a *session*
(``append``, ``delta``, ``messages``, ``end_turn``, ``next_turn``). It knows nothing of git
or of the terminal: output goes through the ``on_text`` / ``on_tool`` callbacks.

Event sequence of a turn: ``turn/start``, ``user/message``, then per step
``step/start``, ``assistant/message``, for each tool call ``tool/call`` + ``tool/result``,
``step/end``; finally ``turn/end`` with the reason. A call that needs the user's approval (a
write, a command: see :mod:`gitsessions.chat.tools.toolset`) has its ``tool/permission`` first;
a denied one has no ``tool/call``, only its ``tool/result`` saying so.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..config import DEFAULT_MAX_STEPS
from ..errors import ProviderError
from ..log.calls import ToolCall, ToolResult
from ..log.events import clean_text
from ..provider.wire import Completion, TextDelta

if TYPE_CHECKING:
    from .tools.toolset import Answer, Prepared, Toolset

#: ``permit(call) -> answer``: asks the user whether a prepared call may run (see
#: :meth:`gitsessions.chat.tools.toolset.Toolset.decide`).
Permit = Callable[["Prepared"], "Answer"]


class SessionSink(Protocol):
    """What the loop needs of a session (see :class:`gitsessions.writer.session.Session`)."""

    @property
    def next_turn(self) -> int:
        """The number the next turn gets."""
        ...

    def append(self, type: str, data: dict[str, Any] | None = None) -> Any:
        """Append one event (redacted) to the turn in progress."""
        ...

    def delta(self, text: str) -> None:
        """Journal streamed reply text not yet part of an event."""
        ...

    def messages(self) -> list[dict[str, Any]]:
        """Return the chat-completions messages derived from the log."""
        ...

    def end_turn(self, reason: str, **extra: Any) -> str | None:
        """Close the turn with ``reason`` and save it; return the commit."""
        ...


class Provider(Protocol):
    """What the loop needs of a model (see :class:`gitsessions.provider.client.OpenAIProvider`)."""

    model: str

    def stream(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, *,
               model: str | None = None, options: dict[str, Any] | None = None) -> Iterator[Any]:
        """Yield :class:`TextDelta` items, then one :class:`Completion`."""
        ...


@dataclass(frozen=True)
class TurnResult:
    """How a turn ended.

    Attributes:
        reason: the ``turn/end`` reason (``completed``, ``aborted``, ``error``, ``max-steps``).
        commit: the commit that saved the turn (None if nothing was saved).
        error: the one-line API error when ``reason`` is ``error``.
        text: the reply text of the last step (possibly partial).
        unapproved: the names of the calls not run because they needed approval and there was
            no one to ask (no ``permit``, nothing approved beforehand), in order.
        redacted: a reply was stored other than it streamed: redaction replaced a secret in
            it (what was shown held it; the session does not).
    """

    reason: str
    commit: str | None
    error: str | None = None
    text: str = ""
    unapproved: tuple[str, ...] = ()
    redacted: bool = False


def _ignore(*_args: Any) -> None:
    return None


def run_turn(session: SessionSink, provider: Provider, prompt: str, *,
             max_steps: int = DEFAULT_MAX_STEPS,
             tools: list[dict[str, Any]] | None = None, toolset: Toolset | None = None,
             permit: Permit | None = None,
             model: str | None = None, options: dict[str, Any] | None = None,
             on_text: Callable[[str], None] = _ignore,
             on_tool: Callable[[str, str, str, bool], None] = _ignore) -> TurnResult:
    """Run one turn to its end and save it.

    Ctrl+C (``KeyboardInterrupt``) while the reply streams cancels that reply only: the
    partial text is kept as an interrupted assistant message and the turn is saved with
    reason ``aborted``. Ctrl+C while a command runs stops it, and its result says what it
    had done and what was killed. An API failure saves the turn with reason ``error``.
    Either way the session's derived transcript stays valid for the next request.

    Args:
        session: where events go.
        provider: the model.
        prompt: the user's message.
        max_steps: bound on model requests in this turn.
        tools: tool schemas offered (default: ``toolset``'s; none without one).
        toolset: what runs the calls and which may run unasked (None: no tool; a call the
            model makes anyway is answered "unknown tool").
        permit: asks the user about a call that needs approval (None: no one to ask, such
            a call is denied unless approved beforehand); each decision is a ``tool/permission``.
        model: the model of the requests (None: the provider's); the session's ``session/model``
            or the run's ``-m``, chosen by the caller.
        options: request options (``session/options``; see :mod:`gitsessions.log.request`).
        on_text: called with each piece of reply text as it arrives.
        on_tool: called ``(name, arguments, result, is_error)`` after each tool call ran or
            was denied, with the arguments and result as the session holds them (redacted).

    Returns:
        How the turn ended.
    """
    if tools is None and toolset is not None:
        tools = toolset.schemas
    request: dict[str, Any] = {k: v for k, v in (("model", model), ("options", options)) if v}  # none: defaults
    model = model or provider.model
    session.append("turn/start", {"turn": session.next_turn})
    session.append("user/message", {"content": prompt})
    partial: list[str] = []
    reason, error, last = "max-steps", None, ""
    unapproved: list[str] = []
    redacted = False
    try:
        for step in range(1, max_steps + 1):
            session.append("step/start", {"step": step})
            partial = []
            messages = session.messages()  # the system prompt too: the log's session/system
            completion = Completion()
            stream = provider.stream(messages, tools, **request)
            try:
                for item in stream:
                    if isinstance(item, TextDelta):
                        partial.append(item.text)
                        session.delta(item.text)
                        on_text(item.text)
                    else:
                        completion = item
            finally:
                close = getattr(stream, "close", None)
                if close is not None:
                    close()
            partial, last = [], completion.content
            calls = [ToolCall.of(call) for call in completion.tool_calls]
            reply = session.append("assistant/message", {
                "content": completion.content,
                "tool_calls": [call.data() for call in calls],
                "finish_reason": completion.finish_reason,
                "model": completion.model or model,
                "usage": completion.usage,
                "interrupted": False,
            })
            stored = getattr(reply, "data", {}).get("content", completion.content)
            redacted = redacted or stored != clean_text(completion.content or "") and stored != completion.content
            held = getattr(reply, "data", {}).get("tool_calls")  # as the session holds them: redacted
            for call, shown in zip(calls, [ToolCall.of(c) for c in held] if held else calls, strict=False):
                if _call(session, toolset, permit, call, on_tool, shown.arguments):
                    unapproved.append(call.name)
            session.append("step/end", {"step": step})
            if not calls:
                reason = "completed"
                break
    except KeyboardInterrupt:
        reason = "aborted"
    except ProviderError as exc:
        reason, error = "error", str(exc)
    text = "".join(partial) or last
    if partial:
        session.append("assistant/message", {"content": text, "tool_calls": [],
                                             "finish_reason": None, "model": model,
                                             "interrupted": True})
    extra = {"error": error} if error else {}
    commit = session.end_turn(reason, **extra)
    return TurnResult(reason, commit, error, text, tuple(unapproved), redacted)


def _call(session: SessionSink, toolset: Toolset | None, permit: Permit | None, call: ToolCall,
          on_tool: Callable[[str, str, str, bool], None], shown_arguments: str) -> bool:
    """Run one tool call (asking first when it needs approval) and append its events.

    Returns:
        True when the call needed approval and there was no one to ask (it was not run).
    """
    from .tools.files import ToolInterrupted  # when the model first calls a tool
    from .tools.toolset import DENIED, Toolset

    toolset = toolset or Toolset()
    prepared = toolset.prepare(call)
    result: ToolResult | None = None
    unasked = False
    if prepared.asks and prepared.error is None:
        decision = toolset.decide(prepared, permit)
        session.append("tool/permission", {"id": call.id, "name": call.name, "answer": decision.answer,
                                           "by": decision.by})
        if not decision.allowed:
            result = ToolResult(call.id, call.name, decision.refusal(call.name), True, DENIED)
            unasked = decision.by == "nobody"
    if result is None:
        session.append("tool/call", {"id": call.id, "name": call.name})
        try:
            result = toolset.run(prepared)
        except ToolInterrupted as exc:  # the reply is cancelled, and the model told what the call did
            if exc.result is not None:
                held = session.append("tool/result", exc.result.data())
                on_tool(call.name, shown_arguments, held.data["content"], True)
            raise
    held = session.append("tool/result", result.data())
    on_tool(call.name, shown_arguments, held.data["content"], result.is_error)
    return unasked
