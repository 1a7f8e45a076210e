"""Backup and sync: ``remote add|list|remove``, ``push``, ``pull``, ``sync``, ``clone``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..store import GitStore
from ..store.faults import unwritable
from ..text import dumps

if TYPE_CHECKING:  # the module itself is imported lazily: dulwich's transports cost start-up time
    from ..store.remote.reports import Credentials
from .admin import pack_in_background
from .background import run_in_background
from .common import Context, JsonOption, err, short
from .display import render
from .help import Group

app = typer.Typer()
remote_app = typer.Typer(cls=Group, no_args_is_help=True, help="""Manage the session repo's git remotes.

    Examples:
        gs remote add origin ssh://me@host/srv/sessions.git
        gs remote list
    """)
app.add_typer(remote_app, name="remote")

RemoteArg = Annotated[str | None, typer.Argument(
    help="Remote name or URL (default: sync.remote in config, else origin).")]


def _credentials(c: Context) -> Credentials:
    """How remotes are reached, for :class:`~..store.remote.Remotes`.

    HTTP credentials and the ssh command (as git: GIT_SSH_COMMAND, else GIT_SSH) from the
    environment, a password that was in the URL (:func:`_default`), the config's timeout.
    """
    return {"username": os.environ.get("GS_HTTP_USERNAME"),
            "password": c.url_password or os.environ.get("GS_HTTP_PASSWORD"),
            "ssh_command": os.environ.get("GIT_SSH_COMMAND") or os.environ.get("GIT_SSH"),
            "timeout": c.config.sync_timeout}


def _remotes(c: Context, store: GitStore):
    from ..store.remote.remotes import Remotes

    return Remotes(store, **_credentials(c), warnings=c.warnings)


def _default(c: Context, remote: str | None) -> str:
    """The remote to use (default: sync.remote in config, else origin), as every message shows it.

    A password in a URL is taken out here, once: no line gs prints shows it, and it is sent
    as the HTTP password (:func:`_credentials`).
    """
    where = remote or c.config.sync_remote or "origin"
    if "@" in where:  # only then can it hold a password (and the transports are worth importing)
        from urllib.parse import urlsplit

        from ..store.remote.clients import strip_password

        c.url_password = urlsplit(where).password or c.url_password
        where = strip_password(where)[0]
    return where


def _named(remotes, where: str) -> str:
    """How messages name ``where`` (no password: :func:`_default`): the configured remote a URL is, else the URL.

    A URL that is no configured remote has no sync base: said once.
    """
    from ..store.remote.urls import remote_named

    name = remote_named(where, remotes.list())
    if name is None:
        err(f"{where} is not a configured remote: renames and archives are not sent; "
            "add it with gs remote add NAME URL")
    return name or where


@remote_app.command("add")
def remote_add(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Remote name, e.g. origin.")],
    url: Annotated[str, typer.Argument(help="Path, file://, git://, ssh:// or http(s):// URL of a git repository.")],
) -> None:
    """Add a remote to push sessions to and pull them from.

    Examples:
        gs remote add origin ssh://me@host/srv/sessions.git
        gs remote add backup /mnt/usb/sessions.git
    """
    c: Context = ctx.obj
    with c.store() as store:
        stripped = _remotes(c, store).add(name, url)
    if stripped:
        err("the password in the URL was not saved: put it in ~/.git-credentials or GS_HTTP_PASSWORD")
    err(f"added remote {name}")


@remote_app.command("list")
def remote_list(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help='A JSON array of {"name", "url"}.')] = False,
) -> None:
    """List remotes: name and URL.

    Examples:
        gs remote list
        gs remote list --json
    """
    c: Context = ctx.obj
    with c.store() as store:
        remotes = _remotes(c, store).list()
    if as_json:
        print(dumps([{"name": name, "url": url} for name, url in remotes]))
        return
    for name, url in remotes:
        print(f"{name}\t{url}")


@remote_app.command("remove")
def remote_remove(ctx: typer.Context, name: Annotated[str, typer.Argument(help="Remote name.")]) -> None:
    """Remove a remote (its remote-tracking refs go too; nothing on the server changes).

    Examples:
        gs remote remove origin
    """
    c: Context = ctx.obj
    with c.store() as store:
        _remotes(c, store).remove(name)
    err(f"removed remote {name}")


def _strangers(skipped: list[tuple[str, str]], where: str | None = None) -> None:
    """One line for the refs that are no sessions, ``where``'s or local ones (never synced, never a stop)."""
    if skipped:
        n = len(skipped)
        refs = f"ref{'s' if n != 1 else ''}"
        refs = f"{n} {refs} of {where}" if where else f"{n} local {refs}"
        what = "are not sessions" if n != 1 else "is not a session"
        err(f"skipped {refs} that {what}: "
            + ", ".join(f"{ref} ({why})" for ref, why in skipped))


