"""The recap a chat shows when it opens a session with earlier turns: where the conversation was.

The last turns the model sees, read from the end of the log, so a long session costs no
more than a short one: ``── turn N ──``, ``you › <prompt>``, the reply, ``⚙ name(…)`` for
each tool call, and a note for a turn that did not complete. It is drawn before the chat's
first prompt, so it does not go through :mod:`gitsessions.view` (imported after the prompt,
for ``gs show``, which has every turn whole). Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from .events import Event
from .transcript import derived

#: A message of more lines than this is cut in the recap.
RECAP_LINES = 20


def recap_lines(events: Sequence[Event], turns: int) -> list[str]:
    """Return the recap of the last ``turns`` turns of ``events`` (undone turns left out), one line each.

    Args:
        events: the session's events, in log order.
        turns: how many turns, counted from the last (0: none).

    Returns:
        The lines, without newlines; empty when there is no turn to show.
    """
    log = derived(events)
    shown: list[int] = []  # the turns taken, from the last
    picked: list[int] = []  # their events' indexes, from the end
    for i in range(len(events) - 1, -1, -1):
        turn = log.turns[i]
        if turn == 0 or turn in log.undone:
            continue
        if turn not in shown:
            if len(shown) == turns:
                break
            shown.append(turn)
        picked.append(i)
    out: list[str] = []
    for i in reversed(picked):
        ev, data = events[i], events[i].data
        if ev.type == "turn/start":
            out.append(f"── turn {log.turns[i]} ──")
        elif ev.type == "user/message":
            out += _clipped("you › " + str(data.get("content", "")))
        elif ev.type == "assistant/message":
            content = data.get("content")
            text = content if isinstance(content, str) else ""
            mark = " [interrupted]" if data.get("interrupted") else ""
            if text or mark:
                out += _clipped(text.rstrip("\n") + mark)
            out += [f"⚙ {call.get('name', '')}(…)" for call in data.get("tool_calls") or [] if isinstance(call, dict)]
        elif ev.type == "turn/end" and data.get("reason", "completed") != "completed":
            why = f": {data['error']}" if data.get("error") else ""
            out.append(f"(turn ended: {data.get('reason')}{why})")
    return out


def _clipped(text: str) -> list[str]:
    lines = text.split("\n")
    if len(lines) <= RECAP_LINES:
        return lines
    more = len(lines) - RECAP_LINES
    return lines[:RECAP_LINES] + [f"… ({more} more line{'s' if more != 1 else ''})"]
