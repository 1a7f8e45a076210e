"""Turn numbering, written once: which turn an event belongs to, the last turn, the next one.

Every copy that numbers turns (a save's ``Turn`` trailer and subject, the next ``turn/start``,
undo, ``gs show``, exports, ``gs search``, the derived transcript) calls these. A turn's number
is the ``turn`` of its ``turn/start`` event, or one more than the turn before it for a log
another tool wrote; an event belongs to the last turn started before it (or is it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .events import Event


def turn_number(data: Mapping[str, Any], previous: int) -> int:
    """Return the number of a turn from its ``turn/start`` data.

    Its ``turn`` when that is an integer, else the previous turn's number + 1 (a log another
    tool wrote).

    Args:
        data: the ``turn/start`` event's data.
        previous: the number of the turn before it (0 for the first).
    """
    t = data.get("turn")
    return t if isinstance(t, int) and not isinstance(t, bool) else previous + 1


class Numbering:
    """Turn numbers taken event by event, in log order: the one body of every function here.

    Each event costs the same however long the log: a log derived as it grows
    (:class:`gitsessions.log.transcript.Derivation`) takes only its new events.

    Args:
        start: the turn of the events before the first ``turn/start``.

    Attributes:
        turn: the number of the last turn started (``start`` before the first).
    """

    __slots__ = ("_top", "turn")

    def __init__(self, start: int = 0):
        self.turn = start
        self._top: int | None = None  # the highest turn number started

    def add(self, ev: Event) -> int:
        """Take the next event; return the number of the turn it belongs to."""
        if ev.type == "turn/start":
            self.turn = turn_number(ev.data, self.turn)
            self._top = self.turn if self._top is None else max(self._top, self.turn)
        return self.turn

    @property
    def next(self) -> int:
        """The number the next turn gets: one more than any turn started (1 when none was)."""
        return 1 + (self._top if self._top is not None else 0)


def turns_of(events: Sequence[Event], start_turn: int = 0) -> list[int]:
    """Return, for each event, the number of the turn it belongs to (``start_turn`` before the first)."""
    numbering = Numbering(start_turn)
    return [numbering.add(ev) for ev in events]


def turn_numbers(events: Sequence[Event]) -> list[int]:
    """Return the number of every turn started in ``events``, in log order."""
    numbering = Numbering()
    return [numbering.add(ev) for ev in events if ev.type == "turn/start"]


def last_turn(events: Sequence[Event]) -> int:
    """Return the number of the last turn started (0 when none was): the ``Turn`` of a save."""
    return _numbered(events).turn


def next_turn(events: Sequence[Event]) -> int:
    """Return the number the next turn gets: one more than any turn so far (1-based)."""
    return _numbered(events).next


def _numbered(events: Sequence[Event]) -> Numbering:
    """The numbering after all of ``events``."""
    numbering = Numbering()
    for ev in events:
        numbering.add(ev)
    return numbering


def turn_count(events: Sequence[Event]) -> int:
    """Return the number of turns started in the log."""
    return sum(1 for e in events if e.type == "turn/start")


def last_turn_start(events: Sequence[Event]) -> int | None:
    """Return the index of the last ``turn/start`` in ``events`` (where the last turn begins), or None."""
    return next((i for i in range(len(events) - 1, -1, -1) if events[i].type == "turn/start"), None)