def _print_push(report, where: str, *, alone: bool = True, read_only: str | None = None) -> bool:
    """Print what a push did; ``alone`` when not after a pull (which already said what waits).

    ``read_only``: why this repo cannot be written (then no ``gs sync``, which writes here, is advised).
    """
    _strangers(report.skipped)
    if report.created_there:
        err(f"created the bare repository {report.created_there} (nothing was there)")
    for ref in report.pushed:
        err(f"pushed {ref} to {where}")
    for ref, kept in report.deleted:
        err(f"removed from {where}: {ref} (its saves are in {kept})")
    for ref, why in report.failed:
        err(f"refused: {ref}: {why}")
    if report.kept_there:
        olds = ", ".join(f"{ref} (its saves are in {kept})" for ref, kept in report.kept_there)
        names = "name" if len(report.kept_there) == 1 else "names"
        err(f"{where} refuses deletions (receive.denyDeletes), so it keeps the old {names} {olds}; keep them "
            f"there, or run git config receive.denyDeletes false on the server, then gs push {where}")
    refused = list(report.failed)
    if alone:
        for sid in report.diverged:
            why = f"not a fast-forward: {where} has other saves of {sid}; " + (
                f"gs sync {where} keeps both sides" if read_only is None else
                f"this session repo is read-only ({read_only}), so it cannot keep both sides: sync a writable copy")
            err(f"refused: refs/{sid if sid.startswith('archive/') else 'heads/' + sid}: {why}")
            refused.append((sid, why))
        for sid in report.behind:
            err(f"{where} has newer saves of {sid}: gs pull {where} brings them")
        if not (report.pushed or report.deleted or report.kept_there or refused):
            err(f"up to date with {where}")
    return _pushed_all(report, alone=alone)


def _pushed_all(report, *, alone: bool = True) -> bool:
    """Whether a push refused nothing: no ref the server refused, nor (``alone``: not after a pull) one diverged."""
    return not (report.failed or (alone and report.diverged))


def _print_pull(report, where: str) -> bool:
    """Print what a pull did (one line each); return False when something could not be synced."""
    _strangers(report.skipped, where)
    came_back, beside = dict(report.came_back), dict(report.beside)
    for sid in report.created:
        if (kept := came_back.get(sid)) == f"archive/{sid}":
            err(f"new: {sid} (it gained turns on {where} after you archived it; the archive stays)")
        elif kept:
            err(f"new: {sid} (it gained turns on {where} after you renamed it to {kept}; both are kept)")
        elif old := beside.get(sid):
            err(f"new: {sid} ({old} renamed on {where}, while {old} gained turns here: "
                f"both are kept, your turns in {old})")
        else:
            err(f"new: {sid}")
    for sid, old, new in report.fast_forwarded:
        err(f"updated: {sid} {short(old)}..{short(new)}")
    for sid, fork_id, _commit in report.forks:
        if fork_id.startswith("archive/"):
            name = fork_id.removeprefix("archive/")
            err(f"{sid}: diverged; your side is archived as {name} (restore: gs restore {name})")
        elif sid in report.made_twice:
            err(f"{sid}: made on both machines; yours is now {fork_id} (continue: gs chat {fork_id})")
        else:
            err(f"{sid}: diverged; your turns are in {fork_id} (continue: gs chat {fork_id})")
    for ref, kept in report.dropped:
        err(_dropped(ref, kept, where))
    for sid, why in report.deferred:
        err(f"{sid}: {why}")
    for sid, why in report.failed:
        err(f"not synced: {sid}: {why}")
    return not report.failed


def _dropped(ref: str, kept: str, where: str) -> str:
    """The line for a session ref removed here because the other side renamed, archived or restored it."""
    if not ref.startswith("archive/") and kept == f"archive/{ref}":
        return f"archived on {where}: {ref}"
    if not ref.startswith("archive/") and not kept.startswith("archive/"):
        return f"renamed on {where}: {ref} -> {kept}"
    if ref.startswith("archive/") and not kept.startswith("archive/"):
        name = ref.removeprefix("archive/")
        return f"restored on {where}: {name}" + (f" as {kept}" if kept != name else "")
    return f"gone from {where}: {ref} (its saves are in {kept})"


@app.command()
def push(ctx: typer.Context, remote: RemoteArg = None, as_json: JsonOption = False) -> None:
    """Send every session and archived session the remote lacks; renames and archives go too.

    --json: {"remote", "ok" (exit status 0), and what the push did: README, JSON output}.

    Examples:
        gs push
        gs push origin --json
    """
    c: Context = ctx.obj
    where = _default(c, remote)
    with c.store() as store:
        remotes = _remotes(c, store)
        report = remotes.push(where)
        where = _named(remotes, where)
        read_only = unwritable(store.path) if report.diverged else None
    if as_json:
        ok = _pushed_all(report)
        print(dumps({"remote": where, "ok": ok, **render.push_json(report)}))
    else:
        ok = _print_push(report, where, read_only=read_only)
    if not ok:
        raise typer.Exit(1)


