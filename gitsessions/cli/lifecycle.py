"""Session lifecycle: ``fork``, ``rename``, ``rm`` (archive), ``restore``, ``title``."""

from __future__ import annotations

from typing import Annotated

import typer

from ..errors import BadRevision, NotASessionId, NothingToRestore, SessionExists
from ..history.reading import read_revision
from ..ids import REV_RE, fork_name, taken_by
from ..log.transcript import title_of
from ..text import dumps
from ..writer.forking import fork as fork_session
from ..writer.opening import hold, open_session
from .common import Context, JsonOption, WaitCommand, WaitOption, err, short

app = typer.Typer()


@app.command()
def fork(
    ctx: typer.Context,
    rev: Annotated[str, typer.Argument(metavar="REV", help="Where to fork: SESSION, SESSION~N, SESSION^, "
                                       "SESSION@COMMIT or a reflog entry SESSION@{N} / SESSION@{DATE}.")],
    new: Annotated[str, typer.Argument(metavar="NEW", help="Id of the new session.")],
    as_json: JsonOption = False,
) -> None:
    """Start session NEW at revision REV (O(1): nothing is copied; the original is untouched).

    --json: {"session", "commit" (its first commit), "forked_from" ("SESSION@COMMIT")}.

    Examples:
        gs fork work~1 work-alt             # from the turn before the last
        gs fork work@3f2a9c1 idea --json
    """
    c: Context = ctx.obj
    with c.store() as store:
        target = read_revision(store, rev, c.redactor(), c.warnings)  # a date before the reflog began: warned
        commit = fork_session(store, target, new)
    if as_json:
        print(dumps({"session": new, "commit": commit, "forked_from": f"{target.session_id}@{target.commit}"}))
        return
    err(f"forked {new} from {target.session_id} at {short(target.commit)} ({short(commit)}); "
        f"continue with: gs chat {new}")


@app.command(cls=WaitCommand)
def rename(
    ctx: typer.Context,
    old: Annotated[str, typer.Argument(metavar="OLD", help="Current session id.")],
    new: Annotated[str, typer.Argument(metavar="NEW", help="New session id.")],
    wait: WaitOption = 0.0,
    as_json: JsonOption = False,
) -> None:
    """Rename a session (its branch and reflog move; its history is unchanged).

    --json: {"session", "commit" (its tip), "renamed_from"}.

    Examples:
        gs rename 3f2a9c1b yaml-parsing
    """
    c: Context = ctx.obj
    with c.store() as store, hold(store, old, wait=c.lock_wait(wait), redactor=c.redactor(), warnings=c.warnings):
        store.rename(old, new)  # a pending turn, recovered first, moves with the session
        tip = store.tip(new)
    if as_json:
        print(dumps({"session": new, "commit": tip, "renamed_from": old}))
        return
    err(f"renamed {old} to {new}")


@app.command("rm", cls=WaitCommand)
def rm(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(metavar="SESSION", help="Session id to archive.")],
    wait: WaitOption = 0.0,
    as_json: JsonOption = False,
) -> None:
    """Archive a session under refs/archive/ (nothing is deleted; 'gs restore' brings it back).

    --json: {"session", "archived_as" (the NAME gs restore takes), "commit", "current" (the
    current session now, or null)}.

    Examples:
        gs rm old-chat
        gs restore old-chat                 # brings it back
    """
    c: Context = ctx.obj
    with c.store() as store, hold(store, session, wait=c.lock_wait(wait), redactor=c.redactor(),
                                  warnings=c.warnings):  # a pending turn, recovered first, is archived with it
        was_current = store.current() == session
        name = store.archive(session)
        now = store.current()
        tip = store.archive_ref(name)
    if as_json:
        print(dumps({"session": session, "archived_as": name, "commit": tip, "current": now}))
        return
    moved = f"; the current session is now {now}" if was_current and now else ""
    err(f"archived {session} as refs/archive/{name}; restore it with: gs restore {name}{moved}")


@app.command()
def restore(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(
        metavar="NAME", help="Archived session name (see gs list --archived), or a reflog entry SESSION@{N} / "
        "SESSION@{DATE} (see gs reflog).")],
    as_id: Annotated[str | None, typer.Option("--as", metavar="ID", help="Restore under another id.")] = None,
    as_json: JsonOption = False,
) -> None:
    """Bring an archived session back, or any past position of a session's name as a session of its own.

    A reflog entry (gs reflog work, then gs restore work@{3}) becomes a fork at that commit,
    named SESSION while that name is free, else SESSION-N; nothing is moved or deleted.
    --json: {"session" (the id it has now), "commit" (its tip), "restored_from" (NAME)}.

    Examples:
        gs restore old-chat                 # archived by gs rm (gs list --archived)
        gs restore work@{1} --as before     # where work stood before its last move
    """
    c: Context = ctx.obj
    with c.store() as store:
        if "@{" in name:  # a reflog entry (also git's @{N}: the current session's)
            target = store.resolve(name)
            if target.is_tip:
                raise BadRevision(name, f"it is {target.session_id} as it stands (its tip): there is nothing to "
                                  f"restore; its past states are in 'gs reflog {target.session_id}'")
            new = as_id or (target.session_id if taken_by(store, target.session_id) is None
                            else fork_name(store, target.session_id))
            commit = fork_session(store, target, new, reason=f"restore: {name} as {new}")
            state = "its oldest recorded state" if target.note else "that state"
            if target.note:
                c.warnings.append(target.note)
            if as_json:
                print(dumps({"session": new, "commit": commit, "restored_from": name}))
            else:
                err(f"restored {name} ({short(target.commit)}, {state}) as {new}; continue with: gs chat {new}")
            return
        m = REV_RE.match(name)
        if m and m.group("suffix"):
            raise NotASessionId("restore", name, "it brings back an archived session (gs list --archived) or a "
                                f"reflog entry (SESSION@{{N}}); to start a session at {name}: gs fork {name} NEW")
        if not name:
            raise NothingToRestore(name, archived=store.archived_ids())
        try:
            sid = store.restore(name, as_id)
        except SessionExists as exc:
            if as_id is not None:
                raise
            raise SessionExists(exc.session_id, exc.existing,
                                f"restore it under another id: gs restore {name} --as NEW-ID") from None
        tip = store.tip(sid)
    if as_json:
        print(dumps({"session": sid, "commit": tip, "restored_from": name}))
        return
    err(f"restored {sid}")


@app.command(cls=WaitCommand)
def title(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(metavar="SESSION", help="Session id.")],
    text: Annotated[str, typer.Argument(metavar="TEXT", help="The new title (any Unicode).")],
    wait: WaitOption = 0.0,
    as_json: JsonOption = False,
) -> None:
    """Set a session's title (shown by gs list instead of the first prompt).

    --json: {"session", "title" (as saved: one line, redacted), "commit" (the save that set it)}.

    Examples:
        gs title work "Parsing YAML in Python"
    """
    c: Context = ctx.obj
    with c.store() as store:
        session_ = open_session(store, session, redactor=c.redactor(), warnings=c.warnings,
                                wait=c.lock_wait(wait))
        try:
            commit = session_.set_title(text)
            titled = title_of(session_.events)
        finally:
            session_.close()
    if as_json:
        print(dumps({"session": session, "title": titled, "commit": commit}))
        return
    err(f"[{session} {short(commit)}] title set")
