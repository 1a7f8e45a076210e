"""Where sessions stand: ``tree`` (a session's family), ``reflog`` (every move of its name), ``status``.

What each computes lives in :mod:`gitsessions.history.tree` and the store; this module parses
arguments and prints. Without a SESSION each works on the current session (the repo's HEAD).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from ..errors import NotASessionId, SessionArchived, SessionNotFound
from ..history.reading import list_sessions, merge_base
from ..history.tree import family, rev_or_current
from ..ids import REV_RE, check_session_id
from ..store import GitStore, ReflogEntry
from ..text import dumps, iso_time, plural
from .common import Context, short, write_lines
from .display import render

app = typer.Typer()

SESSION_HELP = "Session id (default: the current session, the one HEAD names)."


def _session(store: GitStore, given: str | None, command: str) -> str:
    """The session a SESSION argument names (the current one without it), checked as an id.

    Raises:
        NotASessionId: a revision (``work@{1}``, ``work~1``) where a session id belongs.
        InvalidSessionId: no valid id.
        NoCurrentSession: none given and ``HEAD`` names no session.
    """
    sid = rev_or_current(store, given, command)
    m = REV_RE.match(sid)
    if m and m.group("suffix"):
        raise NotASessionId(command, sid, f"try 'gs {command} {m.group('id')}' (a past state: gs show {sid})")
    return check_session_id(sid)


def _missing(store: GitStore, sid: str) -> SessionNotFound:
    """Why ``sid`` has no tip: archived (restore it), else no such session."""
    if store.archive_ref(sid) is not None:
        return SessionArchived(sid)
    return SessionNotFound(sid, store.session_ids())


# -- tree ------------------------------------------------------------------------------------


@app.command()
def tree(
    ctx: typer.Context,
    session: Annotated[str | None, typer.Argument(help=SESSION_HELP, metavar="SESSION")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="The root session as an object, children nested.")] = False,
) -> None:
    """Show the family of a session: every session sharing its history, as a tree of fork points.

    Each line: the session, the turn of its parent it left at, its first own prompt (the
    root's title), its turns, last save and tip; the current session is marked, archived
    ones too.

    Examples:
        gs tree work
        gs tree --json
    """
    c: Context = ctx.obj
    with c.store() as store:
        sid = _session(store, session, "tree")
        root = family(store, sid, list_sessions(store, redactor=c.redactor(), warnings=c.warnings))
    if as_json:
        print(dumps(root.to_json()))
    else:
        write_lines(text for text, _, _ in render.family_lines(root))


# -- reflog ----------------------------------------------------------------------------------


def _entry_row(name: str, n: int, e: ReflogEntry) -> dict[str, Any]:
    return {"rev": f"{name}@{{{n}}}", "commit": e.new, "old": e.old, "time": iso_time(e.time, e.tz_offset),
            "who": e.who, "reason": e.reason}


@app.command()
def reflog(
    ctx: typer.Context,
    session: Annotated[str | None, typer.Argument(help=SESSION_HELP, metavar="SESSION")] = None,
    n: Annotated[int | None, typer.Option("-n", "--max-count", min=1, help="Show at most N moves.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="JSON array, newest first.")] = False,
) -> None:
    """Show every move of a session's name, newest first, with its reason (git's reflog).

    Saves, forks, renames, archives and pulls each add one. Any of them can be read as
    SESSION@{N} (gs show work@{2}) and brought back as a session (gs restore work@{2});
    an archived session's reflog is kept with it.

    Examples:
        gs reflog work -n 10
        gs restore work@{1}                 # a name's earlier position, as a session
    """
    c: Context = ctx.obj
    with c.store() as store:
        sid = _session(store, session, "reflog")
        archived = store.tip(sid) is None and store.archive_ref(sid) is not None
        if not archived and store.tip(sid) is None:
            raise SessionNotFound(sid, store.session_ids())
        entries = list(reversed(store.reflog(sid, archived=archived)))[:n]
    rows = [_entry_row(sid, i, e) for i, e in enumerate(entries)]
    if as_json:
        print(dumps(rows))
        return
    lines = [f"{short(e.new) or '-------'} {r['rev']}  {render.local_time(e.time)}  {e.reason or '(no reason)'}"
             for r, e in zip(rows, entries, strict=True)]
    if archived:
        lines.insert(0, f"({sid} is archived; gs restore {sid} brings it back)")
    write_lines(lines or [f"no reflog for {sid} (a branch made by a tool that keeps none)"])


# -- status ----------------------------------------------------------------------------------


def _against(store: GitStore, tip: str, theirs: str) -> tuple[int, int] | None:
    """(saves only here, saves only there) along first parents, None when they share no history."""
    base = merge_base(store, tip, theirs)
    if base is None:
        return None
    ahead = next(i for i, ci in enumerate(store.first_parents(tip)) if ci.commit == base)
    behind = next(i for i, ci in enumerate(store.first_parents(theirs)) if ci.commit == base)
    return ahead, behind


@app.command()
def status(
    ctx: typer.Context,
    session: Annotated[str | None, typer.Argument(help=SESSION_HELP, metavar="SESSION")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One object, stable keys.")] = False,
) -> None:
    """Say which session is current and how it stands: its last save, a turn not yet saved, each remote.

    Ahead and behind count saves against the remote's tracking ref as the last sync left it
    (refs/remotes/<remote>/heads/<id>); run gs sync to bring both up to date.

    Examples:
        gs status
        gs status work --json
    """
    c: Context = ctx.obj
    with c.store() as store:
        current = store.current()
        sid = _session(store, session, "status")
        tip = store.tip(sid)
        journal = store.journal(sid).exists()
        if tip is None and not journal:
            raise _missing(store, sid)
        info = store.commit_info(tip) if tip is not None else None  # None: the first turn waits in the journal
        remotes = {name: (theirs, _against(store, tip, theirs) if tip is not None else None)
                   for name, theirs in store.tracking(sid).items()}
    row = {"session": sid, "current": sid == current, "tip": tip, "subject": info.message.subject if info else None,
           "saved": iso_time(info.time, info.tz_offset) if info else None, "journal": journal,
           "remotes": {name: {"tip": theirs, "ahead": ab[0] if ab else None, "behind": ab[1] if ab else None,
                              "shared_history": ab is not None} for name, (theirs, ab) in remotes.items()}}
    if as_json:
        print(dumps(row))
        return
    lines = [f"{'current session' if sid == current else 'session'}: {sid}"
             + ("" if sid == current else f" (the current session is {current or 'none'})"),
             f"tip: {short(tip)} {info.message.subject} ({render.local_time(info.time)})" if tip and info
             else "tip: none yet (its first turn is not saved)",
             "journal: a turn not yet saved (opening the session saves it: gs chat " + sid + ")" if journal
             else "journal: empty (every turn is saved)"]
    for name, (theirs, ab) in remotes.items():
        where = f"{name}/heads/{sid}"
        if ab is None:
            lines.append(f"{name}: no history shared with {where} ({short(theirs)})")
        elif ab == (0, 0):
            lines.append(f"{name}: up to date with {where}")
        else:
            lines.append(f"{name}: {plural(ab[0], 'save')} ahead, {ab[1]} behind {where} (gs sync {name})")
    if not remotes:
        lines.append("remotes: none track this session (gs push sends it)")
    write_lines(lines)