@app.command()
def pull(ctx: typer.Context, remote: RemoteArg = None, as_json: JsonOption = False) -> None:
    """Fetch a remote and bring every session up to date; a diverged session keeps both sides.

    --json: {"remote", "ok" (exit status 0), and what the pull did: README, JSON output}.

    Examples:
        gs pull
        gs pull origin --json
    """
    c: Context = ctx.obj
    where = _default(c, remote)
    with c.store() as store:
        remotes = _remotes(c, store)
        report = remotes.pull(where)
        where = _named(remotes, where)
        pack_in_background(store)  # each fetch that brings objects adds a pack
    if as_json:
        ok = not report.failed
        print(dumps({"remote": where, "ok": ok, **render.pull_json(report)}))
    else:
        ok = _print_pull(report, where)
        if not report.changed():
            err(f"up to date with {where}")
    if not ok:
        raise typer.Exit(1)


@app.command()
def sync(
    ctx: typer.Context,
    remote: RemoteArg = None,
    watch: Annotated[bool, typer.Option(
        "--watch", help="Keep syncing: now, on every change here, every --interval seconds; Ctrl+C stops.")] = False,
    interval: Annotated[float | None, typer.Option(
        "--interval", min=0.1, metavar="SECONDS",
        help="With --watch: seconds between looks at the remote (default: 60).")] = None,
    as_json: JsonOption = False,
) -> None:
    """Pull, then push: every machine ends up with the same sessions (README, "Sync", has the rules).

    --json: {"remote", "ok" (exit status 0), "rounds", "pull", "push"} (README, JSON output).

    Examples:
        gs sync
        gs sync --json
        gs sync origin --watch              # again on every change, until Ctrl+C
    """
    c: Context = ctx.obj
    where = _default(c, remote)
    if watch or interval is not None:
        if not watch:
            raise typer.BadParameter("--interval goes with --watch")
        if as_json:
            raise typer.BadParameter("--json prints one sync's report: run gs sync --json again instead of --watch")
        from .watch import watch_sync

        return watch_sync(c, where, lambda: _sync_once(c, where, quiet=True), interval)
    _sync_once(c, where, as_json=as_json)


def _sync_once(c: Context, where: str, *, quiet: bool = False, as_json: bool = False) -> None:
    """One ``gs sync`` with ``where``; ``quiet``: a round with nothing done or to report prints nothing (--watch).

    Raises:
        typer.Exit: 1 when something was refused or failed, or the remote kept moving.
    """
    with c.store() as store:
        remotes = _remotes(c, store)
        report = remotes.sync(where)
        idle = not (report.pull.changed() or report.push.pushed or report.push.deleted or report.push.kept_there
                    or report.push.failed or report.push.moved)
        if quiet and idle:
            return
        where = _named(remotes, where)
        pack_in_background(store)  # each fetch that brings objects adds a pack
    if as_json:
        ok = not report.pull.failed and _pushed_all(report.push, alone=False) and not report.push.moved
        print(dumps({"remote": where, "ok": ok, "rounds": report.rounds, "pull": render.pull_json(report.pull),
                     "push": render.push_json(report.push)}))
        if not ok:
            raise typer.Exit(1)
        return
    ok = _print_pull(report.pull, where)
    ok = _print_push(report.push, where, alone=False) and ok
    if report.push.moved:
        err(f"{where} kept changing during the sync; run gs sync again")
        ok = False
    elif idle:
        err(f"up to date with {where}")
    if not ok:
        raise typer.Exit(1)


@app.command()
def clone(
    ctx: typer.Context,
    url: Annotated[str, typer.Argument(help="Remote holding sessions (any git URL or path).")],
    path: Annotated[Path | None, typer.Argument(
        help="Where to create the session repo (default: the configured repo).")] = None,
    as_json: JsonOption = False,
) -> None:
    """Set up a session repo on a new machine from a remote: every branch becomes a session.

    --json: {"path", "remote", and what came, as gs pull --json says it}.

    Examples:
        gs clone ssh://me@host/srv/sessions.git
        gs clone ssh://me@host/srv/sessions.git ~/sessions --json
    """
    from ..store.remote.clone import clone as clone_store

    c: Context = ctx.obj
    target = path.expanduser() if path else c.repo_path()
    where = _default(c, url)
    report = clone_store(where, target, c.identity(), **_credentials(c))
    if as_json:
        print(dumps({"path": str(target), "remote": where, **render.pull_json(report)}))
        return
    _print_pull(report, "origin")
    err(f"cloned into {target}")


def push_in_background(c: Context, store: GitStore) -> None:
    """With ``sync: {push: on-save}`` in config, start ``gs push`` detached (never waits)."""
    if c.config.sync_push == "on-save" and store.exists():
        run_in_background(store.path, "push")  # to the default remote: the same config is read there
