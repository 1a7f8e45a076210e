"""``gs share``: publish one session to a separate git remote (see :mod:`gitsessions.store.remote.share`)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import GitSessionsError
from ..text import dumps
from .common import Context, JsonOption, err, short
from .display.render import terminal_safe

if TYPE_CHECKING:  # imported lazily: dulwich's transports cost start-up time
    from ..store import GitStore
    from ..store.remote.share import ShareOffer

app = typer.Typer()


def _offer(offer: ShareOffer, where: str, now: list[str] | None = None) -> str:
    """What leaves this machine, in a few lines (the user agrees to it before the first share).

    ``now``: the sessions it was forked from, by their names now, parent first (used when there are
    as many as the trailers name: a past revision from before a fork names fewer).
    """
    title = terminal_safe(offer.title.split("\n", 1)[0]) or "(no title)"
    turns = f"{offer.turns} turn{'s' if offer.turns != 1 else ''}"
    saves = f"{offer.saves} save{'s' if offer.saves != 1 else ''}"
    lines = [f"about to send to {where}, where nothing was shared from here before:",
             f"  session {offer.session_id} at {short(offer.commit)}: {title!r}, {turns}, {saves}, "
             f"{offer.pack_bytes:,} bytes (the git pack an empty repository receives)"]
    if offer.forked_from:
        names = now if now is not None and len(now) == len(offer.forked_from) else offer.forked_from
        lines.append("  with the history it was forked from, saves of: " + ", ".join(reversed(names)))
    return "\n".join(lines)


def _ancestors(store: GitStore, sid: str) -> list[str]:
    """The sessions ``sid`` was forked from, by their names now (as gs list names them): its parent first."""
    from ..history.tree import places

    found, out, at = places(store, store.list_sessions()), [], sid
    while (place := found.get(at)) is not None and place.parent not in out and place.parent != sid:
        out.append(place.parent)
        at = place.parent
    return out


@app.command()
def share(
    ctx: typer.Context,
    rev: Annotated[str, typer.Argument(
        help="Session id, or a past revision (work~2, work@1a2b3c4): shared as the session of that id.")],
    url: Annotated[str, typer.Argument(
        help="A git repository to publish to: an empty one (path, ssh://, https://) or a gist's git URL.")],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Send without asking (for scripts).")] = False,
    as_json: JsonOption = False,
) -> None:
    """Publish one session, with the history it was forked from, to a separate git remote.

    Nothing else of the archive is sent. Before the first share to a URL, gs says what is
    about to leave this machine (session, title, turns, bytes) and asks; later shares to
    that URL do not ask. Secrets were already replaced when the session was saved. A past
    revision becomes, on the remote, the session of its id at that commit. The receiver
    continues it with: gs clone URL DIR. A repository that already holds other sessions
    (a sync remote) gets a one-line note: only this session is added there.

    --json: {"session", "commit", "url", "sent" (false: it was there already), "others_there"
    (how many other sessions the repository held)}; what is about to leave is still asked
    on stderr first.

    Examples:
        gs share work https://gist.github.com/0123abcd.git
        gs share work~2 ssh://me@host/srv/shared.git --yes --json
    """
    from ..history.reading import read_revision
    from ..store.remote.clients import strip_password
    from ..store.remote.share import describe, remember, shared_before
    from ..store.remote.share import share as publish
    from .remote import _credentials

    c: Context = ctx.obj
    where = strip_password(url)[0]
    with c.store() as store:
        revision = read_revision(store, rev, c.redactor(), c.warnings)
        if not shared_before(store, url):
            err(_offer(describe(store, revision), where, _ancestors(store, revision.session_id)))
            if not yes:
                if not sys.stdin.isatty():
                    raise GitSessionsError(f"nothing was sent: gs share asks before the first share to {where}, "
                                           "and stdin is no terminal; add --yes to send it without asking")
                if not typer.confirm("send it?", default=False, err=True):
                    err("nothing was sent")
                    raise typer.Exit(1)
        report = publish(store, revision, url, **_credentials(c))
        for name, why in report.skipped:
            err(f"refused: {name}: {why}")
        for name, why in report.failed:
            err(f"refused: {name}: {why}")
        if report.failed or report.skipped:
            raise typer.Exit(1)
        sid = revision.session_id
        if not report.pushed and not report.unchanged and report.diverged:
            raise GitSessionsError(f"not sent: {where} has turns on {sid} that {rev} does not hold (it was "
                                   f"continued there); nothing was changed there. gs pull {where} brings them "
                                   f"here ({sid} becomes theirs, your turns a fork of it to share in turn); "
                                   f"or share yours under another name: gs fork {rev} NEW-ID, "
                                   f"then gs share NEW-ID {where}")
        behind = not report.pushed and not report.unchanged  # they hold all of it, and more: nothing to send
        tip = store.tip(sid)
        remember(store, url, sid)
    if as_json:
        print(dumps({"session": sid, "commit": revision.commit, "url": where, "sent": bool(report.pushed),
                     "others_there": report.others_there, "newer_there": behind}))
        return
    if behind:
        held = f"nothing to send: {where} already holds {sid} at {short(revision.commit)}, and newer saves of it"
        err(f"{held} (it was continued there); to bring them here: gs pull {where}" if revision.commit == tip
            else f"{held}; nothing was changed there (to share the newest save: gs share {sid} {where})")
        return
    if report.others_there:
        n = report.others_there
        err(f"note: {where} already held {n} other session{'s' if n != 1 else ''} (gs share is meant for an empty "
            f"repository or a gist); only {sid} was sent, nothing there was changed or removed")
    what = f"{sid} at {short(revision.commit)}"
    err((f"shared {what} to {where}" if report.pushed else f"{where} already has {what}")
        + f"; to continue it elsewhere: gs clone {where} DIR")
