"""The chat's slash commands: ``/help``, ``/new``, ``/open``, ``/retry``, ``/edit``, ``/tree`` and the rest.

They follow the seed tutorial: ``/help``, ``/new <id>``, ``/sessions``, ``/open <id>``,
``/save``, ``/exit``; the tree of a conversation adds ``/retry``, ``/edit [N]``
and ``/tree``. Each command works on the chat it is given, through
:class:`~gitsessions.cli.repl.handle.ChatHandle`: its store, its current session, and its
environment's ``write`` and the faces a terminal gives it (editing a prompt in place, the
pickers). :func:`command` runs one line; the REPL's loop reads it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ...errors import GitSessionsError, SessionExists
from ...ids import check_free, new_session_id
from ...log.transcript import derived
from ...store import Revision
from ...text import plural
from ...writer.forking import fork
from ..display.render import saved_ago
from . import slash_settings
from .slash_compact import compact_command

if TYPE_CHECKING:  # /retry and /tree are imported when first used: not before the prompt
    from ...writer.redo import Attempt
    from .handle import ChatHandle

HELP = """\
Type a message and press Enter to send it; Alt+Enter (or Esc Enter) starts a new line;
Tab completes a command, and after /open a session id or a revision (work~, work@).
Ctrl+C cancels a reply (also one not yet begun) and clears a half-typed line; on an empty
line Ctrl+C or Ctrl+D leaves; Ctrl+Z suspends (fg resumes). Every finished turn is saved as
a git commit.

  /help          this help
  /new <id>      start a new session and switch to it
  /sessions      list sessions, newest first (* marks the current one)
  /open <rev>    switch to a session, or to a past revision (work~2, work@1a2b3c4d):
                 what you send there goes to a new fork; the original never moves
  /open          pick a session from a list, newest first (type to filter)
  /retry         ask again for the last turn's prompt, in a new sibling fork
  /edit [N]      edit turn N's prompt (default: the last) and send it in a fork at turn N-1;
                 /edit N --editor edits it in $EDITOR
  /tree          this session's family: pick a session or a turn and jump there
  /fork <new>    copy the current session (at its tip) into a new session and switch
  /log           the current session's saves, newest first
  /title <text>  set the session title (any Unicode)
  /system [text] show or set the system prompt (/system --clear removes it); saved
  /model [name]  show or switch the model of the next turns (saved in the session)
  /models        the models the server offers
  /set [k [v]]   show or set request options (temperature, top_p, max_tokens, seed); saved
  /usage         tokens of this turn and session, context used of the window, cost
  /undo          drop the last turn from what the model sees (the log keeps it)
  /compact [how] replace the conversation so far with the model's summary of it, in what the
                 model sees (the log keeps every message); [how]: what the summary should keep
  /copy          put the last reply on the clipboard (wl-copy, xclip, xsel or pbcopy)
  /save          save now (turns are saved as they finish; this confirms the tip)
  /exit          leave (also /quit, Ctrl+D)
