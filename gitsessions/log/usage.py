"""Tokens spent and the context window: what ``/usage``, the chat's footer and ``gs log`` say.

Usage is recorded on every ``assistant/message`` as the API reported it (``prompt_tokens``,
``completion_tokens``, ``prompt_tokens_details.cached_tokens``); this module adds it up. The
context window of a model comes from the config (``models: {NAME: {context: N, price:
{...}}}``, read by :mod:`gitsessions.config`) or from the server when it tells (llama.cpp's
``/props``); when neither does, it is unknown and said to be (never guessed silently). Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..config import Config, ModelSettings, Price
from ..text import elide
from .turns import last_turn_start, turns_of

if TYPE_CHECKING:
    from .events import Event


def context_window(config: Config, model: str, server: int | None = None) -> int | None:
    """The context window of ``model``, tokens: the config's, else what the server said.

    Args:
        config: the settings (``models.NAME.context``).
        model: the model name as requests send it.
        server: the window the server reported for it (llama.cpp's ``/props`` ``n_ctx``; None: it did not).

    Returns:
        The window, or None when neither knows it (say so; never guess).
    """
    configured = config.models.get(model)
    if configured is not None and configured.context is not None:
        return configured.context
    return server if isinstance(server, int) and server > 0 else None


@dataclass(frozen=True)
class Tokens:
    """Tokens of one or more requests, as the server counted them.

    Attributes:
        prompt: prompt tokens (``cached`` among them).
        completion: completion tokens.
        cached: prompt tokens the server had cached.
        requests: how many requests reported usage.
    """

    prompt: int = 0
    completion: int = 0
    cached: int = 0
    requests: int = 0

    @property
    def total(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt + self.completion

    def __add__(self, other: Tokens) -> Tokens:
        """The tokens of both."""
        return Tokens(self.prompt + other.prompt, self.completion + other.completion,
                      self.cached + other.cached, self.requests + other.requests)

    @classmethod
    def of(cls, usage: Any) -> Tokens:
        """The tokens of one API ``usage`` object (anything else: none)."""
        if not isinstance(usage, Mapping):
            return cls()
        details = usage.get("prompt_tokens_details")
        cached = details.get("cached_tokens") if isinstance(details, Mapping) else None
        prompt, completion = _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
        return cls(prompt, completion, _count(cached), 1 if prompt or completion else 0)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


#: The events that hold a request's ``usage``: a reply, and the summary a compaction asked for.
_PAID = ("assistant/message", "compaction/summary")


def tokens_by_turn(events: Sequence[Event]) -> dict[int, Tokens]:
    """The tokens of each turn's requests, by turn number (those of :func:`tokens_of`, shared out).

    A compaction's request, made between turns, counts in the turn before it (0: before any).
    """
    out: dict[int, Tokens] = {}
    for ev, turn in zip(events, turns_of(events), strict=True):
        if ev.type in _PAID and ev.data.get("usage"):
            out[turn] = out.get(turn, Tokens()) + Tokens.of(ev.data["usage"])
    return out


def tokens_of(events: Sequence[Event]) -> Tokens:
    """The tokens of the requests whose replies are among ``events`` (a compaction's summary is one).

    The one count of what a session spent: the footer's, ``/usage``'s and a commit's ``Tokens:``.
    """
    return sum((Tokens.of(ev.data.get("usage")) for ev in events if ev.type in _PAID), Tokens())


def context_used(events: Sequence[Event]) -> int | None:
    """Tokens of the context at the last reply: its prompt plus its completion (None: no usage yet).

    What the next request sends begins with that (plus the new prompt), so it is the share of
    the window taken; after a compaction or an undo the next reply's figure says the new size.
    """
    for ev in reversed(events):
        if ev.type == "assistant/message":
            tokens = Tokens.of(ev.data.get("usage"))
            if tokens.requests:
                return tokens.total
    return None


def cost(tokens: Tokens, price: Price) -> float:
    """What ``tokens`` cost at ``price``, US dollars (cached prompt tokens at the cached price)."""
    cached_price = price.input if price.cached is None else price.cached
    return ((tokens.prompt - tokens.cached) * price.input + tokens.cached * cached_price
            + tokens.completion * price.output) / 1_000_000


def _n(value: int) -> str:
    return f"{value:,}"


def unreported(events: Sequence[Event]) -> int:
    """How many replies among ``events`` came without usage: their server did not report it.

    llama-cpp-python's server (the embedded model's) answers ``usage: null``; a reply cut short
    (Ctrl+C) never got to its usage, and is not counted.
    """
    return sum(1 for ev in events if ev.type in _PAID and not ev.data.get("interrupted")
               and not Tokens.of(ev.data.get("usage")).requests)


#: What is said instead of a count of 0 when the server counts nothing.
NOT_REPORTED = "usage not reported by this server"


def _replies(n: int) -> str:
    return f"{n} repl{'y' if n == 1 else 'ies'}"


def _compacted_since_counted(events: Sequence[Event]) -> bool:
    """A compaction came after the last reply whose usage counted the context (:func:`context_used`)."""
    for ev in reversed(events):
        if ev.type == "compaction/summary":
            return True
        if ev.type == "assistant/message" and Tokens.of(ev.data.get("usage")).requests:
            return False
    return False


def _share(used: int | None, window: int | None, events: Sequence[Event] = ()) -> str:
    """``context 12% of 128,000``; an unknown window or usage said as such, a count from before a compaction too."""
    if used is None:
        if unreported(events):
            return f"context: unknown, {NOT_REPORTED}" + (f" (window {_n(window)})" if window else "")
        return "context: no usage reported yet"
    if window is None:
        share = f"context {_n(used)} tokens (window unknown: set models.NAME.context in config.yaml)"
    else:
        share = f"context {round(100 * used / window)}% of {_n(window)}"
    if _compacted_since_counted(events):  # what the server counted last is what was sent before it
        share += " before the compaction (the next reply counts what is sent now)"
    return share


def footer(model: str, events: Sequence[Event], window: int | None, width: int | None = None) -> str:
    """The chat's one-line footer after a reply: ``model · context 12% of 128,000 · 3,456 tokens this session``.

    When no reply reported usage (the embedded model's server): ``model · window 2,048 · usage
    not reported by this server``, not a count of 0.

    Args:
        model: the model's name.
        events: the session's log.
        window: the model's context window, tokens (None: unknown).
        width: the most characters the line may take (a terminal's columns; None: no limit).
            What does not fit goes, least needed first: the notes in parentheses, "this
            session", the session's tokens; then the model's name is cut in its middle.

    Returns:
        One line, without its newline.
    """
    session = tokens_of(events)
    if not session.requests and unreported(events):
        parts = [[model], [f"window {_n(window)}" if window else "window unknown"], [NOT_REPORTED, ""]]
    else:
        share = _share(context_used(events), window, events)
        tokens = f"{_n(session.total)} tokens"
        parts = [[model], [share, _NOTE.sub("", share)], [f"{tokens} this session", tokens, ""]]
    return _fitted(parts, width)


#: A note in parentheses, and what introduces it, dropped from a footer that does not fit.
_NOTE = re.compile(r" (?:before the compaction )?\(.*\)$| before the compaction.*$")


def _fitted(parts: list[list[str]], width: int | None) -> str:
    """``parts`` joined by `` · ``: each part's first form, then shorter forms (its last: "" drops it) until it fits."""
    chosen = [forms[0] for forms in parts]

    def line() -> str:
        return " · ".join(part for part in chosen if part)

    if width is None:
        return line()
    for i in range(len(parts) - 1, 0, -1):  # the last part gives way first
        for form in parts[i][1:]:
            if len(line()) <= width:
                return line()
            chosen[i] = form
    if len(line()) > width:
        rest = len(line()) - len(chosen[0])
        chosen[0] = elide(chosen[0], max(width - rest, 1))
    return line()[:width]


def price_of(models: Mapping[str, ModelSettings], name: str) -> Price | None:
    """The price of model ``name`` (config ``models.NAME.price``): its own, else its dated snapshot's base.

    A server names the snapshot that answered (OpenAI: ``gpt-4o-2024-08-06`` for ``gpt-4o``,
    ``gpt-4-0613`` for ``gpt-4``); a reply's ``model`` is that name.

    Returns:
        The price, or None when the config prices neither.
    """
    settings = models.get(name)
    if settings is None:
        base = _SNAPSHOT.sub("", name)
        settings = models.get(base) if base != name else None
    return settings.price if settings is not None else None


#: The date a snapshot's name ends with: ``-2024-08-06``, ``-0613``.
_SNAPSHOT = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{4})$")
#: How a request whose event names no model is listed among the unpriced.
UNNAMED = "an unnamed model"


@dataclass(frozen=True)
class Spent:
    """What requests cost, each at the price of the model that answered it (its event's ``model``).

    Attributes:
        dollars: the cost of the priced requests, US dollars.
        priced: how many requests were priced.
        unpriced: the models of the other requests (no price configured), in order of first use.
    """

    dollars: float = 0.0
    priced: int = 0
    unpriced: tuple[str, ...] = ()


def spent(events: Sequence[Event], models: Mapping[str, ModelSettings]) -> Spent:
    """The cost of the requests among ``events`` (those :func:`tokens_of` counts), each at its own model's price.

    Args:
        events: a session's events, or some of them.
        models: the config's ``models:`` (:attr:`gitsessions.config.Config.models`).
    """
    dollars, priced, unpriced = 0.0, 0, dict[str, None]()
    for ev in events:
        tokens = Tokens.of(ev.data.get("usage")) if ev.type in _PAID else Tokens()
        if not tokens.requests:
            continue
        name = str(ev.data.get("model") or "").strip()
        price = price_of(models, name) if name else None
        if price is None:
            unpriced[name or UNNAMED] = None
        else:
            dollars, priced = dollars + cost(tokens, price), priced + 1
    return Spent(dollars, priced, tuple(unpriced))


def report(model: str, events: Sequence[Event], window: int | None,
           models: Mapping[str, ModelSettings]) -> list[str]:
    """The lines of ``/usage``: this turn, this session, the context against the window, cost when priced.

    Args:
        model: the model the next request goes to.
        events: the session's events.
        window: the model's window (None: unknown, and said so).
        models: the config's ``models:``: each request is priced at its own model's price,
            and the models without one are named.
    """
    start = last_turn_start(events) or 0
    current = price_of(models, model)

    def line(label: str, some: Sequence[Event]) -> str:
        t, paid, missing = tokens_of(some), spent(some, models), unreported(some)
        if missing and not t.requests:
            return f"{label}: {NOT_REPORTED} ({_replies(missing)})"
        text = (f"{label}: {_n(t.prompt)} prompt ({_n(t.cached)} cached) + {_n(t.completion)} completion "
                f"= {_n(t.total)} tokens in {t.requests} request{'' if t.requests == 1 else 's'}")
        text += f" (and {_replies(missing)} without usage)" if missing else ""
        if paid.priced or (not t.requests and current is not None):
            text += f" · ${paid.dollars:.4f}"
        return text + (f" ({', '.join(paid.unpriced)}: no price)" if paid.unpriced else "")

    out = [f"model: {model}", line("this turn", events[start:]), line("this session", events),
           _share(context_used(events), window, events)]
    unpriced = spent(events, models).unpriced or (() if current is not None else (model,))
    if unpriced:
        out.append(f"cost: no price configured for {', '.join(unpriced)} (models.NAME.price in config.yaml)")
    return out
