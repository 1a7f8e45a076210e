"""Turn numbering, written once: which turn an event belongs to, the last turn, the next one.

Every copy that numbers turns (a save's ``Turn`` trailer and subject, the next ``turn/start``,
undo, ``gs show``, exports, ``gs search``) calls these. A turn's number is the ``turn`` of its
``turn/start`` event, or one more than the turn before it for a log another tool wrote (issue 8,
"one home for every rule").
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


def turns_of(events: Sequence[Event], start_turn: int = 0) -> list[int]:
    """Return, for each event, the number of the turn it belongs to (``start_turn`` before the first)."""
    out, turn = [], start_turn
    for ev in events:
        if ev.type == "turn/start":
            turn = turn_number(ev.data, turn)
        out.append(turn)
    return out


def turn_numbers(events: Sequence[Event]) -> list[int]:
    """Return the number of every turn started in ``events``, in log order."""
    out: list[int] = []
    for ev in events:
        if ev.type == "turn/start":
            out.append(turn_number(ev.data, out[-1] if out else 0))
    return out


def last_turn(events: Sequence[Event]) -> int:
    """Return the number of the last turn started (0 when none was): the ``Turn`` of a save."""
    numbers = turn_numbers(events)
    return numbers[-1] if numbers else 0


def next_turn(events: Sequence[Event]) -> int:
    """Return the number the next turn gets: one more than any turn so far (1-based)."""
    return 1 + max(turn_numbers(events), default=0)


def turn_count(events: Sequence[Event]) -> int:
    """Return the number of turns started in the log."""
    return sum(1 for e in events if e.type == "turn/start")