"""


def command(repl: ChatHandle, line: str) -> bool:
    """Run a slash command; return False when the REPL should end."""
    name, _, arg = line.partition(" ")
    run = COMMANDS.get(name)
    if run is None:
        repl.env.write(f"unknown command {name}; /help lists the commands\n")
        return True
    return run(repl, arg.strip()) is not False


def _leave(_repl: ChatHandle, _arg: str) -> bool:
    return False


def _help(repl: ChatHandle, _arg: str) -> None:
    repl.env.write(HELP)


def _new(repl: ChatHandle, arg: str) -> None:
    sid = arg or new_session_id(repl.store)
    try:
        check_free(repl.store, sid)
    except SessionExists as exc:  # named as it is (a case clash: the real id), never what was typed
        step = "choose another id" if exc.existing.startswith("archive/") else f"use /open {exc.existing}"
        repl.env.write(f"error: {SessionExists(sid, exc.existing, step)}\n")
        return
    repl.open(sid, create=True)
    repl.env.write(f"(new session {sid})\n")


def _open(repl: ChatHandle, arg: str) -> None:
    picked = repl.env.pick_session() if not arg and repl.env.pick_session is not None else arg
    if not arg and repl.env.pick_session is None:
        repl.env.write("usage: /open <id>\n")
    elif not picked:
        repl.env.write("(nothing opened)\n")
    else:
        _go(repl, picked)


def _tree(repl: ChatHandle, arg: str) -> None:
    if arg:
        repl.env.write("usage: /tree (it shows this session's family)\n")
    else:
        tree(repl)


def _fork(repl: ChatHandle, arg: str) -> None:
    assert repl.session is not None
    if not arg:
        repl.env.write("usage: /fork <new id>\n")
    elif repl.session.tip is None:
        repl.env.write("error: nothing to fork yet: the session has no saved turns\n")
    else:
        source = repl.session.id
        fork(repl.store, repl.store.resolve(source), arg)
        repl.open(arg, create=False)
        repl.env.write(f"(forked {source} into {arg}; now in {arg})\n")


def _copy(repl: ChatHandle, arg: str) -> None:
    assert repl.session is not None
    reply = next((m["content"] for m in reversed(repl.session.messages())
                  if m["role"] == "assistant" and isinstance(m.get("content"), str) and m["content"].strip()), None)
    if arg:
        repl.env.write("usage: /copy (it copies the last reply)\n")
    elif reply is None:
        repl.env.write("(nothing to copy: no reply in this session yet)\n")
    elif repl.env.copy is None:
        repl.env.write("error: no clipboard here; select the reply with the mouse\n")
    else:
        tool = repl.env.copy(reply)
        repl.env.write(f"(copied the last reply: {plural(reply.count(chr(10)) + 1, 'line')}, with {tool})\n")


def _log(repl: ChatHandle, _arg: str) -> None:
    assert repl.session is not None
    if repl.session.tip is None:
        repl.env.write("(no saves yet)\n")
    for info in repl.store.log(repl.session.id, start=repl.session.tip, limit=20) if repl.session.tip else []:
        repl.env.write(f"{info.commit[:7]} {info.message.subject}\n")


def _title(repl: ChatHandle, arg: str) -> None:
    assert repl.session is not None
    if not arg:
        repl.env.write("usage: /title <text>\n")
    else:
        repl.session.set_title(arg)
        repl.env.write(f"(title: {derived(repl.session.events).title})\n")  # as stored: redacted


def _undo(repl: ChatHandle, _arg: str) -> None:
    assert repl.session is not None
    turn = repl.session.undo()
    repl.env.write(f"(turn {turn} dropped from what the model sees; the log keeps it)\n")


def _save(repl: ChatHandle, _arg: str) -> None:
    assert repl.session is not None
    commit = repl.session.save() or repl.session.tip
    if commit:
        repl.env.write(f"(saved: {repl.session.id} at {commit[:7]})\n")
    else:
        repl.env.write("(nothing to save yet: the session has no turns)\n")


def _go(repl: ChatHandle, rev: str) -> None:
    """Switch to ``rev`` (``/open``, the pickers, ``/tree``); the current session is already open."""
    assert repl.session is not None
    if repl.session.fork_from is None and (rev == repl.session.id or _is_our_tip(repl, rev)):
        repl.env.write(f"(already in {repl.session.id})\n")  # opening it again would find its lock taken: by us
        return
    repl.open(rev, create=False)
    repl.env.write(f"(opened {repl.session.id}: {len(repl.session.messages())} messages)\n")
    repl.show_recap()


def _is_our_tip(repl: ChatHandle, rev: str) -> bool:
    """True when ``rev`` (``work~0``, ``work@{0}``) names the current session's tip."""
    assert repl.session is not None
    try:
        at = repl.store.resolve(rev)
    except GitSessionsError:
        return False  # opening it says what is wrong
    return at.session_id == repl.session.id and at.commit == repl.session.tip


def _standing(repl: ChatHandle) -> Revision | None:
    """The revision the current session stands at (None: nothing saved yet)."""
    assert repl.session is not None
    if repl.session.fork_from is not None:
        return repl.session.fork_from  # a past revision, not yet written to
    return repl.store.resolve(repl.session.id) if repl.session.tip else None


def _attempt(repl: ChatHandle, turn: int | None, verb: str) -> tuple[Attempt, str] | None:
    at = _standing(repl)
    if at is None:
        repl.env.write(f"error: nothing to {verb} yet: the session has no saved turns\n")
        return None
    from ...writer.redo import attempt_at
    return attempt_at(repl.store, at, turn, name=repl.session.id if repl.session else None), at.session_id


def _send_attempt(repl: ChatHandle, attempt: Attempt, old: str, prompt: str, edited: bool = False,
                  label: str = "") -> None:
    """Open the new attempt's fork, say where both attempts live (after ``label``), send ``prompt`` there."""
    from ...writer.redo import open_attempt, where_both_live

    assert repl.session is not None
    past = repl.session.fork_from
    if past is None:
        session = open_attempt(repl.store, attempt, redactor=repl.env.redactor, warnings=repl.env.warnings)
    else:  # a past revision not yet written to holds the fork name the attempt takes: let it go
        unwritten = repl.release()
        assert unwritten is not None
        try:
            session = open_attempt(repl.store, attempt, redactor=repl.env.redactor, warnings=repl.env.warnings)
        except BaseException:
            repl.open(f"{past.session_id}@{past.commit}", create=False, fork_as=unwritten.id)
            raise
    repl.switch(session, None)
    line = where_both_live(attempt, old, session.id, f"/open {old}", edited, session.next_turn)
    repl.env.write(f"({label}{line})\n")
    repl.turn(prompt)


