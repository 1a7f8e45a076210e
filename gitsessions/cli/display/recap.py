"""The recap a chat shows when it opens a session with earlier turns: where the conversation was.

The last turns the model sees, read from the end of the log, so a long session costs no
more than a short one: ``── turn N ──``, ``you › <prompt>``, the reply, ``⚙ name(…)`` for
each tool call, and a note for a turn that did not complete. It is drawn before the chat's
first prompt, so it does not go through :mod:`gitsessions.log.view` (imported after the prompt,
for ``gs show``, which has every turn whole). Pure: no I/O; how it looks is the face's
(:func:`recap_lines` for plain text).
"""

from __future__ import annotations

from collections.abc import Sequence

from ...log.events import Event
from ...log.transcript import derived
from ...text import INTERRUPTED, tool_line, turn_ended, turn_rule

#: A message of more lines than this is cut in the recap.
RECAP_LINES = 20


#: One piece of a recap: ``(kind, text)``. Kinds: ``turn`` (``── turn N ──``), ``prompt``
#: (``you › ...``), ``reply`` (the model's text, markdown, maybe several lines), ``more``
#: (``… (N more lines)`` of a reply cut), ``mark`` (``[interrupted]``, said of the reply
#: before it), ``tool`` (``⚙ name(…)``) and ``ended`` (a turn that did not complete).
Entry = tuple[str, str]


def recap(events: Sequence[Event], turns: int) -> list[Entry]:
    """Return the recap of the last ``turns`` turns of ``events`` (undone turns left out), piece by piece.

    A face shows each kind as it likes: :func:`recap_lines` as plain lines; on a terminal
    with colour the replies are rendered as ``gs show`` renders them (gitsessions.cli.display.rendered).

    Args:
        events: the session's events, in log order.
        turns: how many turns, counted from the last (0: none).

    Returns:
        The entries, in order; empty when there is no turn to show. Text is as stored (not
        yet terminal-safe).
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
    out: list[Entry] = []
    for i in reversed(picked):
        ev, data = events[i], events[i].data
        if ev.type == "turn/start":
            out.append(("turn", turn_rule(log.turns[i])))
        elif ev.type == "user/message":
            lines, more = _clipped("you › " + str(data.get("content", "")))
            out.append(("prompt", "\n".join(lines + more)))
        elif ev.type == "assistant/message":
            content = data.get("content")
            text = content.rstrip("\n") if isinstance(content, str) else ""
            if text:
                lines, more = _clipped(text)
                out.append(("reply", "\n".join(lines)))
                out += [("more", line) for line in more]
            if data.get("interrupted"):
                out.append(("mark", INTERRUPTED))
            out += [("tool", tool_line(str(call.get("name", "")), "…")) for call in data.get("tool_calls") or []
                    if isinstance(call, dict)]
        elif ev.type == "turn/end" and data.get("reason", "completed") != "completed":
            out.append(("ended", turn_ended(data.get("reason"), data.get("error"))))
    return out


def recap_lines(events: Sequence[Event], turns: int) -> list[str]:
    """Return :func:`recap` as plain lines (:func:`plain_lines`).

    Args:
        events: the session's events, in log order.
        turns: how many turns, counted from the last (0: none).
    """
    return plain_lines(recap(events, turns))


def plain_lines(entries: Sequence[Entry]) -> list[str]:
    """The recap ``entries`` as plain lines (without newlines): a mark ends its reply's last line."""
    out: list[str] = []
    after_reply = False
    for kind, text in entries:
        if kind == "mark" and after_reply:
            out[-1] += " " + text
        else:
            out += text.split("\n")
        after_reply = kind in ("reply", "more")
    return out


def _clipped(text: str) -> tuple[list[str], list[str]]:
    """``text``'s first RECAP_LINES lines, and the line saying how many more there are (if any)."""
    lines = text.split("\n")
    if len(lines) <= RECAP_LINES:
        return lines, []
    more = len(lines) - RECAP_LINES
    return lines[:RECAP_LINES], [f"… ({more} more line{'s' if more != 1 else ''})"]
