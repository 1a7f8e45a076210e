"""Redacting many strings at once (an imported conversation's): each shape tried only where it may match.

:meth:`~gitsessions.redact.Redactor.text` tries every shape on a string; a shape whose
literals (:meth:`~gitsessions.detectors.Shape.may_match`) the string lacks finds nothing
there. Here the literals are looked for once, in all the strings joined (C speed): a shape
whose literals are in none of them is passed over on each, which finds what trying it
would (a string holds a literal only if the join does); and a string met again (the keys
and names every event repeats: 9 in 10 of a Claude Code transcript's strings) is redacted
once. Trying ~50 shapes on each of a conversation's thousands of strings was most of an
import's time (issue 14, item 7).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from .detectors import Scan
from .events import Event
from .redact import Redactor


def redact_events(redactor: Redactor, events: Iterable[Event]) -> list[Event]:
    """Return each of ``events`` as :meth:`~gitsessions.redact.Redactor.event` does, for a fraction of the cost.

    Args:
        redactor: the redactor.
        events: the events (a conversation's: their strings are held joined once; an event
            repeated, the same object, is redacted once).

    Returns:
        The redacted events, in order (an event unchanged is the same object).
    """
    events = list(events)
    unique = list({id(ev): ev for ev in events}.values())
    joined = Scan("\n".join(_strings([ev.data for ev in unique])))
    only = [(i, shape) for i, shape in enumerate(redactor.shapes) if shape.may_match(joined)]
    seen: dict[str, str] = {}  # a string is redacted once: keys and names repeat in every event

    def text(s: str) -> str:
        out = seen.get(s)
        if out is None:
            out = seen[s] = redactor.text(s, only)
        return out

    done = {id(ev): redactor.event(ev, text) for ev in unique}
    return [done[id(ev)] for ev in events]


def _strings(value: Any) -> Iterator[str]:
    """Every string of a JSON value, keys too (what :meth:`~gitsessions.redact.Redactor.value` redacts)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            if isinstance(k, str):
                yield k
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)
