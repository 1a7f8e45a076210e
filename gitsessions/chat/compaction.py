"""Compaction: the history so far summarized by the model, kept as a ``compaction/summary`` event.

``/compact [instructions]`` and the automatic compaction (before a turn whose request would
pass a share of the model's context window, config ``compact_at``) ask the model for a summary
of what it sees now and append it as one event naming the range it covers: ``through``, the
seq of the last event it stands for. The derived transcript then sends the summary plus what
follows (:mod:`gitsessions.log.transcript`); nothing in the log is removed, so ``gs show``,
``gs search``, exports and a fork from before the compaction still see every message.

A compaction that fails (an API error, a cut stream, a reply with no summary, Ctrl+C) appends
nothing: the session is as it was. Like the loop, this knows nothing of git or the terminal:
it returns what to tell the user.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import NothingToSave, ProviderError
from ..log.events import Event
from ..log.transcript import SUMMARY_LEAD, derived

if TYPE_CHECKING:
    from ..config import Config
    from ..provider.wire import Completion
    from ..writer.session import Session
    from .loop import Provider

#: What the model is asked for (the user's instructions, if any, follow it).
PROMPT = (
    "Write a summary of our conversation so far. It will replace the conversation in what you "
    "see from now on, so keep everything needed to go on without it: what the user wants and "
    "asked for, decisions made and why, facts and results established (names, numbers, file "
    "paths, code, commands and what they returned), what is done, what is still open, and what "
    "comes next. Write it as notes for yourself, not as a reply to the user."
)
#: Bytes of UTF-8 text per token, for a request not yet counted by the server (a rule of thumb:
#: ~4 for English text; it counts more tokens for other scripts, which take more bytes).
BYTES_PER_TOKEN = 4
#: Tokens a message costs beside its text (its role and the chat template's markers).
MESSAGE_TOKENS = 4


@dataclass(frozen=True)
class Compacted:
    """A compaction saved.

    Attributes:
        commit: the commit holding the ``compaction/summary`` event.
        through: the seq of the last event the summary stands for.
        turns: the first and last turn it covers (the model saw them; ``(0, 0)``: none).
        messages: how many messages (the system prompt aside) it replaces.
        summary: its text, as stored (redacted).
    """

    commit: str
    through: int
    turns: tuple[int, int]
    messages: int
    summary: str

    def line(self) -> str:
        """What the user is told: ``compacted turns 1-7 (24 messages) into a summary; ...``."""
        from ..text import plural

        first, last = self.turns
        turns = f"turn {first}" if first == last else f"turns {first}-{last}"
        return (f"compacted {turns} ({plural(self.messages, 'message')}) into a summary of "
                f"~{plural(tokens_of_text(self.summary), 'token')}; the log keeps every message (gs show)")


def tokens_of_text(text: str) -> int:
    """Tokens ``text`` takes, estimated (:data:`BYTES_PER_TOKEN`), rounded up."""
    return -(-len(text.encode("utf-8", "replace")) // BYTES_PER_TOKEN)


def tokens_of(messages: Sequence[dict[str, Any]]) -> int:
    """Tokens ``messages`` take in a request, estimated: their text and tool calls, plus :data:`MESSAGE_TOKENS` each."""
    total = 0
    for m in messages:
        content = m.get("content")
        total += MESSAGE_TOKENS + tokens_of_text(content if isinstance(content, str) else json.dumps(content))
        if m.get("tool_calls"):
            total += tokens_of_text(json.dumps(m["tool_calls"], ensure_ascii=False))
    return total


def request_tokens(events: Sequence[Event], prompt: str = "") -> int:
    """Tokens the next request would hold, ``prompt`` sent after the session's messages.

    What the server counted, where it can be known: the last reply's usage (its request's
    ``prompt_tokens`` plus its ``completion_tokens``) when nothing since changed what is sent
    but for what came after it (a prompt, tool results), which is estimated, as is ``prompt``.
    Without such a reply (none yet, no usage recorded, or a summary, undo or system prompt
    since), the whole request is estimated (:func:`tokens_of`).

    Args:
        events: the session's log.
        prompt: the text the next turn sends (``""``: none).

    Returns:
        The count, in tokens.
    """
    asked = tokens_of([{"role": "user", "content": prompt}]) if prompt else 0
    since: list[dict[str, Any]] = []  # the messages after the last reply
    for ev in reversed(events):
        if ev.type == "assistant/message":
            usage = ev.data.get("usage")
            counted = [usage.get(k) for k in ("prompt_tokens", "completion_tokens")] if isinstance(usage, dict) else []
            numbers = [n for n in counted if isinstance(n, int) and not isinstance(n, bool)]
            if len(numbers) == 2:
                return sum(numbers) + tokens_of(since) + asked
            break
        if ev.type in ("user/message", "tool/result"):
            since.append({"role": "user", "content": str(ev.data.get("content", ""))})
        elif ev.type in ("compaction/summary", "session/undo", "session/system"):
            break
    return tokens_of(derived(events).messages()) + asked


def compact(session: Session, provider: Provider, instructions: str = "", *, model: str | None = None,
            auto: bool = False, on_ask: Callable[[], None] = lambda: None) -> Compacted:
    """Ask the model for a summary of the session so far and save it as a ``compaction/summary``.

    The request is what the model sees now (the system prompt too) and then :data:`PROMPT`
    (with ``instructions``), without tools. The event holds the summary, the range it covers
    (``through``), the model, the request's usage, the instructions and whether it was
    automatic; it is committed at once, outside a turn.

    Args:
        session: the open session, between turns.
        provider: the model to ask (the chat's).
        instructions: what the user wants the summary to keep or focus on (``""``: nothing).
        model: the model the request names (the session's ``session/model`` or the run's
            ``-m``; None: the provider's).
        auto: the compaction was automatic (the window was filling), not asked for.
        on_ask: called when the request goes, once there is something to compact (a face
            says that the model is asked).

    Returns:
        What was saved.

    Raises:
        NothingToSave: there is nothing to compact (no message, or only a summary), or a
            turn is open.
        ProviderError: the request failed, or the reply was cut or held no summary (nothing
            was saved; the message does not say so: the caller does, once).
        KeyboardInterrupt: Ctrl+C while the summary streamed (nothing was saved).
    """
    if session.in_turn:
        raise NothingToSave("a turn is still open: compact between turns")
    events = session.events
    log = derived(events)
    seen = [m for m in log.messages() if m["role"] != "system"]
    if not seen or (len(seen) == 1 and str(seen[0].get("content", "")).startswith(SUMMARY_LEAD)):
        raise NothingToSave("nothing to compact: the model sees no messages beyond a summary yet")
    through = events[-1].seq
    live = sorted({t for t in log.turns if t and t not in log.undone})
    instructions = session.redactor.text(instructions)  # text the model is sent enters the session's way: redacted
    ask = PROMPT + (f"\n\nAlso: {instructions.strip()}" if instructions.strip() else "")
    on_ask()
    completion = _ask(provider, [*log.messages(), {"role": "user", "content": ask}], model)
    data: dict[str, Any] = {"summary": completion.content, "through": through,
                            "model": completion.model or model or provider.model, "usage": completion.usage}
    if instructions.strip():
        data["instructions"] = instructions.strip()
    if auto:
        data["auto"] = True
    commit = session.compacted(data)
    summary = str(session.events[-1].data.get("summary", ""))
    return Compacted(commit, through, (live[0], live[-1]) if live else (0, 0), len(seen), summary)


def _ask(provider: Provider, messages: list[dict[str, Any]], model: str | None) -> Completion:
    """Stream one request to its end; return its completion, which must hold a whole summary.

    No request options are sent: a ``max_tokens`` set for replies would cut the summary.
    """
    from ..provider.wire import Completion

    completion = Completion()  # none at all: no summary
    request: dict[str, Any] = {"model": model} if model else {}  # as the loop names one: only when set
    stream = provider.stream(messages, None, **request)
    try:
        for item in stream:
            if isinstance(item, Completion):
                completion = item
    except ProviderError as exc:  # no partial summary is kept, whatever the provider says of a reply
        raise ProviderError(exc.unkept, exc.status) from None
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()
    # The callers say that nothing was compacted.
    if completion.finish_reason == "length":
        raise ProviderError("the summary was cut at the model's length limit")
    if not completion.content.strip() or completion.tool_calls:
        raise ProviderError("the model wrote no summary (try /compact again)")
    return completion


@dataclass(frozen=True)
class AutoCompact:
    """The automatic compaction: before a turn whose request would pass ``share`` of the window.

    Attributes:
        share: the share of the model's context window a request may fill (config
            ``compact_at``, default 0.8).
    """

    share: float

    def before_turn(self, session: Session, provider: Provider, prompt: str, window: int | None, *,
                    model: str | None = None) -> str | None:
        """Compact the session first when sending ``prompt`` would pass the share of the window.

        Args:
            session: the open session, between turns.
            provider: the model the turn goes to.
            prompt: the turn's prompt.
            window: the model's context window, tokens (None: unknown, and then nothing is
                compacted automatically: ``/compact`` still is; see :func:`gitsessions.log.usage.context_window`).
            model: the model the turn's requests name (None: the provider's).

        Returns:
            The one line to tell the user (what was compacted, or why it was not and that the
            request goes as it is), or None when the request is within the share.
        """
        if not window:
            return None
        used = request_tokens(session.events, prompt)
        if used <= self.share * window:
            return None
        name = model or provider.model
        why = f"the request would hold ~{used:,} tokens, {used / window:.0%} of {name}'s {window:,}"
        try:
            done = compact(session, provider, model=model, auto=True)
        except NothingToSave:
            return f"{why}; nothing is left to compact"
        except ProviderError as exc:
            return f"{why}; compacting it failed ({exc}); it goes as it is"
        except KeyboardInterrupt:
            return f"{why}; compaction cancelled, it goes as it is"
        return f"{why}: {done.line()}"


def auto_compaction(config: Config) -> AutoCompact | None:
    """The automatic compaction config asks for (None: ``compact_at: false``)."""
    return None if config.compact_at is None else AutoCompact(config.compact_at)
