"""Redacting many strings at once (an imported conversation's): each shape tried only where it may match.

:meth:`~gitsessions.secrets.redact.Redactor.text` tries every shape on a string; a shape whose
literals (:meth:`~gitsessions.secrets.detectors.Shape.may_match`) the string lacks finds nothing
there. Here the literals are looked for once, in all the strings joined (C speed): a shape
whose literals are in none of them is passed over on each, which finds what trying it
would (a string holds a literal only if the join does); and a string met again (the keys
and names every event repeats: 9 in 10 of a Claude Code transcript's strings) is redacted
once. Trying ~50 shapes on each of a conversation's thousands of strings was most of an
import's time.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from typing import Any

from ..log.events import Event
from .detectors import Shape
from .redact import Redactor
from .scan import Scan


def redact_events(redactor: Redactor, events: Iterable[Event]) -> list[Event]:
    """Return each of ``events`` as :meth:`~gitsessions.secrets.redact.Redactor.event` does, for a fraction of the cost.

    Args:
        redactor: the redactor.
        events: the events (a conversation's: their strings are held joined once; an event
            repeated, the same object, is redacted once).

    Returns:
        The redacted events, in order (an event unchanged is the same object).
    """
    events = list(events)
    unique = list({id(ev): ev for ev in events}.values())
    strings = _strings(redactor, [ev.data for ev in unique])
    todo = _shapes_of(redactor, strings)
    seen = {s: redactor.text(s, only) for s, only in zip(strings, todo, strict=True)}
    done = {id(ev): redactor.event(ev, seen.__getitem__) for ev in unique}
    return [done[id(ev)] for ev in events]


def _shapes_of(redactor: Redactor, strings: list[str]) -> list[list[tuple[int, Shape]]]:
    """The shapes to try on each of ``strings``: those whose literals it holds, and those without literals.

    The literals are looked for in all the strings joined by a newline; an occurrence lies
    whole within one string (none holds a newline) or it spans two and says nothing of
    either; after one occurrence in a string, the search goes on at the next string.
    """
    starts, at = [], 0
    for s in strings:
        starts.append(at)
        at += len(s) + 1
    joined = Scan("\n".join(strings))
    everywhere: list[tuple[int, Shape]] = []
    holding: dict[tuple[str, bool], set[int]] = {}  # a literal -> the strings holding it
    within: list[tuple[int, Shape, set[int]]] = []
    for i, shape in enumerate(redactor.shapes):
        if shape.needles is None:
            everywhere.append((i, shape))
            continue
        needles, icase = shape.needles
        sets = [holding[key] if (key := (needle, icase)) in holding else
                holding.setdefault(key, _holding(joined, needle, icase, strings, starts)) for needle in needles]
        if any(sets):
            within.append((i, shape, set().union(*sets)))
    return [sorted([*everywhere, *((i, shape) for i, shape, held in within if k in held)], key=lambda pair: pair[0])
            for k in range(len(strings))]


def _holding(joined: Scan, needle: str, icase: bool, strings: list[str], starts: list[int]) -> set[int]:
    """The indexes of the strings holding ``needle`` (lower case, ignoring ASCII case when ``icase``)."""
    out: set[int] = set()
    if not joined.has(needle, icase):
        return out
    seen = joined.lowered if icase else joined.text
    j = seen.find(needle)
    while j >= 0:
        k = bisect_right(starts, j) - 1
        end = starts[k] + len(strings[k])
        if j + len(needle) <= end:
            out.add(k)
        j = seen.find(needle, end + 1 if j + len(needle) <= end else j + 1)
    return out


def _strings(redactor: Redactor, values: list[Any]) -> list[str]:
    """Every string of the JSON ``values``, keys too, once each: what :meth:`.Redactor.value` redacts.

    Found by that walk itself, each string kept and given back unchanged, so the strings
    looked at here are the ones it redacts (the copies it builds are dropped).
    """
    found: dict[str, None] = {}

    def keep(s: str) -> str:
        found[s] = None
        return s

    for value in values:
        redactor.value(value, keep)
    return list(found)