def retry(repl: ChatHandle, arg: str) -> None:
    """``/retry``: the last turn's prompt again, in a sibling fork at the turn's parent commit."""
    if arg:
        repl.env.write("usage: /retry (it tries the last turn again; /edit N changes an earlier one)\n")
        return
    found = _attempt(repl, None, "try again")
    if found is not None:
        _send_attempt(repl, found[0], found[1], found[0].prompt)


def edit_turn(repl: ChatHandle, arg: str) -> bool:
    """``/edit [N] [--editor]``: edit turn N's prompt; sending it forks at turn N-1.

    Returns:
        False when the REPL should end (a ``/exit`` read in place of the new prompt).
    """
    words = arg.split()
    use_editor = "--editor" in words
    rest = [w for w in words if w != "--editor"]
    if len(rest) > 1 or (rest and not rest[0].isdigit()):
        repl.env.write("usage: /edit [N] [--editor]  (N: a turn number, default the last)\n")
        return True
    found = _attempt(repl, int(rest[0]) if rest else None, "edit")
    if found is None:
        return True
    attempt, old = found
    label = f"edit turn {attempt.turn} › "
    if repl.env.edit is not None:
        text = repl.env.edit(label, attempt.prompt, use_editor)
    else:
        repl.env.write(f"(turn {attempt.turn} was: {attempt.prompt}; the next line replaces it)\n")
        text = repl.env.read_line(label)
        if text is not None and text.strip().startswith("/"):  # a command, as the prompt reads it
            repl.env.write(f"(edit cancelled: {text.split()[0]} is a command; nothing was sent)\n")
            return repl.command(text.strip())
    if text is None or not text.strip():
        repl.env.write("(edit cancelled: nothing was sent)\n")
        return True
    if text.strip() == attempt.prompt.strip():  # nothing changed: the same prompt again, said so
        _send_attempt(repl, attempt, old, attempt.prompt, label="unchanged: ")
    else:
        _send_attempt(repl, attempt, old, text, edited=True)
    return True


def tree(repl: ChatHandle) -> None:
    """``/tree``: the current session's family; the spot picked is opened (a past turn read-only)."""
    at = _standing(repl)
    if at is None:
        repl.env.write("(no saves yet: the tree starts with the first turn)\n")
        return
    from ...history.tree import family
    from .tree_lines import tree_spots
    spots = tree_spots(repl.store, family(repl.store, at.session_id))
    want = None if at.is_tip else at.commit  # a tip is its session's line
    here = next((i for i, s in enumerate(spots) if s.session_id == at.session_id and s.commit == want), 0)
    if repl.env.pick_spot is None:
        repl.env.write("".join(f"{'>' if i == here else ' '} {s.label}\n" for i, s in enumerate(spots)))
        return
    spot = repl.env.pick_spot(spots, here)
    if spot is None:
        return
    if spot.archived:
        repl.env.write(f"error: {spot.session_id} is archived; gs restore {spot.session_id} brings it back\n")
    elif spot.commit is None or spot.commit == repl.store.tip(spot.session_id):
        _go(repl, spot.session_id)
    else:
        _go(repl, f"{spot.session_id}@{spot.commit[:12]}")  # its note says where a send goes


def sessions(repl: ChatHandle) -> None:
    """Print the sessions, newest first, in columns: id, messages, last save, title; ``*`` marks the current one.

    The current session is listed even before its first save (``not saved``).
    """
    assert repl.session is not None
    infos = sorted(repl.store.list_sessions(), key=lambda i: i.time or 0, reverse=True)
    rows: list[tuple[str, int, str, str]] = [
        (i.session_id, i.message.fields.messages or 0, saved_ago(i.time),
         i.message.fields.title or "") for i in infos]
    if all(sid != repl.session.id for sid, *_ in rows):
        rows.insert(0, (repl.session.id, len(repl.session.messages()), "not saved", ""))
    width = max(len(sid) for sid, *_ in rows)
    counts = max(len(plural(n, "message")) for _, n, *_ in rows)
    for sid, n, saved, title in rows:
        mark = "*" if sid == repl.session.id else " "
        repl.env.write(f"{mark} {sid:<{width}}  {plural(n, 'message'):>{counts}}  {saved:<16}  {title}".rstrip() + "\n")


#: The slash commands by name: ``run(repl, arg)``, False when the REPL should end. In the
#: order of :data:`HELP`, which Tab completes them in.
COMMANDS: dict[str, Callable[[ChatHandle, str], bool | None]] = {
    "/help": _help, "/new": _new, "/sessions": lambda repl, _arg: sessions(repl), "/open": _open,
    "/retry": retry, "/edit": edit_turn, "/tree": _tree, "/fork": _fork, "/log": _log, "/title": _title,
    "/system": slash_settings.system, "/model": slash_settings.model, "/models": slash_settings.models,
    "/set": slash_settings.options, "/usage": slash_settings.usage,
    "/undo": _undo, "/compact": compact_command, "/copy": _copy, "/save": _save, "/exit": _leave, "/quit": _leave,
}
