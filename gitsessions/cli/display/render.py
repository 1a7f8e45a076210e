"""Turning sessions, logs and listings into text and JSON for people and scripts.

JSON shapes here are the stable, documented output of ``--json`` / ``--format json``
(README, "Commands"). Times are ISO 8601 with the committer's UTC offset. Transcripts
(``gs show``) and the compact forms (``gs log -p``, ``gs diff``) render
:func:`gitsessions.log.view.items`; this module only chooses the words.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from ...log.events import Event
from ...text import INTERRUPTED, clip, fold, iso_time, plural, tool_line, turn_ended, turn_rule

if TYPE_CHECKING:
    from ...history.tree import Node
    from ...log import view  # imported by the renderings of items, not by a chat before its prompt
    from ...store import CommitInfo, SessionInfo
    from ...store.packed import Damaged
    from ...store.remote.reports import PullReport, PushReport
    from ...store.values import MoveEnded

T = TypeVar("T")

_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\x9b]")


def terminal_safe(text: str) -> str:
    """Return ``text`` with control characters (ESC, NUL, ...; not newline or tab) shown as ``^X``.

    So content from a model or a file cannot drive the terminal.
    """
    return _UNSAFE.sub(lambda m: "^" + chr((ord(m.group()) + 64) % 128) if ord(m.group()) < 128 else "^[", text)


def local_time(epoch_s: int) -> str:
    """Return ``epoch_s`` as ``YYYY-MM-DD HH:MM`` local time, for tables."""
    return dt.datetime.fromtimestamp(epoch_s).strftime("%Y-%m-%d %H:%M")


def saved_ago(epoch_s: int | None, now_s: int | None = None) -> str:
    """When a session was saved last, as every list of sessions says it: ``3 hours ago``.

    ``gs list``, the ``-r`` picker and ``/sessions`` alike: :func:`relative_time` (``-``: never
    saved). Views of one session's history (``gs log``, ``gs tree``, the reflog) give the time
    itself, as git's do.

    Args:
        epoch_s: the save's time, seconds since the epoch (None or 0: none).
        now_s: now, seconds (None: the clock's).
    """
    import time

    return relative_time(epoch_s, int(time.time()) if now_s is None else now_s) if epoch_s else "-"


def relative_time(epoch_s: int, now_s: int) -> str:
    """Return how long before ``now_s`` ``epoch_s`` was, in git's words (``3 hours ago``), for tables.

    git's ``--date=relative`` rule (date.c ``show_date_relative``): seconds below 90,
    minutes below 90, hours below 36, days below 14, weeks below 70 days, months below a
    year, years and months below 5 years, then years; a time after ``now_s`` is
    ``in the future``.
    """
    if epoch_s > now_s:
        return "in the future"
    diff = now_s - epoch_s
    if diff < 90:
        return f"{plural(diff, 'second')} ago"
    diff = (diff + 30) // 60
    if diff < 90:
        return f"{plural(diff, 'minute')} ago"
    diff = (diff + 30) // 60
    if diff < 36:
        return f"{plural(diff, 'hour')} ago"
    diff = (diff + 12) // 24
    if diff < 14:
        return f"{plural(diff, 'day')} ago"
    if diff < 70:
        return f"{plural((diff + 3) // 7, 'week')} ago"
    if diff < 365:
        return f"{plural((diff + 15) // 30, 'month')} ago"
    if diff < 1825:
        months = (diff * 12 * 2 + 365) // (365 * 2)
        years, months = divmod(months, 12)
        return f"{plural(years, 'year')}" + (f", {plural(months, 'month')}" if months else "") + " ago"
    return f"{plural((diff + 183) // 365, 'year')} ago"


def family_lines(root: Node, under: Callable[[Node], Iterable[tuple[str, T]]] | None = None,
                 ) -> list[tuple[str, Node, T | None]]:
    """Return the lines of a family drawn as a tree of fork points (``gs tree``, the chat's ``/tree``).

    A session's line: ``├─ work-2  (from work at turn 4)  "shorter answer please"  5 turns ·
    2026-12-01 13:05 · a1b2c3d``. The quoted text is the session's own: its title, or a fork's
    first own prompt while its title is still its parent's; a fork with neither (no turn of its
    own yet) shows the inherited title unquoted. The current session ends with ``← current``,
    an archived one is marked ``[archived]``, one whose log cannot be read ``[unreadable: why]``.

    Args:
        root: the family's root (:func:`gitsessions.history.tree.family`).
        under: the lines drawn under a session's line, indented below it, as ``(text, value)``
            (the chat lists a session's turns there); None: none.

    Returns:
        ``(text, node, value)`` per line, top down; ``value`` is None on a session's line.
    """
    from ...history.tree import fork_label

    out: list[tuple[str, Node, T | None]] = []

    def draw(node: Node, lead: str, branch: str, up_title: str | None) -> None:
        where = f"  (from {node.parent} at turn {node.from_turn})" if node.parent and node.from_turn is not None \
            else f"  (from {node.parent})" if node.parent else ""
        label = fork_label(node.title, node.prompt, up_title if node.parent else None)
        inherited = bool(node.parent) and node.title == up_title and not node.prompt  # no text of its own yet
        shown = (f"  {label}" if inherited else f'  "{label}"') if label else ""
        marks = ("  [archived]" if node.archived else "") + ("  ← current" if node.current else "") \
            + (f"  [unreadable: {node.error}]" if node.error else "")
        turns = plural(node.turns, "turn")
        out.append((f"{lead}{branch}{node.session_id}{where}" + shown
                    + f"  {turns} · {local_time(node.saved)} · {node.tip[:7]}{marks}", node, None))
        below = lead + ("" if not branch else "   " if branch == "└─ " else "│  ")
        bar = "│  " if node.children else "   "
        for text, value in under(node) if under is not None else ():
            out.append((f"{below}{bar}  {text}", node, value))
        for i, child in enumerate(node.children):
            draw(child, below, "└─ " if i == len(node.children) - 1 else "├─ ", node.title)

    draw(root, "", "", None)
    return out


def move_ended(move: MoveEnded) -> str:
    """One line for a move of a session a killed gs left half done, as the next command ended it."""
    verb = {"rename": "renaming", "archive": "archiving (gs rm)", "restore": "restoring"}[move.kind]
    said = f"a gs killed while {verb} {move.src} as {move.dst} "
    if move.outcome == "completed":
        return said + f"left it half done; it is done now ({move.src} is {move.dst})"
    if move.outcome == "taken back":
        return said + f"had moved nothing; {move.src} is as it was"
    return said + f"left both names, and {move.src} was saved to since: both are kept (gs rm one, or rename it)"


def damaged_refs(repo: str, damaged: Sequence[Damaged]) -> str:
    """One line for the damaged lines of a repo's ``packed-refs``: the first, how many more, and what to do."""
    more = f" (and {plural(len(damaged) - 1, 'line')} more)" if len(damaged) > 1 else ""
    first = damaged[0]
    return (f"the session repo is damaged: {repo}/packed-refs line {first.line} {first.what()}{more}; the refs on "
            "its other lines are read, plain git refuses the file: set the line aside (kept) with gs doctor --fix")


def stranger_branches(repo: str, names: Sequence[str]) -> str:
    """One line for the branches of ``repo`` no list shows: how many, which, why, and what to do."""
    import shlex

    shown = ", ".join(names[:3]) + (", …" if len(names) > 3 else "")
    what = "1 branch is not listed: its name is" if len(names) == 1 else \
        f"{len(names)} branches are not listed: their names are"
    return (f"{what} no session id ({shown}; an id is at most 64 letters, digits, '_' or '-'); to list one, "
            f"rename it: git -C {shlex.quote(repo)} branch -m {shlex.quote(names[0])} NEW-ID")


def session_row(info: SessionInfo) -> dict[str, Any]:
    """Return the ``gs list --json`` object of one session.

    Keys: ``id``, ``title``, ``turns``, ``messages``, ``saved`` (ISO 8601), ``commit``,
    ``forked_from`` (``"<session>@<commit>"`` from the tip's ``Forked-From`` trailer, else
    null), ``error`` (null unless the session could not be read).
    """
    t = info.message.fields
    return {
        "id": info.session_id,
        "title": t.title or "",
        "turns": t.turn or 0,
        "messages": t.messages or 0,
        "saved": iso_time(info.time) if info.time else None,
        "commit": info.tip,
        "forked_from": str(t.forked_from) if t.forked_from else None,
        "error": info.error,
    }


def commit_row(info: CommitInfo) -> dict[str, Any]:
    """Return the ``gs log --json`` object of one commit.

    Keys: ``commit``, ``parents``, ``time`` (ISO 8601: the author date, when it was said, as
    ``git log`` shows it), ``committed`` (the commit date), ``turn`` (int or null), ``subject``,
    ``model`` (or null), ``tokens`` (prompt plus completion tokens of the replies it saved, or
    null), ``events`` (``"a-b"`` or null), ``forked_from``
    (``"<session>@<commit>"`` from the ``Forked-From`` trailer, or null), ``ended`` (how a turn
    it saved ended when it did not complete: ``aborted``, ``error``... from the ``Ended``
    trailer; null), ``trailers`` (all).
    """
    t = info.message.fields
    return {
        "commit": info.commit,
        "parents": info.parents,
        "time": iso_time(*info.said),
        "committed": iso_time(info.time, info.tz_offset),
        "turn": t.turn,
        "subject": info.message.subject,
        "model": t.model,
        "tokens": t.tokens,
        "events": info.message.trailers.get("Events"),
        "forked_from": str(t.forked_from) if t.forked_from else None,
        "ended": t.ended,
        "trailers": dict(info.message.trailers),
    }


def pull_json(report: PullReport) -> dict[str, Any]:
    """Return the ``--json`` object of what a pull did (``gs pull``, ``gs sync``, ``gs clone``).

    Keys: ``created`` (ids), ``updated`` (``{"session", "old", "new"}``), ``forks``
    (``{"session", "fork", "commit", "made_twice"}``: it diverged, your side is in ``fork``),
    ``came_back`` (``{"session", "kept_in"}``), ``beside`` (``{"session", "old"}``),
    ``dropped`` (``{"ref", "kept_in"}``: renamed, archived or restored there), ``deferred``
    and ``failed`` (``{"session", "why"}``), ``skipped`` (``{"ref", "why"}``: no sessions),
    ``unchanged`` (a count). An archived session is ``archive/<name>``.
    """
    return {
        "created": list(report.created),
        "updated": [{"session": s, "old": old, "new": new} for s, old, new in report.fast_forwarded],
        "forks": [{"session": s, "fork": fork, "commit": commit, "made_twice": s in report.made_twice}
                  for s, fork, commit in report.forks],
        "came_back": [{"session": s, "kept_in": kept} for s, kept in report.came_back],
        "beside": [{"session": s, "old": old} for s, old in report.beside],
        "dropped": [{"ref": ref, "kept_in": kept} for ref, kept in report.dropped],
        "deferred": [{"session": s, "why": why} for s, why in report.deferred],
        "failed": [{"session": s, "why": why} for s, why in report.failed],
        "skipped": [{"ref": ref, "why": why} for ref, why in report.skipped],
        "unchanged": report.unchanged,
    }


def push_json(report: PushReport) -> dict[str, Any]:
    """Return the ``--json`` object of what a push did (``gs push``, ``gs sync``).

    Keys: ``pushed`` (refs), ``deleted`` and ``kept_there`` (``{"ref", "kept_in"}``: removed
    there, or kept because the remote refuses deletions), ``behind``, ``diverged`` and
    ``moved`` (refs), ``failed`` and ``skipped`` (``{"ref", "why"}``), ``unchanged`` (a
    count), ``created_there`` (the bare repository the push made first, or null).
    """
    return {
        "pushed": list(report.pushed),
        "deleted": [{"ref": ref, "kept_in": kept} for ref, kept in report.deleted],
        "kept_there": [{"ref": ref, "kept_in": kept} for ref, kept in report.kept_there],
        "behind": list(report.behind),
        "diverged": list(report.diverged),
        "moved": list(report.moved),
        "failed": [{"ref": ref, "why": why} for ref, why in report.failed],
        "skipped": [{"ref": ref, "why": why} for ref, why in report.skipped],
        "unchanged": report.unchanged,
        "created_there": str(report.created_there) if report.created_there else None,
    }


def transcript_lines(events: Sequence[Event], *, full: bool = False) -> Iterator[str]:
    """Yield the plain-text transcript (``gs show``) one block per item of :func:`view.items`, each ending in a newline.

    One block at a time, so a 100 MB session's transcript is never held whole (nor twice,
    as the joined text and its terminal-safe copy).

    ``── turn N ──`` heads each turn, ``you ›``, ``system prompt ›`` and ``assistant ›`` the messages, tool calls
    are ``⚙ name(args)`` and results ``↳ ...`` (indented, each line of them), notes sit in parentheses. A message
    an import kept aside is ``<what it is> (imported, not sent to the model) ›`` and one line (:func:`folded`)
    unless ``full``. Control characters are made visible (:func:`terminal_safe`).

    Args:
        events: the session's events.
        full: show what an import kept aside whole (``gs show --full``).
    """
    from ...log import view

    for item in view.items(events):
        for line in transcript_item(item, full=full):
            yield terminal_safe(line) + "\n"


#: What an imported message is said to be beside what it is, in the transcript.
NOT_SENT = "(imported, not sent to the model)"
#: The longest start of a folded text shown (:func:`folded`), characters.
FOLDED_CHARS = 80
#: The shortest start of a folded text shown, however narrow the room.
FOLDED_MIN = 20


def folded(text: str, limit: int = FOLDED_CHARS, room: int | None = None) -> str:
    """Return ``text`` as one line: the start of its first line with any text, and how much more it holds.

    ``You are Codex, … [212 more lines: gs show --full]``; a text of one short line is
    itself. For what an import kept aside, which is long and was never sent.

    Args:
        text: the text.
        limit: the longest start shown, characters (``…`` ends a cut one).
        room: the columns the whole line should fit in (a terminal's width less what goes
            before it; the start is never cut below :data:`FOLDED_MIN`); None: no bound.
    """
    lines = text.rstrip().split("\n")
    first = next((i for i, line in enumerate(lines) if line.strip()), 0)
    line, more = lines[first].strip(), len(lines) - first - 1

    def hint(n: int, what: str) -> str:
        return f" [{plural(n, what)}: gs show --full]"

    if room is not None and (more or len(line) > min(limit, room)):  # room for the hint, at its longest
        longest = hint(more, "more line") if more else hint(len(line), "more character")
        limit = max(FOLDED_MIN, min(limit, room - len(longest)))
    if more:
        return clip(line, limit) + hint(more, "more line")
    if len(line) > limit:
        return clip(line, limit) + hint(len(line) - limit + 1, "more character")
    return line


def _sent_with(item: view.Summary) -> str:
    """What the next request sends beside a compaction summary, after a comma (``""``: the summary alone).

    ``, sent after the 2 prompts it keeps``, ``, then the reply it keeps``, or ``, not sent:
    ...`` for one an undo voided.
    """
    if item.void:
        return ", not sent: a turn it covers was undone after it"
    words = []
    if item.kept:
        words.append(f"sent after {_the(item.kept, 'prompt')} it keeps")
    if item.after:
        kinds = {"user": "prompt", "assistant": "reply", "tool": "tool result"}
        kind = kinds.get(item.after[0], "message") if len(set(item.after)) == 1 else "message"
        words.append(f"then {_the(len(item.after), kind)} it keeps")
    return "".join(f", {w}" for w in words)


def _the(n: int, word: str) -> str:
    """``the reply``, ``the 2 replies``."""
    return f"the {word}" if n == 1 else f"the {n} {word[:-1] + 'ies' if word.endswith('y') else word + 's'}"


def transcript_item(item: view.Item, *, full: bool = False, width: int | None = None) -> list[str]:
    """The lines of one item in the plain-text transcript (:func:`transcript_lines`), not yet terminal-safe.

    Args:
        item: the item.
        full: an imported message whole, not :func:`folded`.
        width: the terminal's columns, that a folded message fits in (None: its start is
            :data:`FOLDED_CHARS` at most).
    """
    from ...log import view

    out: list[str] = []
    if isinstance(item, view.TurnStart):
        out.append(turn_rule(item.turn))
    elif isinstance(item, view.Message) and item.imported:
        head = f"{item.what} {NOT_SENT} › "
        out.append(head + (item.text if full else folded(item.text, room=None if width is None else width - len(head))))
    elif isinstance(item, view.Message) and item.role in ("user", "system"):
        out.append(("you" if item.role == "user" else "system prompt") + " › " + item.text)
    elif isinstance(item, view.Message):
        mark = INTERRUPTED if item.interrupted else ""
        if item.text or (mark and not item.tool_calls):
            out.append("assistant › " + " ".join(filter(None, (item.text, mark))))
            mark = ""
        for call in item.tool_calls:
            out.append("  " + tool_line(call.name, call.arguments or "") + (f" {mark}" if mark else ""))
    elif isinstance(item, view.ShownResult):
        text = item.text.replace("\n", "\n    ")  # its later lines under its first, not at column 0
        out.append(f"  ↳ {text}" + (" (error)" if item.is_error else ""))
    elif isinstance(item, view.TurnEnd):
        out.append("  " + turn_ended(item.reason, item.error))
    elif isinstance(item, view.TitleChange):
        out.append(f"(title: {item.title})")
    elif isinstance(item, view.Permission):  # one of a call's lines: indented as its call and result are
        out.append(f"  ({item.text})")
    elif isinstance(item, view.Setting):
        out.append(f"({item.text})")
    elif isinstance(item, view.Undo):
        out.append(f"(undo: turn {item.undone} dropped from what the model sees)")
    elif isinstance(item, view.Summary):
        out.append(f"(summary of the conversation up to turn {item.upto}{_sent_with(item)}: {item.text})")
    elif isinstance(item, view.Fork):
        out.append(f"({_fork_text(item)})")
    return out


# -- compact rendering of the items a commit (or one side of a diff) added -----------------

#: Longest tool result / tool-call argument shown by the compact rendering, characters.
COMPACT_TOOL_CHARS = 200


def compact_items(items: Sequence[view.Item]) -> list[view.Item]:
    """Return the items the compact renderings show: messages, results and notes.

    Turn starts are left out (the compact forms name the turn otherwise), and so are empty
    assistant replies (no text, no tool call, not interrupted).
    """
    from ...log import view

    return [i for i in items if not isinstance(i, view.TurnStart)
            and not (isinstance(i, view.Message) and i.empty)]


def _fork_text(item: view.Fork) -> str:
    return "fork: " + ", ".join(f"{k}={v}" for k, v in item.details)


def _note(item: view.Item) -> str | None:
    from ...log import view

    if isinstance(item, view.TurnEnd):
        why = f": {fold(item.error)}" if item.error else ""
        return f"turn {item.turn} ended: {item.reason}{why}"
    if isinstance(item, view.TitleChange):
        return f"title: {item.title}"
    if isinstance(item, (view.Setting, view.Permission)):
        return item.text
    if isinstance(item, view.Undo):
        return f"undo: turn {item.undone}"
    if isinstance(item, view.Summary):
        return f"summary up to turn {item.upto}{_sent_with(item)}: {clip(fold(item.text), COMPACT_TOOL_CHARS)}"
    if isinstance(item, view.Fork):
        return _fork_text(item)
    return None


def item_json(item: view.Item) -> dict[str, Any]:
    """Return one item of :func:`compact_items` as JSON (``gs diff --json``, ``log -p --json``).

    Each object has ``seq``, ``turn``, ``type`` (the event type) and ``role``: ``user`` or
    ``system`` (``content``), ``assistant`` (``content``, ``tool_calls`` [{id, name, arguments}], ``interrupted``),
    ``tool`` (``tool_call_id``, ``name``, ``content``, ``is_error``) or ``note`` (a turn that
    did not complete, a title, an undo, a summary, a fork: ``content`` says what). A message
    an import kept aside has its own role (``system``, ...), ``content`` and ``imported: true``,
    and ``name`` when its event says what it is (``codex instructions``).
    """
    from ...log import view

    base: dict[str, Any] = {"seq": item.seq, "turn": item.turn, "type": item.type}
    if isinstance(item, view.Message) and item.imported:
        return {**base, "role": item.role, "content": item.text, "imported": True,
                **({"name": item.name} if item.name else {})}
    if isinstance(item, view.Message) and item.role in ("user", "system"):
        return {**base, "role": item.role, "content": item.text}
    if isinstance(item, view.Message):
        calls = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in item.tool_calls]
        return {**base, "role": "assistant", "content": item.text, "tool_calls": calls,
                "interrupted": item.interrupted}
    if isinstance(item, view.ShownResult):
        return {**base, "role": "tool", "tool_call_id": item.call_id, "name": item.name, "content": item.text,
                "is_error": item.is_error}
    return {**base, "role": "note", "content": _note(item)}


def compact_lines(items: Sequence[view.Item], indent: str = "    ") -> list[str]:
    """Render items of :func:`compact_items` compactly, one block each (``gs log -p``, ``gs diff``).

    ``user: ...`` and ``assistant: ...`` keep their text (continuation lines indented), an
    imported message is ``<what it is> (imported): ...`` on one line (:func:`folded`),
    ``[interrupted]`` marks a cut-off reply, tool calls are ``⚙ name(args)`` and results
    ``↳ ...`` on one clipped line, and notes (a turn that ended early, titles, undo) sit in
    parentheses.
    """
    from ...log import view

    out: list[str] = []

    def block(label: str, text: str) -> None:
        lines = text.split("\n") if text else [""]
        pad = indent + " " * len(label)
        out.append(f"{indent}{label}{lines[0]}".rstrip())
        out.extend(f"{pad}{line}".rstrip() for line in lines[1:])

    for item in items:
        if isinstance(item, view.Message) and item.imported:
            block(f"{item.what} (imported): ", folded(item.text))
        elif isinstance(item, view.Message) and item.role in ("user", "system"):
            block(f"{item.role}: ", item.text)
        elif isinstance(item, view.Message):
            mark = INTERRUPTED if item.interrupted else ""
            if item.text or not item.tool_calls:
                block("assistant: ", " ".join(filter(None, (item.text, mark))))
                mark = ""
            for call in item.tool_calls:
                args = clip(fold(call.arguments or ""), COMPACT_TOOL_CHARS)
                out.append(indent + tool_line(call.name, args) + (f" {mark}" if mark else ""))
        elif isinstance(item, view.ShownResult):
            flag = " (error)" if item.is_error else ""
            out.append(f"{indent}↳ {clip(fold(item.text), COMPACT_TOOL_CHARS)}{flag}")
        else:
            out.append(f"{indent}({_note(item)})")
    return out
