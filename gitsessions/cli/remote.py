"""Backup and sync: ``remote add|list|remove``, ``push``, ``pull``, ``sync``, ``clone``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..store import GitStore

if TYPE_CHECKING:  # the module itself is imported lazily: dulwich's transports cost start-up time
    from ..store.remote import Credentials
from .admin import run_in_background
from .common import Context, err, short

app = typer.Typer()
remote_app = typer.Typer(help="Manage the session repo's git remotes.", no_args_is_help=True)
app.add_typer(remote_app, name="remote")

RemoteArg = Annotated[str | None, typer.Argument(
    help="Remote name or URL (default: sync.remote in config, else origin).")]


def _credentials() -> Credentials:
    """HTTP credentials and the ssh command (as git: GIT_SSH_COMMAND, else GIT_SSH) from the environment."""
    return {"username": os.environ.get("GS_HTTP_USERNAME"), "password": os.environ.get("GS_HTTP_PASSWORD"),
            "ssh_command": os.environ.get("GIT_SSH_COMMAND") or os.environ.get("GIT_SSH")}


def _remotes(store: GitStore):
    from ..store.remote import Remotes

    return Remotes(store, **_credentials())


def _default(c: Context, remote: str | None) -> str:
    return remote or c.config.sync_remote or "origin"


@remote_app.command("add")
def remote_add(
    ctx: typer.Context,
    name: Annotated[str, typer.Argument(help="Remote name, e.g. origin.")],
    url: Annotated[str, typer.Argument(help="Path, file://, git://, ssh:// or http(s):// URL of a git repository.")],
) -> None:
    """Add a remote to push sessions to and pull them from.

    Example: gs remote add origin ssh://me@host/srv/sessions.git
    """
    c: Context = ctx.obj
    with c.store() as store:
        stripped = _remotes(store).add(name, url)
    if stripped:
        err("the password in the URL was not saved: put it in ~/.git-credentials or GS_HTTP_PASSWORD")
    err(f"added remote {name}")


@remote_app.command("list")
def remote_list(ctx: typer.Context) -> None:
    """List remotes: name and URL.

    Example: gs remote list
    """
    c: Context = ctx.obj
    with c.store() as store:
        for name, url in _remotes(store).list():
            print(f"{name}\t{url}")


@remote_app.command("remove")
def remote_remove(ctx: typer.Context, name: Annotated[str, typer.Argument(help="Remote name.")]) -> None:
    """Remove a remote (its remote-tracking refs go too; nothing on the server changes).

    Example: gs remote remove origin
    """
    c: Context = ctx.obj
    with c.store() as store:
        _remotes(store).remove(name)
    err(f"removed remote {name}")


def _print_push(report, where: str) -> bool:
    if report.skipped:
        err("not pushed, not sessions: " + ", ".join(f"{ref} ({why})" for ref, why in report.skipped))
    for ref in report.pushed:
        err(f"pushed {ref} to {where}")
    for ref, why in report.failed:
        err(f"refused: {ref}: {why}")
    if not report.pushed and not report.failed:
        err(f"{where} is up to date")
    return not report.failed


def _print_pull(report, where: str) -> None:
    for sid in report.created:
        err(f"new: {sid}")
    for sid, old, new in report.fast_forwarded:
        err(f"updated: {sid} {short(old)}..{short(new)}")
    for sid, fork_id, commit in report.forks:
        err(f"diverged: {sid} kept here; {where}'s side saved as {fork_id} ({short(commit)})")
    for sid, why in report.skipped:
        err(f"skipped: {sid}: {why}")
    if not (report.created or report.fast_forwarded or report.forks or report.skipped):
        err(f"up to date with {where}")


@app.command()
def push(ctx: typer.Context, remote: RemoteArg = None) -> None:
    """Send every session branch and archived session to a remote.

    Example: gs push origin
    """
    c: Context = ctx.obj
    where = _default(c, remote)
    with c.store() as store:
        report = _remotes(store).push(where)
    if not _print_push(report, where):
        raise typer.Exit(1)


@app.command()
def pull(ctx: typer.Context, remote: RemoteArg = None) -> None:
    """Fetch a remote and bring every session up to date; diverged sessions keep both sides.

    Example: gs pull origin
    """
    c: Context = ctx.obj
    where = _default(c, remote)
    with c.store() as store:
        report = _remotes(store).pull(where)
    _print_pull(report, where)


@app.command()
def sync(
    ctx: typer.Context,
    remote: RemoteArg = None,
    watch: Annotated[bool, typer.Option(
        "--watch", help="Keep syncing: now, on every change here, every --interval seconds; Ctrl+C stops.")] = False,
    interval: Annotated[float | None, typer.Option(
        "--interval", min=0.1, metavar="SECONDS",
        help="With --watch: seconds between looks at the remote [60]")] = None,
) -> None:
    """Pull, then push.

    Example: gs sync
    """
    c: Context = ctx.obj
    where = _default(c, remote)
    if watch or interval is not None:
        if not watch:
            raise typer.BadParameter("--interval goes with --watch")
        from .watch import watch_sync

        return watch_sync(c, where, lambda: sync(ctx, remote), interval)
    with c.store() as store:
        remotes = _remotes(store)
        _print_pull(remotes.pull(where), where)
        ok = _print_push(remotes.push(where), where)
    if not ok:
        raise typer.Exit(1)


@app.command()
def clone(
    ctx: typer.Context,
    url: Annotated[str, typer.Argument(help="Remote holding sessions (any git URL or path).")],
    path: Annotated[Path | None, typer.Argument(
        help="Where to create the session repo (default: the configured repo).")] = None,
) -> None:
    """Set up a session repo on a new machine from a remote: every branch becomes a session.

    Example: gs clone ssh://me@host/srv/sessions.git
    """
    from ..store.clone import clone as clone_store

    c: Context = ctx.obj
    target = path.expanduser() if path else c.repo_path()
    report = clone_store(url, target, c.identity(), **_credentials())
    _print_pull(report, "origin")
    err(f"cloned into {target}")


def push_in_background(c: Context, store: GitStore) -> None:
    """With ``sync: {push: on-save}`` in config, start ``gs push`` detached (never waits)."""
    if c.config.sync_push == "on-save" and store.exists():
        run_in_background(store, "push", _default(c, None))
